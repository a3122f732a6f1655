//! The running node: participant, subscription, processing thread, publishers, diagnostics.
//!
//! ```text
//! image (best effort, keep last N) ──► receive task: validate ──► newest-frame slot
//!                                       (malformed: log, count, drop)   │ (older frame
//!                                                                       │  replaced: counted)
//! processing thread ◄───────────────────────────────────────────────────┘
//!   gray ─► Processor::detect ─► keypoints ─► match against previous frame ─► matches
//!                                         └─► debug_image (optional)
//! diagnostics task: once a second, DiagnosticArray with rate, processing time and drops
//! ```
//! The slot holds one frame: a slow backend never works on a stale image and memory stays
//! bounded whatever the camera rate.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ros2_client::dds::rustdds::DomainParticipantBuilder;
use ros2_client::qos::History;
use ros2_client::ros2::LogLevel;
use ros2_client::{
    Context, Message, Name, Node, NodeLoggingHandle, NodeName, NodeOptions, Publisher, QosProfile,
    rosout,
};
use surfcl_core::GrayImage;

use crate::convert::{self, Layout};
use crate::msg::{self, Header, Image, KeypointArray, KeypointMsg, MatchArray};
use crate::params::{DescriptorRepr, NodeParams};
use crate::processor::{Detection, Processor, ProcessorFactory, quantise_q7};

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
    #[error("cannot start the processing thread: {0}")]
    Thread(#[from] std::io::Error),
}

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
    /// Announce on every interface instead of loopback only.
    pub all_interfaces: bool,
    /// Initial parameter values.
    pub params: NodeParams,
    /// Also print log lines on stderr (they always go to `/rosout`).
    pub log_to_stderr: bool,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            node_name: "surfcl_node".into(),
            namespace: "/".into(),
            remaps: Vec::new(),
            domain_id: 0,
            image_qos_depth: 2,
            all_interfaces: false,
            params: NodeParams::default(),
            log_to_stderr: true,
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

/// Counters of the node, as the diagnostics report them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Image messages received (valid or not).
    pub received: u64,
    /// Messages dropped by validation.
    pub malformed: u64,
    /// Valid frames replaced in the slot before they were processed.
    pub dropped_stale: u64,
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
    /// The backend in use.
    pub backend: String,
    /// Processing times since the last diagnostics report (ms).
    window: Vec<f64>,
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

/// The newest valid frame waiting for the processing thread.
struct Slot {
    frame: Option<(Image, Layout)>,
}

struct Shared {
    slot: Mutex<Slot>,
    ready: Condvar,
    stop: AtomicBool,
    stats: Mutex<Stats>,
    params: Mutex<NodeParams>,
    /// A processor opened while validating a `backend`/`device` change, handed to the thread.
    staged: Mutex<Option<(NodeParams, Box<dyn Processor>)>>,
}

/// Locks, recovering the data if another thread panicked while holding the lock (the counters
/// and parameters stay meaningful; refusing to go on would take the whole node down).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A started node. Dropping it (or [`RunningNode::stop`]) stops the tasks and the thread.
pub struct RunningNode {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
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
    /// Whether the processing thread has ended (it only does when stopped).
    pub fn is_finished(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_finished())
    }
    /// Stops the node and waits for the processing thread.
    pub fn stop(mut self) {
        self.shutdown();
    }
    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.ready.notify_all();
        self.tasks.clear();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
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
) -> Result<Publisher<M>, NodeError> {
    let resolved = resolve_topic(name, &config.namespace, &config.remaps);
    let topic = node
        .create_topic(&topic_name(&resolved)?, ty, qos)
        .map_err(ros_err)?;
    node.create_publisher::<M>(&topic, None).map_err(ros_err)
}

struct Outputs {
    keypoints: Publisher<KeypointArray>,
    matches: Publisher<MatchArray>,
    debug: Publisher<Image>,
}

/// Starts the node: creates the participant (loopback only unless `all_interfaces`), the
/// node with its parameters and parameter services, the subscription, publishers, the
/// processing thread and the diagnostics task. Returns when everything is running.
pub fn start(
    config: NodeConfig,
    factory: Arc<dyn ProcessorFactory>,
) -> Result<RunningNode, NodeError> {
    factory
        .check(&config.params)
        .map_err(|reason| NodeError::Name {
            name: "parameters".into(),
            reason,
        })?;
    let node_name =
        NodeName::new(&config.namespace, &config.node_name).map_err(|e| NodeError::Name {
            name: format!("{}/{}", config.namespace, config.node_name),
            reason: format!("{e:?}"),
        })?;

    let mut builder = DomainParticipantBuilder::new(config.domain_id);
    if !config.all_interfaces {
        // RustDDS otherwise announces itself by multicast on every interface; with this it
        // still discovers local peers through unicast to 127.0.0.1 (ROS2.md).
        builder = builder.with_only_networks([Ipv4Addr::LOCALHOST]);
    }
    let participant = builder.build().map_err(ros_err)?;
    let context = Context::from_domain_participant(participant).map_err(ros_err)?;

    let shared = Arc::new(Shared {
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
        candidate.apply(name, value)?;
        v_factory.check(&candidate)?;
        let current_backend = lock(&v_shared.params).same_backend(&candidate);
        if !current_backend {
            // Open it now so that a backend or device that cannot be opened is refused with
            // the reason, instead of failing every following frame.
            let processor = v_factory.open(&candidate)?;
            *lock(&v_shared.staged) = Some((candidate, processor));
        }
        Ok(())
    }));
    let a_shared = Arc::clone(&shared);
    options = options.parameter_set_action(Box::new(move |name, value| {
        lock(&a_shared.params).apply(name, value)
    }));

    let mut node = context.new_node(node_name, options).map_err(ros_err)?;
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

    let image_qos = QosProfile::subscription_default().history(History::KeepLast {
        depth: config.image_qos_depth.max(1),
    });
    let output_qos = QosProfile::publisher_default().history(History::KeepLast { depth: 5 });

    let image_topic = node
        .create_topic(
            &topic_name(&resolve_topic("image", &config.namespace, &config.remaps))?,
            msg::image_type(),
            &image_qos,
        )
        .map_err(ros_err)?;
    let subscription = node
        .create_subscription::<Image>(&image_topic, None)
        .map_err(ros_err)?;
    let outputs = Outputs {
        keypoints: create_publisher(
            &mut node,
            &config,
            "keypoints",
            msg::keypoint_array_type(),
            &output_qos,
        )?,
        matches: create_publisher(
            &mut node,
            &config,
            "matches",
            msg::match_array_type(),
            &output_qos,
        )?,
        debug: create_publisher(
            &mut node,
            &config,
            "debug_image",
            msg::image_type(),
            &output_qos,
        )?,
    };
    let diagnostics = create_publisher::<msg::DiagnosticArray>(
        &mut node,
        &config,
        "diagnostics",
        msg::diagnostic_array_type(),
        &output_qos,
    )?;

    // Receive task: validate and put the newest frame in the slot.
    let (r_shared, r_log) = (Arc::clone(&shared), logger(&node));
    tasks.push(smol::spawn(async move {
        loop {
            match subscription.async_take().await {
                Ok((image, _info)) => accept_image(&r_shared, &r_log, image),
                Err(e) => {
                    lock(&r_shared.stats).malformed += 1;
                    r_log.log(
                        LogLevel::Warn,
                        &format!("dropping an image message that could not be read: {e:?}"),
                    );
                }
            }
        }
    }));

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
                snap
            };
            let report =
                diagnostics_report(&d_name, &last.1, &snapshot, now.duration_since(last.0));
            let _ = diagnostics.publish(report);
            last = (now, snapshot);
        }
    }));

    let (w_shared, w_log) = (Arc::clone(&shared), logger(&node));
    let worker = std::thread::Builder::new()
        .name("surfcl-process".into())
        .spawn(move || process_loop(&w_shared, &*factory, &outputs, &w_log))?;

    Ok(RunningNode {
        shared,
        worker: Some(worker),
        tasks,
        node: Some(node),
        fqn,
    })
}

fn accept_image(shared: &Shared, log: &Logger, image: Image) {
    lock(&shared.stats).received += 1;
    match convert::validate(&image) {
        Ok(layout) => {
            let replaced = lock(&shared.slot).frame.replace((image, layout)).is_some();
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

fn diagnostics_report(
    node: &str,
    before: &Stats,
    now: &Stats,
    elapsed: Duration,
) -> msg::DiagnosticArray {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let fps = (now.processed - before.processed) as f64 / secs;
    let (mean, max) = if now.window.is_empty() {
        (0.0, 0.0)
    } else {
        let sum: f64 = now.window.iter().sum();
        (
            sum / now.window.len() as f64,
            now.window.iter().cloned().fold(0.0, f64::max),
        )
    };
    let new_drops = now.dropped_stale - before.dropped_stale;
    let new_failed = now.failed - before.failed;
    let (level, message) = if new_failed > 0 {
        (
            msg::DiagnosticStatus::ERROR,
            format!(
                "{new_failed} frames failed in the backend; last: {}",
                now.last_error
            ),
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
            values: vec![
                kv("frame_rate_hz", format!("{fps:.2}")),
                kv("processing_ms_mean", format!("{mean:.3}")),
                kv("processing_ms_max", format!("{max:.3}")),
                kv("frames_received", now.received.to_string()),
                kv("frames_processed", now.processed.to_string()),
                kv("frames_dropped_stale", now.dropped_stale.to_string()),
                kv("messages_malformed", now.malformed.to_string()),
                kv("frames_failed", now.failed.to_string()),
                kv("last_error", now.last_error.clone()),
                kv("keypoints_last", now.last_keypoints.to_string()),
                kv("matches_last", now.last_matches.to_string()),
            ],
        }],
    }
}

/// Waits for the newest frame; `None` when stopping.
fn next_frame(shared: &Shared) -> Option<(Image, Layout)> {
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
fn guarded<T>(call: impl FnOnce() -> Result<T, String>) -> Result<T, BackendFault> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(r) => r.map_err(BackendFault::Error),
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

fn process_loop(shared: &Shared, factory: &dyn ProcessorFactory, out: &Outputs, log: &Logger) {
    let mut processor: Option<(NodeParams, Box<dyn Processor>)> = None;
    let mut previous: Option<Previous> = None;
    let mut gray = Vec::new();
    let mut debug_rgb = Vec::new();
    let mut q7 = Vec::new();
    while let Some((image, layout)) = next_frame(shared) {
        let started = Instant::now();
        let params = lock(&shared.params).clone();
        // A failed frame publishes nothing (no keypoints without their matches) and does not
        // become the previous frame: the next frame is matched against the last published one.
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
                    fail("cannot open backend", &e);
                    continue;
                }
            }
        }
        let Some((_, proc_)) = processor.as_mut() else {
            continue;
        };

        convert::to_gray(&image.data, &layout, &mut gray);
        let detection = match GrayImage::new(&gray, layout.width, layout.height)
            .map_err(|e| BackendFault::Error(e.to_string()))
            .and_then(|g| guarded(|| proc_.detect(&g, &params)))
        {
            Ok(d) => d,
            Err(e) => {
                if e.panicked() {
                    processor = None;
                }
                fail("detection failed", e.text());
                continue;
            }
        };
        let (matches, previous_header) = match &previous {
            Some(prev) => {
                match guarded(|| proc_.match_frames(&detection, &prev.detection, &params)) {
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

        let header = image.header.clone();
        let mut kp_msg = KeypointArray {
            header: header.clone(),
            keypoints: detection.keypoints.iter().map(KeypointMsg::from).collect(),
            descriptors: Vec::new(),
            descriptors_q7: Vec::new(),
            descriptor_length: surfcl_core::DESCRIPTOR_LEN as u32,
            dropped: u32::try_from(detection.dropped).unwrap_or(u32::MAX),
        };
        match params.descriptor {
            DescriptorRepr::F32 => {
                kp_msg.descriptors = detection.descriptors.iter().flatten().copied().collect()
            }
            DescriptorRepr::Q7 => {
                q7.clear();
                for d in &detection.descriptors {
                    quantise_q7(d, &mut q7);
                }
                kp_msg.descriptors_q7 = q7.clone();
            }
        }
        if let Err(e) = out.keypoints.publish(kp_msg) {
            log.log(
                LogLevel::Warn,
                &format!("publishing keypoints failed: {e:?}"),
            );
        }

        if params.debug_image {
            let prev_kps = previous
                .as_ref()
                .map(|p| p.detection.keypoints.as_slice())
                .unwrap_or(&[]);
            crate::debug::render(
                &gray,
                layout.width,
                layout.height,
                &detection.keypoints,
                prev_kps,
                &matches,
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
        let n_matches = matches.len();
        if let Err(e) = out.matches.publish(MatchArray {
            header: header.clone(),
            previous_header,
            matches,
        }) {
            log.log(LogLevel::Warn, &format!("publishing matches failed: {e:?}"));
        }

        let ms = started.elapsed().as_secs_f64() * 1e3;
        {
            let mut s = lock(&shared.stats);
            s.processed += 1;
            s.last_keypoints = detection.keypoints.len();
            s.last_matches = n_matches;
            s.last_processing_ms = ms;
            // Bounded: the diagnostics task clears it every second; the cap guards against a
            // stalled executor.
            if s.window.len() < 100_000 {
                s.window.push(ms);
            }
        }
        previous = Some(Previous { header, detection });
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
