//! How to start the node: [`NodeConfig`], topic reliability and topic name resolution.

use crate::compressed::ImageTransport;
use crate::discovery::Discovery;
use crate::logging::LogLevels;
use crate::params::NodeParams;
use crate::wire::BufferPool;

/// Reliability of a topic: the image subscription (default best effort) or the keypoints and
/// matches publishers (default reliable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopicReliability {
    /// Best effort (the ROS sensor-data profile). Image subscription: matches every camera
    /// driver; a frame that loses a fragment on the way is lost (and counted, see
    /// [`Stats::lost`](crate::node::Stats::lost)). Outputs: every subscriber matches; a message
    /// that loses a fragment is lost for that subscriber, and the writer keeps only its last 5
    /// messages, so their buffers are reused at once (RustDDS keeps a reliable writer's
    /// acknowledged messages until its cleaning pass, every 6 s: megabytes a second of fresh
    /// memory at 1080p).
    #[default]
    BestEffort,
    /// Reliable: lost fragments are repaired. A reliable reader only matches reliable writers
    /// (DDS rule: a best-effort writer and a reliable reader do not match).
    Reliable,
}

impl TopicReliability {
    /// Parses `best_effort` / `reliable` (also `best-effort`).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "best_effort" | "best-effort" | "besteffort" => Some(Self::BestEffort),
            "reliable" => Some(Self::Reliable),
            _ => None,
        }
    }
    /// The name used on the command line and in the start-up log.
    pub fn name(self) -> &'static str {
        match self {
            Self::BestEffort => "best_effort",
            Self::Reliable => "reliable",
        }
    }
}

/// Default `SO_RCVBUF` request for the DDS sockets: 64 MiB, room for a few 24 MB frames that
/// arrive faster than the DDS event loop drains them. Linux grants at most
/// `net.core.rmem_max` (times two for its bookkeeping); see `ros-node/README.md`.
pub const DEFAULT_SOCKET_RECEIVE_BUFFER: usize = 64 << 20;

/// How to start the node.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// Node base name (`__node:=`).
    pub node_name: String,
    /// Namespace, absolute (`__ns:=`).
    pub namespace: String,
    /// Topic remappings `from -> to` (`-r from:=to`); names resolve against the namespace.
    pub remaps: Vec<(String, String)>,
    /// DDS domain (`ROS_DOMAIN_ID`).
    pub domain_id: u16,
    /// History depth of the image subscription.
    pub image_qos_depth: usize,
    /// Reliability of the image subscription.
    pub image_reliability: TopicReliability,
    /// image_transport's transport of the image subscription: `sensor_msgs/Image` on the image
    /// topic, or `sensor_msgs/CompressedImage` on `<image>/compressed`.
    pub image_transport: ImageTransport,
    /// Reliability of the `keypoints`, `matches` and `debug_image` publishers (keep last 5
    /// either way).
    pub output_reliability: TopicReliability,
    /// Bytes of encoded `keypoints` buffers kept for reuse at most (`wire::BufferPool`): with
    /// reliable outputs RustDDS hands back 6 s of messages at once, which the pool keeps, so
    /// that the next 6 s encode into memory already mapped.
    pub output_buffers_bytes: usize,
    /// `SO_RCVBUF` requested for the DDS sockets, bytes (0: RustDDS's default, 8 MiB).
    pub socket_receive_buffer: usize,
    /// How peers are discovered (`ROS_AUTOMATIC_DISCOVERY_RANGE` and friends). The default
    /// here is `LOCALHOST`, so that a library user opts in to the network; `surfcl-node` reads
    /// the environment as ROS 2 does (`SUBNET` unless set, see [`crate::args`]).
    pub discovery: Discovery,
    /// Initial parameter values.
    pub params: NodeParams,
    /// Also print log lines on stderr (they always go to `/rosout`).
    pub log_to_stderr: bool,
    /// `--log-level`: the node logs messages at or above its level.
    pub log_levels: LogLevels,
    /// `use_sim_time` (declared with this value; ros2-client then stamps with `/clock`).
    pub use_sim_time: bool,
    /// Warnings from reading the configuration (unknown parameters), logged at start.
    pub warnings: Vec<String>,
    /// Open the backend while starting (so the start-up log names the device); otherwise it is
    /// opened for the first frame. Either way a backend that cannot be opened fails frames, not
    /// the node, and is tried again for the next frame.
    pub open_backend_at_start: bool,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            node_name: "surfcl_node".into(),
            namespace: "/".into(),
            remaps: Vec::new(),
            domain_id: 0,
            image_qos_depth: 2,
            image_reliability: TopicReliability::BestEffort,
            image_transport: ImageTransport::Raw,
            output_reliability: TopicReliability::Reliable,
            output_buffers_bytes: BufferPool::DEFAULT_MAX_BYTES,
            socket_receive_buffer: DEFAULT_SOCKET_RECEIVE_BUFFER,
            discovery: Discovery::localhost(""),
            params: NodeParams::default(),
            log_to_stderr: true,
            log_levels: LogLevels::default(),
            use_sim_time: false,
            warnings: Vec::new(),
            open_backend_at_start: false,
        }
    }
}

/// Resolves a topic name the way ROS does: absolute names stay, relative ones go under the
/// namespace; then a remapping whose (resolved) source equals the result replaces it.
pub fn resolve_topic(name: &str, namespace: &str, remaps: &[(String, String)]) -> String {
    let absolute = |n: &str| {
        if n.starts_with('/') {
            n.to_string()
        } else if namespace.ends_with('/') {
            format!("{namespace}{n}")
        } else {
            format!("{namespace}/{n}")
        }
    };
    let resolved = absolute(name);
    for (from, to) in remaps {
        if absolute(from) == resolved {
            return absolute(to);
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_resolution_and_remapping() {
        let none: Vec<(String, String)> = vec![];
        assert_eq!(resolve_topic("image", "/", &none), "/image");
        assert_eq!(resolve_topic("image", "/robot", &none), "/robot/image");
        assert_eq!(resolve_topic("/image", "/robot", &none), "/image");
        let r = vec![("image".to_string(), "/camera/image_raw".to_string())];
        assert_eq!(resolve_topic("image", "/robot", &r), "/camera/image_raw");
        assert_eq!(resolve_topic("keypoints", "/robot", &r), "/robot/keypoints");
        let r = vec![("/robot/image".to_string(), "cam".to_string())];
        assert_eq!(resolve_topic("image", "/robot", &r), "/robot/cam");
    }
}
