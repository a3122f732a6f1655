//! Fuzzing entry points of surfcl. `entry` only depends on surfcl-core and surfcl-gpu so that
//! `tests/tests/robustness_regressions.rs` can include the same file (`#[path]`) and replay saved
//! inputs from a normal `cargo test`.
#![forbid(unsafe_code)]

pub mod entry;
pub mod ros;

/// The fields of the node's `surfcl_ros::msg::Image` that its conversion code reads. The node's
/// type also derives the ROS 2/CDR message traits, which need `ros2-client` (a build of minutes
/// with the sanitizers); the conversion code under test is the node's own file, below.
pub mod msg {
    /// `sensor_msgs/Image` without the header.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Image {
        /// Rows.
        pub height: u32,
        /// Columns.
        pub width: u32,
        /// Pixel encoding.
        pub encoding: String,
        /// Non-zero when 16-bit samples are big-endian.
        pub is_bigendian: u8,
        /// Bytes per row, including any padding.
        pub step: u32,
        /// `step * height` bytes.
        pub data: Vec<u8>,
    }
}

/// `ros-node/src/convert.rs` itself (validation of incoming images and colour-to-gray), built
/// against [`msg::Image`].
#[path = "../../ros-node/src/convert.rs"]
pub mod convert;
