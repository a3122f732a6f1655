//! The running node: participant, receive thread, processing thread, publishers, diagnostics.
//! Its steps are the submodules: [`entities`] (participant, topics, readers and writers),
//! [`parameters`] (declarations, validation), `receive`, `process`, `publish` and
//! `diagnostics`.
//!
//! ```text
//! image (best effort or reliable, keep last N)
//!   └─► receive thread: take + deserialise (timed; the pixels converted straight into a free
//!         │ input frame of the backend when one fits, see `frames`), sequence gaps counted as
//!         │ lost, validate (malformed: log, count, drop)
//!         ▼
//!       newest-frame slot (a bounded channel of one: a newer frame replaces the waiting one,
//!         │                 which is counted as dropped)
//!         ▼
//!   processing thread: detect the input frame, or view (mono8) / convert the message's pixels
//!   ─► Processor::detect ─► match against the previous frame ─► build messages ─► publish
//!   keypoints, matches (and debug_image) ─► refill the input frames
//! diagnostics task: once a second, DiagnosticArray with rate, per-stage times, drops, losses
//! ```
//! Receiving never waits for processing: the receive thread only deserialises, checks and hands
//! the frame over, so the DDS reader's history never fills up while a frame is being processed.
//! The slot holds one frame: a slow backend never works on a stale image and memory stays
//! bounded whatever the camera rate.
//!
//! On the OpenCL backend a frame is copied once on the host: from the message's serialized bytes
//! into pinned memory (an input frame, or for a frame that found none free, the detector's input
//! area). On the CPU backend a `mono8` message without row padding is handed to the backend as
//! it arrived; other encodings and padded rows are converted once into a reused gray buffer.

mod diagnostics;
pub mod entities;
mod graph;
pub mod parameters;
mod process;
mod publish;
mod receive;
mod stats;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use ros2_client::ros2::LogLevel;
use ros2_client::{Node, NodeLoggingHandle, NodeName, Subscription, rosout};

pub use crate::compressed::ImageTransport;
use crate::discovery::Discovery;
use crate::frames::InputFrames;
use crate::logging::LogLevels;
use crate::params::NodeParams;
use crate::pixels::{PixelBuffers, Received};
use crate::processor::{Processor, ProcessorFactory};
use crate::wire::BufferPool;

pub use entities::effective_receive_buffer;
use receive::Slot;
pub use stats::{StageTimes, Stats};

/// Errors while starting the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A node or topic name is not a valid ROS name.
    #[error("invalid name {name:?}: {reason}")]
    Name {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The DDS participant or a ROS entity could not be created.
    #[error("ROS 2: {0}")]
    Ros(String),
    /// A thread could not be started.
    #[error("cannot start a node thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// Reliability of a topic: the image subscription (default best effort) or the keypoints and
/// matches publishers (default reliable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopicReliability {
    /// Best effort (the ROS sensor-data profile). Image subscription: matches every camera
    /// driver; a frame that loses a fragment on the way is lost (and counted, see
    /// [`Stats::lost`]). Outputs: every subscriber matches; a message that loses a fragment is
    /// lost for that subscriber, and the writer keeps only its last 5 messages, so their
    /// buffers are reused at once (RustDDS keeps a reliable writer's acknowledged messages
    /// until its cleaning pass, every 6 s: megabytes a second of fresh memory at 1080p).
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

/// Logs to `/rosout` and (optionally) stderr.
struct Logger {
    handle: NodeLoggingHandle,
    name: String,
    stderr: bool,
    /// Messages below it are not logged (`--log-level`).
    level: LogLevel,
}

impl Logger {
    fn new(node: &Node, config: &NodeConfig) -> Self {
        Self {
            handle: node.logging_handle(),
            name: config.node_name.clone(),
            stderr: config.log_to_stderr,
            level: config.log_levels.level_of(&config.node_name),
        }
    }
    fn log(&self, level: LogLevel, text: &str) {
        if level < self.level {
            return;
        }
        if self.stderr {
            eprintln!("[{level:?}] [{}]: {text}", self.name);
        }
        rosout!(self.handle, level, "{}", text);
    }
}

/// What the node's threads and tasks share.
struct Shared {
    slot: Mutex<Slot>,
    /// Pixel buffers of finished frames, reused by the receive thread.
    pixels: PixelBuffers,
    /// The backend's input frames: made by the processing thread, filled by the receive thread.
    frames: InputFrames,
    ready: Condvar,
    stop: AtomicBool,
    stats: Mutex<Stats>,
    params: Mutex<NodeParams>,
    /// A processor opened while validating a `backend`/`device` change (or at start), handed to
    /// the thread.
    staged: Mutex<Option<(NodeParams, Box<dyn Processor>)>>,
    /// Which outputs have subscribers (`graph`'s bits), for `lazy`.
    subscribed: AtomicU8,
}

impl Shared {
    fn new(params: &NodeParams) -> Self {
        Self {
            pixels: PixelBuffers::default(),
            frames: InputFrames::default(),
            slot: Mutex::new(Slot::default()),
            ready: Condvar::new(),
            stop: AtomicBool::new(false),
            stats: Mutex::new(Stats::default()),
            params: Mutex::new(params.clone()),
            staged: Mutex::new(None),
            subscribed: AtomicU8::new(0),
        }
    }
}

/// Locks, recovering the data if another thread panicked while holding the lock (the counters
/// and parameters stay meaningful; refusing to go on would take the whole node down).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long [`RunningNode::stop`] gives DDS discovery to announce that the node's readers and
/// writers are gone before the participant itself is closed.
const DISPOSE_GRACE: Duration = Duration::from_millis(200);

/// A started node. Dropping it (or [`RunningNode::stop`]) stops the tasks and the threads and
/// closes the DDS entities, so that peers see the node's readers and writers disappear at once.
pub struct RunningNode {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
    receiver: Option<JoinHandle<()>>,
    tasks: Vec<smol::Task<()>>,
    node: Option<Node>,
    fqn: String,
}

impl RunningNode {
    /// The node's fully qualified name (`/ns/name`).
    pub fn fully_qualified_name(&self) -> &str {
        &self.fqn
    }
    /// A copy of the counters.
    pub fn stats(&self) -> Stats {
        lock(&self.shared.stats).clone()
    }
    /// The parameters the next frame will use.
    pub fn params(&self) -> NodeParams {
        lock(&self.shared.params).clone()
    }
    /// Whether a node thread has ended (they only do when stopped).
    pub fn is_finished(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_finished())
            || self.receiver.as_ref().is_none_or(|r| r.is_finished())
    }
    /// Stops the node: ends the threads and tasks (which drops the image reader and the
    /// output writers, so DDS discovery announces them gone), waits `DISPOSE_GRACE` for those
    /// announcements to go out, then closes the node and its DDS participant (which announces
    /// the participant gone).
    pub fn stop(mut self) {
        self.shutdown();
    }
    fn shutdown(&mut self) {
        if self.node.is_none() {
            return;
        }
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.ready.notify_all();
        for handle in [self.receiver.take(), self.worker.take()]
            .into_iter()
            .flatten()
        {
            let _ = handle.join();
        }
        for task in self.tasks.drain(..) {
            // Waits until the task's future is dropped (with the DDS entities it owns).
            let _ = smol::block_on(task.cancel());
        }
        std::thread::sleep(DISPOSE_GRACE);
        self.node.take();
    }
}

impl Drop for RunningNode {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn ros_err(e: impl std::fmt::Debug) -> NodeError {
    NodeError::Ros(format!("{e:?}"))
}

fn node_name(config: &NodeConfig) -> Result<NodeName, NodeError> {
    NodeName::new(&config.namespace, &config.node_name).map_err(|e| NodeError::Name {
        name: format!("{}/{}", config.namespace, config.node_name),
        reason: format!("{e:?}"),
    })
}

/// The start-up log: topics, network, socket buffers, and the configuration's warnings.
fn log_start(
    log: &Logger,
    config: &NodeConfig,
    fqn: &str,
    names: &entities::TopicNames,
    forced: Option<&crate::sockets::ForceOutcome>,
) {
    for line in entities::start_up_lines(config, fqn, names, forced) {
        log.log(LogLevel::Info, &line);
    }
    for warning in &config.warnings {
        log.log(LogLevel::Warn, warning);
    }
    if !config.discovery.static_peers.is_empty() {
        log.log(
            LogLevel::Warn,
            &format!(
                "ROS_STATIC_PEERS {:?} are not contacted: RustDDS has no initial-peers setting, \
                 so peers there are found only within the discovery range",
                config.discovery.static_peers
            ),
        );
    }
}

/// Starts the receive and processing threads.
fn spawn_threads(
    shared: &Arc<Shared>,
    config: &NodeConfig,
    node: &Node,
    subscription: Subscription<Received>,
    outputs: entities::Outputs,
    factory: Arc<dyn ProcessorFactory>,
    log: Logger,
) -> Result<(JoinHandle<()>, JoinHandle<()>), NodeError> {
    let (r_shared, r_log) = (Arc::clone(shared), Logger::new(node, config));
    let transport = config.image_transport;
    let receiver = std::thread::Builder::new()
        .name("surfcl-receive".into())
        .spawn(move || receive::receive_loop(&r_shared, &subscription, transport, &r_log))?;
    let w_shared = Arc::clone(shared);
    let worker = std::thread::Builder::new()
        .name("surfcl-process".into())
        .spawn(move || process::process_loop(&w_shared, &*factory, &outputs, &log));
    match worker {
        Ok(w) => Ok((receiver, w)),
        Err(e) => {
            shared.stop.store(true, Ordering::SeqCst);
            let _ = receiver.join();
            Err(e.into())
        }
    }
}

/// Starts the node: creates the participant (on the networks of [`NodeConfig::discovery`]), the
/// node with its parameters and parameter services, the subscription,
/// publishers, the receive and processing threads and the diagnostics task, and logs what it
/// listens and publishes on. Returns when everything is running.
pub fn start(
    config: NodeConfig,
    factory: Arc<dyn ProcessorFactory>,
) -> Result<RunningNode, NodeError> {
    factory.check(&config.params).map_err(|e| NodeError::Name {
        name: "parameters".into(),
        reason: e.to_string(),
    })?;
    let node_name = node_name(&config)?;
    let (context, forced) = entities::participant(&config)?;
    let shared = Arc::new(Shared::new(&config.params));
    let options = parameters::node_options(&config, &shared, &factory);
    let mut node = context
        .new_node(node_name.clone(), options)
        .map_err(ros_err)?;
    let fqn = node.fully_qualified_name();
    let spinner = node.spinner().map_err(ros_err)?;
    let mut tasks = vec![smol::spawn(async move {
        // The spinner serves the parameter services and discovery; it ends with the node.
        let _ = spinner.spin().await;
    })];
    let entities = entities::create(&context, &mut node, &node_name, &config)?;
    let log = Logger::new(&node, &config);
    log_start(&log, &config, &fqn, &entities.names, forced.as_ref());
    log.log(
        LogLevel::Info,
        &process::open_at_start(&config, &*factory, &shared),
    );
    let names = &entities.names;
    let outputs =
        graph::OutputTopics::from_resolved(&names.keypoints, &names.matches, &names.debug_image);
    tasks.push(graph::spawn(Arc::clone(&shared), &context, &node, outputs));
    tasks.push(diagnostics::spawn(
        Arc::clone(&shared),
        fqn.clone(),
        entities.diagnostics,
    ));
    let (receiver, worker) = spawn_threads(
        &shared,
        &config,
        &node,
        entities.image,
        entities.outputs,
        factory,
        log,
    )?;
    Ok(RunningNode {
        shared,
        worker: Some(worker),
        receiver: Some(receiver),
        tasks,
        node: Some(node),
        fqn,
    })
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
