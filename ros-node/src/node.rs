//! The running node: participant, receive thread, processing thread, publishers, diagnostics.
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

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ros2_client::dds::rustdds::{
    DomainParticipantBuilder, QosPolicies, QosPolicyBuilder, Timestamp, TopicKind, no_key, policy,
};
use ros2_client::gid::Gid;
use ros2_client::qos::{History, WhenFull};
use ros2_client::ros2::LogLevel;
use ros2_client::{
    Context, Message, MessageInfo, Name, Node, NodeLoggingHandle, NodeName, NodeOptions, Publisher,
    QosProfile, Subscription, rosout,
};
use serde::de::{DeserializeSeed, Deserializer};
use smol::stream::StreamExt;
use surfcl_core::GrayImage;

use crate::convert::{self, Layout};
use crate::frames::{InputFrames, PooledFrame};
use crate::msg::{self, Header, Image, MatchArray};
use crate::params::NodeParams;
use crate::pixels::{PixelBuffers, ReceiveSeed, Received};
use crate::processor::{Detection, InputFrame, Processor, ProcessorError, ProcessorFactory};
use crate::wire::{BufferPool, BulkCdr, Encoded, encode_detection};

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
    /// Reliability of the `keypoints`, `matches` and `debug_image` publishers (keep last 5
    /// either way).
    pub output_reliability: TopicReliability,
    /// Bytes of encoded `keypoints` buffers kept for reuse at most (`wire::BufferPool`): with
    /// reliable outputs RustDDS hands back 6 s of messages at once, which the pool keeps, so
    /// that the next 6 s encode into memory already mapped.
    pub output_buffers_bytes: usize,
    /// `SO_RCVBUF` requested for the DDS sockets, bytes (0: RustDDS's default, 8 MiB).
    pub socket_receive_buffer: usize,
    /// Announce on every interface instead of loopback only.
    pub all_interfaces: bool,
    /// Initial parameter values.
    pub params: NodeParams,
    /// Also print log lines on stderr (they always go to `/rosout`).
    pub log_to_stderr: bool,
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
            output_reliability: TopicReliability::Reliable,
            output_buffers_bytes: BufferPool::DEFAULT_MAX_BYTES,
            socket_receive_buffer: DEFAULT_SOCKET_RECEIVE_BUFFER,
            all_interfaces: false,
            params: NodeParams::default(),
            log_to_stderr: true,
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

/// Where the time of one frame went, in milliseconds.
///
/// `transport_ms` runs on the publisher's clock from its `publish` call (its serialisation
/// included) to the moment the receive thread holds the deserialised message; it is only
/// meaningful when publisher and node share a clock (same machine). The other stages are the
/// node's own: `receive_convert` (the conversion into an input frame on receipt, part of
/// `deserialise`), `queue` (waiting in the slot), `convert` (view or colour conversion), `detect`
/// (the backend: upload, kernels, readback; `upload`, `kernels` and `readback` split it when the
/// backend reports them), `match`, `build` (the output messages) and `publish` (serialising and
/// handing keypoints and matches to DDS). `node_ms` is taken message to published outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageTimes {
    /// Publisher's `publish` to message taken (serialise, send, reassemble, deserialise).
    pub transport_ms: f64,
    /// Deserialising the image message (part of `transport_ms`).
    pub deserialise_ms: f64,
    /// Colour conversion or row compaction straight from the message's serialized bytes into
    /// one of the backend's input frames, on the receive thread (part of `deserialise_ms`; 0
    /// for a frame that found no free input frame, whose conversion is `convert_ms`).
    pub receive_convert_ms: f64,
    /// Waiting in the newest-frame slot for the processing thread.
    pub queue_ms: f64,
    /// Colour conversion or row compaction on the processing thread: into the backend's input
    /// area when it has one (then `mono8` is copied too), otherwise into the node's memory (near
    /// zero for tightly packed `mono8`, which is not copied). 0 for a frame converted into an
    /// input frame on receipt (`receive_convert_ms`).
    pub convert_ms: f64,
    /// The backend's detect call.
    pub detect_ms: f64,
    /// Upload part of `detect_ms` as the backend timed it (0 when it reports none).
    pub upload_ms: f64,
    /// Kernel part of `detect_ms` as the backend timed it (CPU: its stages).
    pub kernels_ms: f64,
    /// Readback part of `detect_ms` as the backend timed it.
    pub readback_ms: f64,
    /// Matching against the previous frame.
    pub match_ms: f64,
    /// Building the output messages.
    pub build_ms: f64,
    /// Serialising and handing the outputs to DDS.
    pub publish_ms: f64,
    /// Message taken to keypoints handed to DDS (queue + convert + detect + their build and
    /// publish): the node's share of a frame's keypoint latency, since keypoints are published
    /// before matching.
    pub keypoints_out_ms: f64,
    /// Message taken to outputs published (queue + convert + detect + match + build + publish).
    pub node_ms: f64,
}

impl StageTimes {
    /// `(name, value)` of every stage, in pipeline order (the diagnostics keys are
    /// `stage_<name>_ms_mean` / `_max`).
    pub fn named(&self) -> [(&'static str, f64); 14] {
        [
            ("transport", self.transport_ms),
            ("deserialise", self.deserialise_ms),
            ("receive_convert", self.receive_convert_ms),
            ("queue", self.queue_ms),
            ("convert", self.convert_ms),
            ("detect", self.detect_ms),
            ("upload", self.upload_ms),
            ("kernels", self.kernels_ms),
            ("readback", self.readback_ms),
            ("match", self.match_ms),
            ("build", self.build_ms),
            ("publish", self.publish_ms),
            ("keypoints_out", self.keypoints_out_ms),
            ("node", self.node_ms),
        ]
    }
}

/// Counters of the node, as the diagnostics report them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Image messages received (valid or not).
    pub received: u64,
    /// Valid frames converted straight into one of the backend's input frames on receipt (the
    /// others went through the node's memory).
    pub received_into_frames: u64,
    /// Messages dropped by validation.
    pub malformed: u64,
    /// Valid frames replaced in the slot before they were processed.
    pub dropped_stale: u64,
    /// Image messages that never reached the node: gaps in a publisher's sequence numbers
    /// (lost on the way, e.g. a fragment of a large best-effort frame dropped by a full socket
    /// buffer, or replaced in the DDS history before they were taken).
    pub lost: u64,
    /// Frames processed and published.
    pub processed: u64,
    /// Frames whose processing failed in the backend (nothing was published for them).
    pub failed: u64,
    /// Why the last failed frame failed, naming the frame (empty while none has failed).
    pub last_error: String,
    /// Keypoints of the last processed frame.
    pub last_keypoints: usize,
    /// Matches of the last processed frame.
    pub last_matches: usize,
    /// Processing time of the last frame (ms).
    pub last_processing_ms: f64,
    /// Stage times of the last processed frame.
    pub last_stages: StageTimes,
    /// The backend in use.
    pub backend: String,
    /// `keypoints` messages encoded into a new buffer (fresh memory: a page fault per 4 KiB),
    /// none being free in the pool.
    pub output_buffers_new: u64,
    /// Buffers made and mapped ahead between frames, none of the size being free.
    pub output_buffers_prepared: u64,
    /// Bytes of buffers waiting in the pool after the last frame.
    pub output_buffers_kept_bytes: usize,
    /// Processing times since the last diagnostics report (ms).
    window: Vec<f64>,
    /// Stage times since the last diagnostics report.
    stage_window: Vec<StageTimes>,
}

/// Logs to `/rosout` and (optionally) stderr.
struct Logger {
    handle: NodeLoggingHandle,
    name: String,
    stderr: bool,
}

impl Logger {
    fn log(&self, level: LogLevel, text: &str) {
        if self.stderr {
            eprintln!("[{level:?}] [{}]: {text}", self.name);
        }
        rosout!(self.handle, level, "{}", text);
    }
}

/// When and how a frame arrived.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    taken: Instant,
    transport_ms: f64,
    deserialise_ms: f64,
    receive_convert_ms: f64,
}

/// A validated frame waiting for the processing thread. Dropped (processed, or replaced in the
/// slot), it gives its pixel buffer back for the next image to be received into, and its input
/// frame back to the pool.
struct Frame {
    /// The message; without `data` when the pixels are in `gray`.
    image: Image,
    layout: Layout,
    arrival: Arrival,
    pixels: PixelBuffers,
    /// The gray pixels in one of the backend's input frames, converted on receipt.
    gray: Option<PooledFrame>,
}

impl Drop for Frame {
    fn drop(&mut self) {
        self.pixels.give(std::mem::take(&mut self.image.data));
    }
}

/// The newest valid frame waiting for the processing thread.
struct Slot {
    frame: Option<Frame>,
}

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

/// The image topic (as `Node::create_topic` makes it) with a sample limit of `depth`: RustDDS
/// keeps up to `ResourceLimits::max_samples` samples of a topic in its cache, 64 when the QoS
/// has none, whatever the history depth. At 2-12 MB a frame that is 128-768 MB held, and each
/// frame is reassembled into memory that was not touched before (a page fault per 4 KiB: most of
/// the reader's time for a large frame). With the limit the cache holds what the history keeps.
fn image_topic(
    context: &Context,
    node_name: &NodeName,
    name: &Name,
    qos: &QosProfile,
    depth: usize,
) -> Result<ros2_client::dds::rustdds::Topic, NodeError> {
    let samples = i32::try_from(depth).unwrap_or(i32::MAX);
    let limits = QosPolicyBuilder::new()
        .resource_limits(policy::ResourceLimits {
            max_samples: samples,
            max_instances: 1,
            max_samples_per_instance: samples,
        })
        .build();
    let policies = QosPolicies::from(qos).modify_by(&limits);
    context
        .domain_participant()
        .create_topic(
            name.to_dds_name("rt", node_name, ""),
            msg::image_type().dds_msg_type(),
            &policies,
            TopicKind::NoKey,
        )
        .map_err(ros_err)
}

fn topic_name(resolved: &str) -> Result<Name, NodeError> {
    Name::parse(resolved).map_err(|e| NodeError::Name {
        name: resolved.to_string(),
        reason: format!("{e:?}"),
    })
}

fn create_publisher<M: Message>(
    node: &mut Node,
    config: &NodeConfig,
    name: &str,
    ty: ros2_client::MessageTypeName,
    qos: &QosProfile,
) -> Result<(Publisher<M>, String), NodeError> {
    let resolved = resolve_topic(name, &config.namespace, &config.remaps);
    let topic = node
        .create_topic(&topic_name(&resolved)?, ty, qos)
        .map_err(ros_err)?;
    Ok((
        node.create_publisher::<M>(&topic, None).map_err(ros_err)?,
        resolved,
    ))
}

/// A writer of `M` whose messages are encoded by [`BulkCdr`].
type BulkWriter<M> = no_key::DataWriter<M, BulkCdr>;

struct Outputs {
    /// `KeypointArray`s, encoded by the node (`wire::encode_detection`).
    keypoints: BulkWriter<Encoded>,
    /// The buffers they are encoded into, back from DDS when it drops them.
    buffers: BufferPool,
    matches: BulkWriter<MatchArray>,
    debug: Publisher<Image>,
    /// The DDS publisher of the bulk writers (kept with them).
    _dds_publisher: ros2_client::dds::rustdds::Publisher,
}

/// Creates a `BulkCdr` writer for `name` (resolved like the others), reliable keep-last as `qos`.
fn create_bulk_writer<M>(
    node: &mut Node,
    dds_publisher: &ros2_client::dds::rustdds::Publisher,
    config: &NodeConfig,
    name: &str,
    ty: ros2_client::MessageTypeName,
    qos: &QosProfile,
) -> Result<(BulkWriter<M>, String), NodeError>
where
    BulkCdr: no_key::SerializerAdapter<M>,
{
    let resolved = resolve_topic(name, &config.namespace, &config.remaps);
    let topic = node
        .create_topic(&topic_name(&resolved)?, ty, qos)
        .map_err(ros_err)?;
    let writer = dds_publisher
        .create_datawriter_no_key::<M, BulkCdr>(&topic, None)
        .map_err(ros_err)?;
    Ok((writer, resolved))
}

/// The kernel's cap on socket receive buffers (`net.core.rmem_max`), when readable.
fn kernel_rmem_max() -> Option<usize> {
    std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// The receive buffer Linux grants for a request of `requested` bytes: twice the request, capped
/// at twice `net.core.rmem_max`.
pub fn effective_receive_buffer(requested: usize, rmem_max: Option<usize>) -> usize {
    let granted = match rmem_max {
        Some(cap) => requested.min(cap),
        None => requested,
    };
    granted.saturating_mul(2)
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Starts the node: creates the participant (loopback only unless `all_interfaces`), the
/// node with its parameters and parameter services, the subscription, publishers, the
/// receive and processing threads and the diagnostics task, and logs what it listens and
/// publishes on. Returns when everything is running.
pub fn start(
    config: NodeConfig,
    factory: Arc<dyn ProcessorFactory>,
) -> Result<RunningNode, NodeError> {
    factory.check(&config.params).map_err(|e| NodeError::Name {
        name: "parameters".into(),
        reason: e.to_string(),
    })?;
    let node_name =
        NodeName::new(&config.namespace, &config.node_name).map_err(|e| NodeError::Name {
            name: format!("{}/{}", config.namespace, config.node_name),
            reason: format!("{e:?}"),
        })?;

    let mut builder = DomainParticipantBuilder::new(config.domain_id);
    if !config.all_interfaces {
        // RustDDS otherwise announces itself by multicast on every interface; with this it
        // still discovers local peers through unicast to 127.0.0.1 (ros-node/README.md: the
        // participant is bound to loopback unless `--all-interfaces`).
        builder = builder.with_only_networks([Ipv4Addr::LOCALHOST]);
    }
    if config.socket_receive_buffer > 0 {
        builder = builder.socket_receive_buffer_size(config.socket_receive_buffer);
    }
    let sockets_before = crate::sockets::socket_fds();
    let participant = builder.build().map_err(ros_err)?;
    // Past net.core.rmem_max where the process may (CAP_NET_ADMIN): see `sockets`.
    let forced = (config.socket_receive_buffer > 0).then(|| {
        let new: std::collections::BTreeSet<i32> = crate::sockets::socket_fds()
            .difference(&sockets_before)
            .copied()
            .collect();
        crate::sockets::force_receive_buffers(&new, config.socket_receive_buffer)
    });
    let context = Context::from_domain_participant(participant).map_err(ros_err)?;

    let shared = Arc::new(Shared {
        pixels: PixelBuffers::default(),
        frames: InputFrames::default(),
        slot: Mutex::new(Slot { frame: None }),
        ready: Condvar::new(),
        stop: AtomicBool::new(false),
        stats: Mutex::new(Stats::default()),
        params: Mutex::new(config.params.clone()),
        staged: Mutex::new(None),
    });

    let mut options = NodeOptions::new()
        .enable_rosout(true)
        .start_parameter_services(true);
    for (name, value) in config.params.to_values() {
        options = options.declare_parameter(name, value);
    }
    let (v_shared, v_factory) = (Arc::clone(&shared), Arc::clone(&factory));
    options = options.parameter_validator(Box::new(move |name, value| {
        let mut candidate = lock(&v_shared.params).clone();
        candidate.apply(name, value).map_err(|e| e.to_string())?;
        v_factory.check(&candidate).map_err(|e| e.to_string())?;
        let current_backend = lock(&v_shared.params).same_backend(&candidate);
        if !current_backend {
            // Open it now so that a backend or device that cannot be opened is refused with
            // the reason, instead of failing every following frame.
            let processor = v_factory.open(&candidate).map_err(|e| e.to_string())?;
            *lock(&v_shared.staged) = Some((candidate, processor));
        }
        Ok(())
    }));
    let a_shared = Arc::clone(&shared);
    options = options.parameter_set_action(Box::new(move |name, value| {
        lock(&a_shared.params)
            .apply(name, value)
            .map_err(|e| e.to_string())
    }));

    let mut node = context
        .new_node(node_name.clone(), options)
        .map_err(ros_err)?;
    let fqn = node.fully_qualified_name();
    let spinner = node.spinner().map_err(ros_err)?;
    let mut tasks = vec![smol::spawn(async move {
        // The spinner serves the parameter services and discovery; it ends with the node.
        let _ = spinner.spin().await;
    })];

    let logger = |n: &Node| Logger {
        handle: n.logging_handle(),
        name: config.node_name.clone(),
        stderr: config.log_to_stderr,
    };

    let depth = config.image_qos_depth.max(1);
    let image_qos = match config.image_reliability {
        TopicReliability::BestEffort => QosProfile::subscription_default(),
        TopicReliability::Reliable => {
            QosProfile::subscription_default().reliability_reliable(WhenFull::DEFAULT)
        }
    }
    .history(History::KeepLast { depth });
    let output_qos = match config.output_reliability {
        TopicReliability::Reliable => QosProfile::publisher_default(),
        TopicReliability::BestEffort => QosProfile::subscription_default(),
    }
    .history(History::KeepLast { depth: 5 });

    let image_resolved = resolve_topic("image", &config.namespace, &config.remaps);
    let image_topic = image_topic(
        &context,
        &node_name,
        &topic_name(&image_resolved)?,
        &image_qos,
        depth,
    )?;
    let subscription = node
        .create_subscription::<Received>(&image_topic, None)
        .map_err(ros_err)?;
    // keypoints and matches go through writers of their own with the bulk encoder (`wire`):
    // the same CDR bytes, without ros2-client's per-value serde calls.
    let dds_publisher = context
        .domain_participant()
        .create_publisher(&QosPolicies::from(&output_qos))
        .map_err(ros_err)?;
    let (keypoints, kp_topic) = create_bulk_writer::<Encoded>(
        &mut node,
        &dds_publisher,
        &config,
        "keypoints",
        msg::keypoint_array_type(),
        &output_qos,
    )?;
    let (matches, m_topic) = create_bulk_writer::<MatchArray>(
        &mut node,
        &dds_publisher,
        &config,
        "matches",
        msg::match_array_type(),
        &output_qos,
    )?;
    let (debug, d_topic) = create_publisher(
        &mut node,
        &config,
        "debug_image",
        msg::image_type(),
        &output_qos,
    )?;
    let outputs = Outputs {
        keypoints,
        buffers: BufferPool::new(config.output_buffers_bytes),
        matches,
        debug,
        _dds_publisher: dds_publisher,
    };
    let (diagnostics, diag_topic) = create_publisher::<msg::DiagnosticArray>(
        &mut node,
        &config,
        "diagnostics",
        msg::diagnostic_array_type(),
        &output_qos,
    )?;

    let start_log = logger(&node);
    let rmem_max = kernel_rmem_max();
    let requested = if config.socket_receive_buffer > 0 {
        config.socket_receive_buffer
    } else {
        DomainParticipantBuilder::DEFAULT_SOCKET_RECEIVE_BUFFER_SIZE
    };
    let effective = effective_receive_buffer(requested, rmem_max);
    let lines = [
        format!(
            "{fqn}: domain {}, {}; image <- {image_resolved} (sensor_msgs/Image, {}, keep last {depth})",
            config.domain_id,
            if config.all_interfaces {
                "all interfaces"
            } else {
                "loopback only"
            },
            config.image_reliability.name(),
        ),
        format!(
            "outputs ({}, keep last 5; keypoints buffers kept for reuse up to {}): \
             keypoints -> {kp_topic}, matches -> {m_topic}, \
             diagnostics -> {diag_topic}, debug_image -> {d_topic} ({})",
            config.output_reliability.name(),
            mib(config.output_buffers_bytes),
            if config.params.debug_image {
                "on"
            } else {
                "off"
            }
        ),
        match &forced {
            Some(f) if f.raised > 0 && f.error.is_none() => format!(
                "socket receive buffers: {} UDP sockets raised to {} with SO_RCVBUFFORCE \
                 (kernel reports {})",
                f.raised,
                mib(requested),
                mib(f.smallest.unwrap_or(0))
            ),
            _ => format!(
                "socket receive buffers: requested {}, about {} granted{}{}",
                mib(requested),
                mib(effective),
                match rmem_max {
                    Some(cap) if cap < requested => format!(
                        " (net.core.rmem_max = {}: best-effort frames larger than the buffer \
                         are lost (and counted); raise it with sysctl)",
                        mib(cap)
                    ),
                    _ => String::new(),
                },
                match forced.as_ref().and_then(|f| f.error.as_ref()) {
                    Some(e) => format!("; raising past it failed: {e}"),
                    None => String::new(),
                }
            ),
        },
    ];
    for line in &lines {
        start_log.log(LogLevel::Info, line);
    }
    let p = &config.params;
    let mut backend_line = format!(
        "backend {:?}, device {:?}, detector {:?}, max_keypoints {}, descriptor {:?}",
        p.backend,
        if p.device.is_empty() {
            "auto"
        } else {
            &p.device
        },
        p.detector,
        p.max_keypoints,
        p.descriptor
    );
    if config.open_backend_at_start {
        match factory.open(&config.params) {
            Ok(processor) => {
                let described = processor.describe();
                backend_line.push_str(&format!(": opened {described}"));
                lock(&shared.stats).backend = described;
                *lock(&shared.staged) = Some((config.params.clone(), processor));
            }
            Err(e) => backend_line.push_str(&format!(
                ": cannot be opened yet ({e}); it is tried again for each frame"
            )),
        }
    } else {
        backend_line.push_str(" (opened for the first frame)");
    }
    start_log.log(LogLevel::Info, &backend_line);

    // Diagnostics task.
    let (d_shared, d_name) = (Arc::clone(&shared), fqn.clone());
    tasks.push(smol::spawn(async move {
        let mut last = (Instant::now(), Stats::default());
        loop {
            smol::Timer::after(Duration::from_secs(1)).await;
            let now = Instant::now();
            let snapshot = {
                let mut s = lock(&d_shared.stats);
                let snap = s.clone();
                s.window.clear();
                s.stage_window.clear();
                snap
            };
            let report =
                diagnostics_report(&d_name, &last.1, &snapshot, now.duration_since(last.0));
            let _ = diagnostics.publish(report);
            last = (now, snapshot);
        }
    }));

    let (r_shared, r_log) = (Arc::clone(&shared), logger(&node));
    let receiver = std::thread::Builder::new()
        .name("surfcl-receive".into())
        .spawn(move || receive_loop(&r_shared, &subscription, &r_log))?;

    let (w_shared, w_log) = (Arc::clone(&shared), logger(&node));
    let worker = match std::thread::Builder::new()
        .name("surfcl-process".into())
        .spawn(move || process_loop(&w_shared, &*factory, &outputs, &w_log))
    {
        Ok(w) => w,
        Err(e) => {
            shared.stop.store(true, Ordering::SeqCst);
            let _ = receiver.join();
            return Err(e.into());
        }
    };

    Ok(RunningNode {
        shared,
        worker: Some(worker),
        receiver: Some(receiver),
        tasks,
        node: Some(node),
        fqn,
    })
}

/// Deserialises an [`Image`] into an input frame or a reused pixel buffer ([`ReceiveSeed`]) and
/// records how long that took (nanoseconds) in `nanos`.
#[derive(Clone)]
struct TimedImage {
    nanos: Arc<AtomicU64>,
    seed: ReceiveSeed,
}

impl<'de> DeserializeSeed<'de> for TimedImage {
    type Value = Received;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Received, D::Error> {
        let t0 = Instant::now();
        let image = self.seed.deserialize(deserializer);
        let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.nanos.store(ns, Ordering::Relaxed);
        image
    }
}

fn unix_nanos_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Counts gaps in the publishers' sequence numbers (messages that never reached the node).
#[derive(Default)]
struct GapCounter {
    last: HashMap<Gid, i64>,
}

impl GapCounter {
    /// Publishers remembered at most; beyond, the table starts over (a gap is then missed).
    const MAX_PUBLISHERS: usize = 64;

    /// Notes message `seq` of `publisher`; returns how many of its messages were skipped.
    fn note(&mut self, publisher: Gid, seq: i64) -> u64 {
        if self.last.len() >= Self::MAX_PUBLISHERS && !self.last.contains_key(&publisher) {
            self.last.clear();
        }
        match self.last.insert(publisher, seq) {
            Some(prev) if seq > prev + 1 => u64::try_from(seq - prev - 1).unwrap_or(0),
            _ => 0,
        }
    }
}

/// The receive thread: takes image messages as they come (deserialisation timed), counts
/// sequence gaps, validates and hands frames to the slot. It never waits for processing.
fn receive_loop(shared: &Shared, subscription: &Subscription<Received>, log: &Logger) {
    let nanos = Arc::new(AtomicU64::new(0));
    let stream = subscription.async_stream_seed(TimedImage {
        nanos: Arc::clone(&nanos),
        seed: ReceiveSeed {
            buffers: shared.pixels.clone(),
            frames: shared.frames.clone(),
        },
    });
    let mut stream = std::pin::pin!(stream);
    let mut gaps = GapCounter::default();
    let mut last_loss_log: Option<Instant> = None;
    smol::block_on(async {
        while !shared.stop.load(Ordering::SeqCst) {
            // Bounded wait, so that a stop request is seen within 100 ms.
            let next = smol::future::or(async { Some(stream.next().await) }, async {
                smol::Timer::after(Duration::from_millis(100)).await;
                None
            })
            .await;
            match next {
                None => continue,
                // The stream of a DDS reader does not end; if it did, nothing more can arrive.
                Some(None) => break,
                Some(Some(Ok((received, info)))) => {
                    let mut arrival = arrival_of(&info, nanos.load(Ordering::Relaxed));
                    if let Some(gray) = &received.gray {
                        arrival.receive_convert_ms = gray.convert_ms;
                    }
                    let image = &received.image;
                    let lost = gaps.note(info.publisher_gid(), info.sequence_number());
                    if lost > 0 {
                        let total = {
                            let mut s = lock(&shared.stats);
                            s.lost += lost;
                            s.lost
                        };
                        // At most one line a second, however many frames are lost.
                        if last_loss_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                            last_loss_log = Some(Instant::now());
                            log.log(
                                LogLevel::Warn,
                                &format!(
                                    "{lost} image message(s) before frame {:?} never arrived \
                                     ({total} so far): lost on the way (large best-effort frames: \
                                     socket receive buffer, see the start-up log) or replaced in \
                                     the reader's history",
                                    image.header.frame_id
                                ),
                            );
                        }
                    }
                    accept_image(shared, log, received, arrival);
                }
                Some(Some(Err(e))) => {
                    lock(&shared.stats).malformed += 1;
                    log.log(
                        LogLevel::Warn,
                        &format!("dropping an image message that could not be read: {e:?}"),
                    );
                }
            }
        }
    });
}

fn arrival_of(info: &MessageInfo, deserialise_ns: u64) -> Arrival {
    let transport_ms = info
        .source_timestamp()
        .map(|t| (unix_nanos_now().saturating_sub(t.to_nanos())) as f64 / 1e6)
        .unwrap_or(0.0)
        .max(0.0);
    Arrival {
        taken: Instant::now(),
        transport_ms,
        deserialise_ms: deserialise_ns as f64 / 1e6,
        receive_convert_ms: 0.0,
    }
}

fn accept_image(shared: &Shared, log: &Logger, received: Received, arrival: Arrival) {
    let Received { image, gray } = received;
    {
        let mut s = lock(&shared.stats);
        s.received += 1;
        s.received_into_frames += u64::from(gray.is_some());
    }
    // A frame converted on receipt was validated by the same check, from the same fields,
    // before its pixels went into the input frame (its message has no `data` left to check).
    let (layout, gray) = match gray {
        Some(g) => (Ok(g.layout), Some(g.frame)),
        None => (convert::validate(&image), None),
    };
    match layout {
        Ok(layout) => {
            let replaced = lock(&shared.slot)
                .frame
                .replace(Frame {
                    image,
                    layout,
                    arrival,
                    pixels: shared.pixels.clone(),
                    gray,
                })
                .is_some();
            if replaced {
                lock(&shared.stats).dropped_stale += 1;
            }
            shared.ready.notify_one();
        }
        Err(e) => {
            lock(&shared.stats).malformed += 1;
            log.log(
                LogLevel::Warn,
                &format!("dropping image (frame {:?}): {e}", image.header.frame_id),
            );
        }
    }
}

fn mean_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut n, mut sum, mut max) = (0usize, 0.0, 0.0f64);
    for v in values {
        n += 1;
        sum += v;
        max = max.max(v);
    }
    if n == 0 {
        (0.0, 0.0)
    } else {
        (sum / n as f64, max)
    }
}

fn diagnostics_report(
    node: &str,
    before: &Stats,
    now: &Stats,
    elapsed: Duration,
) -> msg::DiagnosticArray {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let fps = (now.processed - before.processed) as f64 / secs;
    let (mean, max) = mean_max(now.window.iter().copied());
    let new_drops = now.dropped_stale - before.dropped_stale;
    let new_failed = now.failed - before.failed;
    let new_lost = now.lost - before.lost;
    let (level, message) = if new_failed > 0 {
        (
            msg::DiagnosticStatus::ERROR,
            format!(
                "{new_failed} frames failed in the backend; last: {}",
                now.last_error
            ),
        )
    } else if new_lost > 0 {
        (
            msg::DiagnosticStatus::WARN,
            format!("lost {new_lost} image messages on the way in the last {secs:.1} s"),
        )
    } else if new_drops > 0 {
        (
            msg::DiagnosticStatus::WARN,
            format!("dropping frames: {new_drops} in the last {secs:.1} s"),
        )
    } else {
        (msg::DiagnosticStatus::OK, "ok".to_string())
    };
    let kv = |k: &str, v: String| msg::KeyValue {
        key: k.into(),
        value: v,
    };
    let mut values = vec![
        kv("frame_rate_hz", format!("{fps:.2}")),
        kv("processing_ms_mean", format!("{mean:.3}")),
        kv("processing_ms_max", format!("{max:.3}")),
        kv("frames_received", now.received.to_string()),
        kv(
            "frames_received_into_frames",
            now.received_into_frames.to_string(),
        ),
        kv("frames_processed", now.processed.to_string()),
        kv("frames_dropped_stale", now.dropped_stale.to_string()),
        kv("frames_lost", now.lost.to_string()),
        kv("messages_malformed", now.malformed.to_string()),
        kv("frames_failed", now.failed.to_string()),
        kv("last_error", now.last_error.clone()),
        kv("keypoints_last", now.last_keypoints.to_string()),
        kv("matches_last", now.last_matches.to_string()),
        kv("output_buffers_new", now.output_buffers_new.to_string()),
        kv(
            "output_buffers_prepared",
            now.output_buffers_prepared.to_string(),
        ),
        kv(
            "output_buffers_kept_mb",
            format!("{:.1}", now.output_buffers_kept_bytes as f64 / 1048576.0),
        ),
    ];
    for (i, (name, _)) in StageTimes::default().named().iter().enumerate() {
        let (mean, max) = mean_max(now.stage_window.iter().map(|s| s.named()[i].1));
        values.push(kv(&format!("stage_{name}_ms_mean"), format!("{mean:.3}")));
        values.push(kv(&format!("stage_{name}_ms_max"), format!("{max:.3}")));
    }
    msg::DiagnosticArray {
        header: Header {
            stamp: ros2_client::builtin_interfaces::Time::now(),
            frame_id: String::new(),
        },
        status: vec![msg::DiagnosticStatus {
            level,
            name: format!("{node}: processing"),
            message,
            hardware_id: now.backend.clone(),
            values,
        }],
    }
}

/// Waits for the newest frame; `None` when stopping.
fn next_frame(shared: &Shared) -> Option<Frame> {
    let mut slot = lock(&shared.slot);
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(frame) = slot.frame.take() {
            return Some(frame);
        }
        // Timed wait: a missed notification cannot hang the thread past the next check.
        slot = match shared.ready.wait_timeout(slot, Duration::from_millis(100)) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        };
    }
}

/// How a backend call failed.
enum BackendFault {
    /// It returned an error.
    Error(String),
    /// It panicked: its state is suspect, so the processor is dropped and reopened for the next
    /// frame (which, as after any reopen, is matched against nothing).
    Panic(String),
}

impl BackendFault {
    fn panicked(&self) -> bool {
        matches!(self, BackendFault::Panic(_))
    }
    fn text(&self) -> &str {
        match self {
            BackendFault::Error(t) | BackendFault::Panic(t) => t,
        }
    }
}

/// Runs a backend call; a panic becomes a failed frame instead of ending the processing thread
/// (which would leave the node alive but silent).
fn guarded<T>(call: impl FnOnce() -> Result<T, ProcessorError>) -> Result<T, BackendFault> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(r) => r.map_err(|e| BackendFault::Error(e.to_string())),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            Err(BackendFault::Panic(format!("backend panicked: {what}")))
        }
    }
}

/// The previous processed frame, for matching.
struct Previous {
    header: Header,
    detection: Detection,
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Splits the backend's own stage timings into upload, kernels and readback.
fn split_backend_timings(stages: &mut StageTimes, timings: &[(String, f64)]) {
    for (name, ms) in timings {
        if name.contains("upload") {
            stages.upload_ms += ms;
        } else if name.contains("readback") || name.starts_with("read") {
            stages.readback_ms += ms;
        } else {
            stages.kernels_ms += ms;
        }
    }
}

/// Where the gray pixels of a frame are.
enum Source<'a> {
    /// In one of the backend's input frames, converted on receipt.
    Frame(&'a mut dyn InputFrame),
    /// Still in the message: its `data`, laid out as the layout says.
    Message(&'a [u8]),
}

/// Detects a frame into `detection` (converting the message's pixels to gray first when they
/// are still in the message), timing both into `stages`.
///
/// A frame in an input frame (the OpenCL backend's pinned memory, filled by the receive thread)
/// is detected from there: it was copied once on the host, from the serialized message, and is
/// uploaded by DMA. For a frame still in the message, when the processor has an input area (the
/// OpenCL backend's pinned memory), the frame is converted (or, for `mono8`, copied without its
/// row padding) straight into it: the pixels are copied once more on the host and uploaded by
/// DMA, where the driver would otherwise copy the node's pageable memory first (1920x1080 on an
/// H100: 0.40 instead of 0.56 ms end to end). Otherwise into `gray` (tightly packed `mono8`: not
/// at all) and detected from there.
fn detect_frame(
    processor: &mut dyn Processor,
    source: Source<'_>,
    layout: &Layout,
    params: &NodeParams,
    gray: &mut Vec<u8>,
    detection: &mut Detection,
    stages: &mut StageTimes,
) -> Result<(), ProcessorError> {
    let (width, height) = (layout.width, layout.height);
    let data = match source {
        Source::Frame(frame) => {
            let t = Instant::now();
            processor.detect_frame_into(frame, width, height, params, detection)?;
            stages.detect_ms = ms_since(t);
            return Ok(());
        }
        Source::Message(data) => data,
    };
    // Finding the area is the backend's time (its first frame makes the detector; later ones
    // wait for the last upload from the area), not the conversion's.
    let t = Instant::now();
    let area = processor.input_area(width, height, params)?;
    let area_ms = ms_since(t);
    if let Some(area) = area {
        let t = Instant::now();
        convert::to_gray_into(data, layout, area)
            .map_err(|e| ProcessorError::Frame(e.to_string()))?;
        stages.convert_ms = ms_since(t);
        let t = Instant::now();
        processor.detect_input_into(width, height, params, detection)?;
        stages.detect_ms = area_ms + ms_since(t);
        return Ok(());
    }
    let t = Instant::now();
    let pixels = convert::gray_view(data, layout, gray);
    stages.convert_ms = ms_since(t);
    let t = Instant::now();
    let image =
        GrayImage::new(pixels, width, height).map_err(|e| ProcessorError::Frame(e.to_string()))?;
    processor.detect_into(&image, params, detection)?;
    stages.detect_ms = area_ms + ms_since(t);
    Ok(())
}

fn process_loop(shared: &Shared, factory: &dyn ProcessorFactory, out: &Outputs, log: &Logger) {
    let mut processor: Option<(NodeParams, Box<dyn Processor>)> = None;
    let mut previous: Option<Previous> = None;
    // The detection of the frame before the previous one: no longer needed, its arrays are
    // refilled by the next frame's detection (`Processor::detect_into`) instead of allocated.
    let mut spare = Detection::default();
    let mut gray = Vec::new();
    let mut debug_rgb = Vec::new();
    while let Some(mut frame) = next_frame(shared) {
        let Frame {
            image,
            layout,
            arrival,
            gray: input,
            ..
        } = &mut frame;
        let (image, layout, arrival) = (&*image, &*layout, &*arrival);
        let started = Instant::now();
        let mut stages = StageTimes {
            transport_ms: arrival.transport_ms,
            deserialise_ms: arrival.deserialise_ms,
            receive_convert_ms: arrival.receive_convert_ms,
            queue_ms: started.duration_since(arrival.taken).as_secs_f64() * 1e3,
            ..StageTimes::default()
        };
        let params = lock(&shared.params).clone();
        // A frame whose detection fails publishes nothing; one whose matching fails has published
        // its keypoints but publishes no matches. Neither becomes the previous frame: the next
        // frame is matched against the last one that was published whole.
        let fail = |what: &str, e: &str| {
            let text = format!(
                "frame {:?} (stamp {} ns): {what}: {e}",
                image.header.frame_id,
                image.header.stamp.to_nanos()
            );
            log.log(LogLevel::Error, &text);
            let mut s = lock(&shared.stats);
            s.failed += 1;
            s.last_error = text;
        };

        // (Re)open the backend when backend/device changed; prefer the one the validator opened.
        if processor
            .as_ref()
            .is_none_or(|(p, _)| !p.same_backend(&params))
        {
            let staged = lock(&shared.staged)
                .take()
                .filter(|(p, _)| p.same_backend(&params));
            let opened = match staged {
                Some(s) => Ok(s),
                None => factory.open(&params).map(|p| (params.clone(), p)),
            };
            // The old backend's input frames go (lent ones when they come back): the new one
            // makes its own after this frame.
            shared.frames.reset();
            match opened {
                Ok((p, proc_)) => {
                    lock(&shared.stats).backend = proc_.describe();
                    log.log(LogLevel::Info, &format!("backend: {}", proc_.describe()));
                    processor = Some((p, proc_));
                    // Descriptors from another backend are comparable, but keep frames apart
                    // anyway: a backend switch is a configuration change.
                    previous = None;
                }
                Err(e) => {
                    fail("cannot open backend", &e.to_string());
                    continue;
                }
            }
        }
        let Some((_, proc_)) = processor.as_mut() else {
            continue;
        };

        let mut detection = std::mem::take(&mut spare);
        let source = match input.as_mut().and_then(PooledFrame::frame) {
            Some(f) => Source::Frame(f),
            None => Source::Message(&image.data),
        };
        if let Err(e) = guarded(|| {
            detect_frame(
                proc_.as_mut(),
                source,
                layout,
                &params,
                &mut gray,
                &mut detection,
                &mut stages,
            )
        }) {
            if e.panicked() {
                processor = None;
            }
            fail("detection failed", e.text());
            continue;
        }
        split_backend_timings(&mut stages, &detection.timings);
        // Keypoints go out as soon as they exist: they do not depend on matching, and a robot
        // waiting for them should not wait for the matcher too (at 1920x1080 on a GPU, matching
        // is a quarter of the node's time).
        let t = Instant::now();
        let header = image.header.clone();
        let encoded = encode_detection(
            out.buffers.take(),
            &header,
            &detection.keypoints,
            &detection.descriptors,
            params.descriptor,
            detection.dropped,
        );
        let kp_capacity = encoded.capacity();
        let kp_msg = Encoded(out.buffers.bytes(encoded));
        stages.build_ms = ms_since(t);
        let t = Instant::now();
        if let Err(e) = out.keypoints.write(kp_msg, Some(Timestamp::now())) {
            log.log(
                LogLevel::Warn,
                &format!("publishing keypoints failed: {e:?}"),
            );
        }
        stages.publish_ms = ms_since(t);
        stages.keypoints_out_ms = stages.queue_ms + ms_since(started);

        let t = Instant::now();
        let (matches, previous_header) = match &mut previous {
            Some(prev) => {
                match guarded(|| proc_.match_frames(&mut detection, &mut prev.detection, &params)) {
                    Ok(m) => (m, prev.header.clone()),
                    Err(e) => {
                        if e.panicked() {
                            processor = None;
                        }
                        fail("matching failed", e.text());
                        continue;
                    }
                }
            }
            None => (Vec::new(), Header::default()),
        };
        stages.match_ms = ms_since(t);

        let t = Instant::now();
        let n_matches = matches.len();
        // Only the debug picture needs the matches after they are published.
        let drawn = if params.debug_image {
            matches.clone()
        } else {
            Vec::new()
        };
        let m_msg = MatchArray {
            header: header.clone(),
            previous_header,
            matches,
        };
        stages.build_ms += ms_since(t);
        let t = Instant::now();
        if let Err(e) = out.matches.write(m_msg, Some(Timestamp::now())) {
            log.log(LogLevel::Warn, &format!("publishing matches failed: {e:?}"));
        }
        stages.publish_ms += ms_since(t);

        if params.debug_image {
            let prev_kps = previous
                .as_ref()
                .map(|p| p.detection.keypoints.as_slice())
                .unwrap_or(&[]);
            // The gray pixels: in the input frame (reached after the detection's upload from
            // it), or from the message. None only when the frame's device failed.
            let pixels = match input.as_mut().and_then(PooledFrame::frame) {
                Some(f) => crate::processor::frame_pixels(f, layout.width, layout.height)
                    .ok()
                    .map(|p| &*p),
                None => Some(convert::gray_view(&image.data, layout, &mut gray)),
            };
            if let Some(pixels) = pixels {
                crate::debug::render(
                    pixels,
                    layout.width,
                    layout.height,
                    &detection.keypoints,
                    prev_kps,
                    &drawn,
                    &mut debug_rgb,
                );
                let dbg = Image {
                    header: header.clone(),
                    height: layout.height as u32,
                    width: layout.width as u32,
                    encoding: "rgb8".into(),
                    is_bigendian: 0,
                    step: (layout.width * 3) as u32,
                    data: debug_rgb.clone(),
                };
                if let Err(e) = out.debug.publish(dbg) {
                    log.log(
                        LogLevel::Warn,
                        &format!("publishing debug_image failed: {e:?}"),
                    );
                }
            }
        }

        let ms = ms_since(started);
        stages.node_ms = stages.queue_ms + ms;
        // The next frame's buffer, mapped now that this one is out (not in its time): only
        // when none is free, i.e. before a reliable writer's first cleaning hands buffers back,
        // or past the pool's byte limit.
        out.buffers.prepare(kp_capacity);
        {
            let mut s = lock(&shared.stats);
            s.output_buffers_new = out.buffers.new_buffers();
            s.output_buffers_prepared = out.buffers.prepared_buffers();
            s.output_buffers_kept_bytes = out.buffers.kept_bytes();
            s.processed += 1;
            s.last_keypoints = detection.keypoints.len();
            s.last_matches = n_matches;
            s.last_processing_ms = ms;
            s.last_stages = stages;
            // Bounded: the diagnostics task clears them every second; the cap guards against
            // a stalled executor.
            if s.window.len() < 100_000 {
                s.window.push(ms);
                s.stage_window.push(stages);
            }
        }
        if let Some(old) = previous.replace(Previous { header, detection }) {
            spare = old.detection;
        }
        // After the frame is out, so that making frames (page-locking memory takes
        // milliseconds) never delays one; at most once per backend and frame size.
        let len = layout.width * layout.height;
        if let Some((_, proc_)) = processor.as_mut() {
            match guarded(|| {
                shared
                    .frames
                    .refill(len, |capacity| proc_.input_frame(capacity))
            }) {
                Ok(_) => {}
                Err(e) => {
                    if e.panicked() {
                        processor = None;
                        shared.frames.reset();
                    }
                    log.log(
                        LogLevel::Warn,
                        &format!(
                            "no input frames from the backend ({}): frames are received into \
                             the node's memory and copied once more",
                            e.text()
                        ),
                    );
                }
            }
        }
    }
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
