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

mod config;
mod diagnostics;
pub mod entities;
mod error;
mod graph;
mod logger;
pub mod parameters;
mod process;
mod publish;
mod receive;
mod shared;
mod slot;
mod stats;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use ros2_client::ros2::LogLevel;
use ros2_client::{Node, NodeName, Subscription};

pub use crate::compressed::ImageTransport;
use crate::discovery::{self, Networks, StaticPeers};
use crate::logging::RosoutForwarding;
use crate::params::NodeParams;
use crate::pixels::Received;
use crate::processor::ProcessorFactory;

pub use config::{DEFAULT_SOCKET_RECEIVE_BUFFER, NodeConfig, TopicReliability, resolve_topic};
pub use entities::effective_receive_buffer;
pub use error::NodeError;
use error::ros_err;
use logger::Logger;
use shared::{Shared, lock};
pub use stats::{StageTimes, Stats};

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
    /// The library records forwarded to the node's `/rosout` (ends before the node closes).
    rosout_log: Option<RosoutForwarding>,
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
        self.rosout_log.take();
        self.node.take();
    }
}

impl Drop for RunningNode {
    fn drop(&mut self) {
        self.shutdown();
    }
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
    static_peers: &StaticPeers,
) {
    for line in entities::start_up_lines(config, fqn, names, forced) {
        log.log(LogLevel::Info, &line);
    }
    for warning in &config.warnings {
        log.log(LogLevel::Warn, warning);
    }
    if !static_peers.unresolved.is_empty() {
        log.log(
            LogLevel::Warn,
            &format!(
                "ROS_STATIC_PEERS: {:?} name no address; not contacted",
                static_peers.unresolved
            ),
        );
    }
    if !static_peers.addresses.is_empty() {
        let line = if config.discovery.networks() == Networks::None {
            (
                LogLevel::Warn,
                "not contacted: discovery is OFF in this node".to_string(),
            )
        } else {
            (LogLevel::Info, "announced to by unicast".to_string())
        };
        log.log(
            line.0,
            &format!("static peers {:?}: {}", static_peers.addresses, line.1),
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
    let static_peers = discovery::resolve_static_peers(&config.discovery.static_peers);
    let (context, forced) = entities::participant(&config, &static_peers.addresses)?;
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
    let rosout_log = RosoutForwarding::start(node.logging_handle(), &config.node_name)?;
    log_start(
        &log,
        &config,
        &fqn,
        &entities.names,
        forced.as_ref(),
        &static_peers,
    );
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
        node.clock(),
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
        rosout_log: Some(rosout_log),
        node: Some(node),
        fqn,
    })
}
