//! `surfcl-node`: ROS 2 node publishing SURF/Harris keypoints and frame-to-frame matches.
//!
//! ```text
//! surfcl-node [--name N] [--namespace NS] [--domain-id D] [--image-qos-depth K]
//!             [--remap FROM:=TO]... [--param NAME:=VALUE]... [--all-interfaces] [--quiet]
//!             [--ros-args -r image:=/camera/image_raw -r __ns:=/robot -p threshold:=0.001 --]
//! ```
//! Runs until SIGINT/SIGTERM kills it (ROS nodes have no other shutdown request).

use std::sync::Arc;

use surfcl_ros::args::{self, Parsed};
use surfcl_ros::backend::BackendFactory;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let domain_env = std::env::var("ROS_DOMAIN_ID").ok();
    let config = match args::parse(&argv, domain_env.as_deref()) {
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
    // The work happens on the processing thread and the executor; park this one. A signal
    // ends the process (the OS reclaims sockets; DDS peers notice by lease expiry).
    while !node.is_finished() {
        std::thread::park_timeout(std::time::Duration::from_secs(1));
    }
}
