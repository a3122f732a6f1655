//! # surfcl-ros
//!
//! The ROS 2 node of surfcl (`surfcl-node`), on the pure-Rust `ros2-client`: it subscribes to
//! `sensor_msgs/Image`, detects and describes interest points through the surfcl backend seam,
//! matches each frame against the previous one, and publishes `surfcl_msgs/KeypointArray`,
//! `surfcl_msgs/MatchArray`, optionally a `debug_image`, and `diagnostics`.
//!
//! ## Modules
//! - [`msg`]: the message structs (CDR field order) and their ROS type names.
//! - [`convert`]: validation of incoming images and their conversion to gray, every camera
//!   encoding the node reads.
//! - [`compressed`]: `sensor_msgs/CompressedImage` (image_transport's `compressed`) decoded to
//!   gray.
//! - [`pixels`]: image messages deserialised into reused buffers or the backend's input frames.
//! - [`frames`]: the backend's input frames (pinned memory) lent to the receive thread.
//! - [`params`]: the ROS parameters, typed and validated.
//! - [`processor`]: the narrow backend seam the node uses.
//! - [`backend`]: the production seam implementation over `surfcl_gpu::backend`.
//! - [`node`]: the running node (participant, tasks, processing thread).
//! - [`args`]: the command line (clap flags and `--ros-args`).
//! - [`discovery`]: `ROS_AUTOMATIC_DISCOVERY_RANGE`, `ROS_STATIC_PEERS`, `ROS_LOCALHOST_ONLY`.
//! - [`debug`]: the debug picture.
//! - [`logging`]: `--log-level` and the `log` backend for the DDS libraries' warnings.
//! - [`sockets`]: socket receive buffers large enough for camera frames.
//! - [`wire`]: bulk CDR encoding of the node's outputs.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod args;
#[cfg(feature = "backend")]
pub mod backend;
pub mod compressed;
pub mod convert;
pub mod debug;
pub mod discovery;
pub mod frames;
pub mod logging;
pub mod msg;
pub mod node;
pub mod params;
pub mod pixels;
pub mod processor;
pub mod recycle;
pub mod sockets;
pub mod wire;
