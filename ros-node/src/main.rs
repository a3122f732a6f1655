//! `surfcl-node`: ROS 2 node publishing SURF/Harris keypoints and frame-to-frame matches.
//!
//! ```text
//! surfcl-node [--name N] [--namespace NS] [--domain-id D] [--image-qos-depth K]
//!             [--image-reliability best_effort|reliable] [--socket-receive-buffer BYTES]
//!             [--remap FROM:=TO]... [--param NAME:=VALUE]... [--localhost-only | --all-interfaces] [--quiet]
//!             [--ros-args -r image:=/camera/image_raw -r __ns:=/robot -p threshold:=0.001 --]
//! ```
//! Runs until SIGINT, SIGTERM or SIGHUP; then it closes its DDS readers, writers and participant
//! (peers see it leave at once) and exits with status 0.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use surfcl_ros::args::{self, Parsed};
use surfcl_ros::backend::BackendFactory;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let mut config = match args::parse(&argv, &args::RosEnv::from_process()) {
        Parsed::Run(c) => *c,
        Parsed::Exit { message, code } => {
            if code == 0 {
                print!("{message}");
            } else {
                eprint!("{message}");
                if !message.ends_with('\n') {
                    eprintln!();
                }
            }
            std::process::exit(code);
        }
    };
    // RustDDS and ros2-client log through the `log` crate: their warnings go to stderr.
    surfcl_ros::logging::install(&config.log_levels);
    // Signals are caught before any DDS entity exists, so none can end the process without
    // the goodbye.
    let (signal_tx, signal_rx) = mpsc::channel::<()>();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = signal_tx.send(());
    }) {
        eprintln!("error: cannot install the SIGINT/SIGTERM handler: {e}");
        std::process::exit(1);
    }
    config.open_backend_at_start = true;
    // The wire formats differ between distributions (Humble's GIDs): say when the build and
    // the environment disagree.
    let built = ros2_client::COMPILED_ROS_DISTRO.to_string();
    if let Ok(distro) = std::env::var("ROS_DISTRO")
        && !distro.eq_ignore_ascii_case(&built)
    {
        eprintln!(
            "surfcl-node: warning: built for ROS 2 {built} but ROS_DISTRO is {distro:?}; \
             rebuild with --features {} (see ros-node/README.md)",
            distro.to_ascii_lowercase()
        );
    }
    let quiet = !config.log_to_stderr;
    let node = match surfcl_ros::node::start(config, Arc::new(BackendFactory)) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    if !quiet {
        eprintln!("surfcl-node: {} running", node.fully_qualified_name());
    }
    // The work happens on the node's threads and the executor; this one waits for a signal.
    let code = loop {
        match signal_rx.recv_timeout(Duration::from_secs(1)) {
            Ok(()) => break 0,
            Err(RecvTimeoutError::Timeout) if node.is_finished() => {
                eprintln!("surfcl-node: a node thread ended unexpectedly");
                break 1;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break 1,
        }
    };
    if !quiet {
        eprintln!(
            "surfcl-node: {} shutting down (readers, writers and participant disposed)",
            node.fully_qualified_name()
        );
    }
    // A second signal while closing ends the process at once.
    std::thread::spawn(move || {
        if signal_rx.recv().is_ok() {
            std::process::exit(130);
        }
    });
    node.stop();
    std::process::exit(code);
}
