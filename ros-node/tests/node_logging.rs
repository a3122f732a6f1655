//! The node's `log` backend, in process (run in a private network namespace, see
//! `ros-node/README.md`): a warning of a library (RustDDS, on a datagram that is no RTPS
//! message) reaches `/rosout` as an `rcl_interfaces/Log` with its level and the library's
//! logger name, once per call site and interval however often it repeats (so that a warning
//! provoked by publishing to `/rosout` cannot loop). Its own test binary: the backend is
//! installed once per process.

mod common;
mod rosout;

use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

use common::*;
use ros2_client::log::Log;
use rosout::Rosout;
use surfcl_ros::logging::{self, LogLevels};

const DOMAIN: u16 = 181;

/// The RTPS metatraffic unicast port of participant `id` on `domain` (PB + DG * domain + d1 +
/// PG * id, the specification's defaults).
fn metatraffic_unicast_port(domain: u16, id: u16) -> u16 {
    7400 + 250 * domain + 10 + 2 * id
}

#[test]
fn a_library_warning_reaches_rosout_with_its_level_and_name_once() {
    assert!(logging::install(&LogLevels::default()), "backend installed");
    let node = start_node(DOMAIN, factory(), |c| {
        c.node_name = "surfcl_logging".into();
        c.params = test_params();
    });
    let rosout = Rosout::new(DOMAIN);
    // Give the reader time to match the node's /rosout writer (volatile: earlier records are
    // not replayed).
    std::thread::sleep(Duration::from_secs(2));
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a UDP socket");
    let not_rtps = b"SURFCL-TEST: this datagram is not an RTPS message";
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = "unknown start of header";
    while rosout.containing(text).is_empty() && Instant::now() < deadline {
        // Every participant of the process (the node's and the reader's) on its first ids.
        for id in 0..4 {
            let port = metatraffic_unicast_port(DOMAIN, id);
            let _ = socket.send_to(not_rtps, (Ipv4Addr::LOCALHOST, port));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // More of the same warning while it is still within the backend's repeat interval.
    std::thread::sleep(Duration::from_secs(1));
    let records: Vec<Log> = rosout.containing(text);
    node.stop();
    assert_eq!(
        records.len(),
        1,
        "one record per call site and interval: {records:?}"
    );
    let record = &records[0];
    assert_eq!(record.level, Log::WARN, "{record:?}");
    assert_eq!(record.name, "rustdds.rtps.message_receiver", "{record:?}");
    assert!(record.file.ends_with("message_receiver.rs"), "{record:?}");
    assert!(record.line > 0, "{record:?}");
}
