//! DDS transport alone, `#[ignore]`d (run in release, in a private network namespace):
//! `cargo test -p surfcl-ros --release --test dds_transport -- --ignored --nocapture`
//!
//! `transport`: two participants in this process on loopback, as in `soak_latency` but without
//! the node and its backend (whose matching, on the CPU backend, runs while the next frame is in
//! flight and competes for the cores): a best-effort `Image` publisher and an `Image`
//! subscription (the node's). Each round publishes one frame and waits until the subscriber has
//! taken it, deserialised. The subscriber's topic has the node's image-topic resource limit
//! (`SURFCL_TRANSPORT_LIMIT=0`: without, RustDDS then keeps 64 samples).
//! `SURFCL_TRANSPORT_SIZES` (comma-separated WxH mono8 frames, default
//! `640x480,1920x1080,4000x3000`) and `SURFCL_TRANSPORT_FRAMES` (default 100) choose the work;
//! prints p50 / p99 / mean in ms per size.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ros2_client::dds::rustdds::{QosPolicies, QosPolicyBuilder, TopicKind, policy};
use ros2_client::qos::History;
use ros2_client::{Context, Name, NodeName, NodeOptions, QosProfile};
use surfcl_ros::msg::{self, Image};

/// A loopback participant whose sockets get the node's receive buffer (as the node does it).
fn participant(domain: u16) -> Context {
    let bytes = surfcl_ros::node::NodeConfig::default().socket_receive_buffer;
    let before = surfcl_ros::sockets::socket_fds();
    let dp = ros2_client::dds::rustdds::DomainParticipantBuilder::new(domain)
        .with_only_networks([std::net::Ipv4Addr::LOCALHOST])
        .socket_receive_buffer_size(bytes)
        .build()
        .unwrap();
    let new = surfcl_ros::sockets::socket_fds()
        .difference(&before)
        .copied()
        .collect();
    surfcl_ros::sockets::force_receive_buffers(&new, bytes);
    Context::from_domain_participant(dp).unwrap()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[test]
#[ignore]
fn transport() {
    let sizes = std::env::var("SURFCL_TRANSPORT_SIZES")
        .unwrap_or_else(|_| "640x480,1920x1080,4000x3000".into());
    let frames: usize = std::env::var("SURFCL_TRANSPORT_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let domain = 171;
    let qos = QosProfile::subscription_default().history(History::KeepLast { depth: 5 });
    let (a, b) = (participant(domain), participant(domain));
    let opts = || {
        NodeOptions::new()
            .enable_rosout(false)
            .start_parameter_services(false)
    };
    let mut na = a
        .new_node(NodeName::new("/", "transport_pub").unwrap(), opts())
        .unwrap();
    let mut nb = b
        .new_node(NodeName::new("/", "transport_sub").unwrap(), opts())
        .unwrap();
    smol::spawn(na.spinner().unwrap().spin()).detach();
    smol::spawn(nb.spinner().unwrap().spin()).detach();
    let name = Name::parse("/transport_image").unwrap();
    let ta = na.create_topic(&name, msg::image_type(), &qos).unwrap();
    // The subscriber's topic as the node makes its image topic: a sample limit of the history
    // depth (the topic cache otherwise keeps 64 frames). `SURFCL_TRANSPORT_LIMIT=0`: without.
    let tb = if std::env::var("SURFCL_TRANSPORT_LIMIT").as_deref() == Ok("0") {
        nb.create_topic(&name, msg::image_type(), &qos).unwrap()
    } else {
        let limits = QosPolicyBuilder::new()
            .resource_limits(policy::ResourceLimits {
                max_samples: 5,
                max_instances: 1,
                max_samples_per_instance: 5,
            })
            .build();
        b.domain_participant()
            .create_topic(
                "rt/transport_image".into(),
                msg::image_type().dds_msg_type(),
                &QosPolicies::from(&qos).modify_by(&limits),
                TopicKind::NoKey,
            )
            .unwrap()
    };
    let publisher = na.create_publisher::<Image>(&ta, None).unwrap();
    let subscription = nb.create_subscription::<Image>(&tb, None).unwrap();
    let boat = read_pgm(&data("oxford-boat/img1.pgm"));
    // Discovery: until a small frame goes through.
    let small = mono8(&resize_tile(&boat, 64, 48), header(0, "cam"));
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        publisher.publish(small.clone()).unwrap();
        if within(Duration::from_millis(200), subscription.next_message()).is_some() {
            break;
        }
        assert!(Instant::now() < until, "the subscriber never matched");
    }
    for size in sizes.split(',') {
        let (w, h) = size.split_once('x').expect("WxH");
        let (w, h): (usize, usize) = (w.parse().unwrap(), h.parse().unwrap());
        let img = mono8(&resize_tile(&boat, w, h), header(0, "cam"));
        let mut lat = Vec::new();
        let mut lost = 0;
        for i in 0..frames + 10 {
            let mut m = img.clone();
            m.header = header(1 + i as i32, "cam");
            let t0 = Instant::now();
            publisher.publish(m).unwrap();
            let got = within(Duration::from_secs(2), async {
                loop {
                    match subscription.next_message().await {
                        Ok(m) if m.header.stamp == header(1 + i as i32, "cam").stamp => break m,
                        Ok(_) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            });
            let dt = t0.elapsed().as_secs_f64() * 1e3;
            match got {
                Some(m) => {
                    assert_eq!(m.data.len(), w * h);
                    if i >= 10 {
                        lat.push(dt);
                    }
                }
                None => lost += 1,
            }
        }
        lat.sort_by(f64::total_cmp);
        let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
        println!(
            "transport {w}x{h} mono8 ({} bytes): n={} p50={:.3} ms p99={:.3} ms mean={mean:.3} ms lost={lost}",
            w * h,
            lat.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.99)
        );
    }
}
