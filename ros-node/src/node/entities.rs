//! The node's DDS and ROS entities: the participant, the image subscription, the output
//! writers, and the start-up log that names them.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use ros2_client::dds::rustdds::{
    DomainParticipantBuilder, QosPolicies, QosPolicyBuilder, TopicKind, no_key, policy,
};
use ros2_client::qos::{History, WhenFull};
use ros2_client::type_hash::announce_qos;
use ros2_client::{Context, Message, Name, Node, NodeName, Publisher, QosProfile, Subscription};

use super::config::{NodeConfig, TopicReliability, resolve_topic};
use super::error::{NodeError, ros_err};
use crate::discovery::{self, Networks};
use crate::msg::{self, Image, MatchArray};
use crate::pixels::Received;
use crate::sockets::ForceOutcome;
use crate::wire::{BufferPool, BulkCdr, Encoded};

/// A writer of `M` whose messages are encoded by [`BulkCdr`].
pub(super) type BulkWriter<M> = no_key::DataWriter<M, BulkCdr>;

/// The output writers of the processing thread.
pub(super) struct Outputs {
    /// `KeypointArray`s, encoded by the node (`wire::encode_detection`).
    pub(super) keypoints: BulkWriter<Encoded>,
    /// The buffers they are encoded into, back from DDS when it drops them.
    pub(super) buffers: BufferPool,
    pub(super) matches: BulkWriter<MatchArray>,
    pub(super) debug: Publisher<Image>,
}

/// The resolved topic names, for the start-up log.
pub(super) struct TopicNames {
    image: String,
    pub(super) keypoints: String,
    pub(super) matches: String,
    pub(super) debug_image: String,
    diagnostics: String,
}

/// Everything [`create`] makes.
pub(super) struct Entities {
    pub(super) image: Subscription<Received>,
    pub(super) outputs: Outputs,
    pub(super) diagnostics: Publisher<msg::DiagnosticArray>,
    pub(super) names: TopicNames,
}

/// The participant, on the networks the discovery range gives, and its context, with the
/// socket receive buffers raised as far as the process may.
pub(super) fn participant(
    config: &NodeConfig,
    static_peers: &[IpAddr],
) -> Result<(Context, Option<ForceOutcome>), NodeError> {
    let mut builder = DomainParticipantBuilder::new(config.domain_id);
    builder = match config.discovery.networks() {
        Networks::All => builder.with_static_peers(static_peers.iter().copied()),
        // RustDDS otherwise announces itself by multicast on every interface; with this it
        // still discovers local peers through unicast to 127.0.0.1. Static peers get unicast
        // announcements, which name the node's address on the interface towards them (so that
        // they can answer), as ROS 2 does with static peers under LOCALHOST.
        Networks::Loopback => builder
            .with_only_networks(
                std::iter::once(IpAddr::V4(Ipv4Addr::LOCALHOST)).chain(
                    static_peers
                        .iter()
                        .filter_map(|p| discovery::local_address_towards(*p)),
                ),
            )
            .with_static_peers(static_peers.iter().copied()),
        // No interface to announce on or join multicast with, and no unicast discovery to the
        // local ports.
        Networks::None => builder
            .with_only_networks(std::iter::empty::<Ipv4Addr>())
            .same_host_loopback(false),
    };
    if config.socket_receive_buffer > 0 {
        builder = builder.socket_receive_buffer_size(config.socket_receive_buffer);
    }
    let sockets_before = crate::sockets::socket_fds();
    let participant = builder.build().map_err(ros_err)?;
    // Past net.core.rmem_max where the process may (CAP_NET_ADMIN): see `sockets`.
    let forced = (config.socket_receive_buffer > 0).then(|| {
        let new: BTreeSet<i32> = crate::sockets::socket_fds()
            .difference(&sockets_before)
            .copied()
            .collect();
        crate::sockets::force_receive_buffers(&new, config.socket_receive_buffer)
    });
    let context = Context::from_domain_participant(participant).map_err(ros_err)?;
    Ok((context, forced))
}

/// The image subscription's QoS: the sensor-data profile (or reliable), keep last `depth`.
fn image_qos(config: &NodeConfig) -> QosProfile {
    let depth = config.image_qos_depth.max(1);
    match config.image_reliability {
        TopicReliability::BestEffort => QosProfile::subscription_default(),
        TopicReliability::Reliable => {
            QosProfile::subscription_default().reliability_reliable(WhenFull::DEFAULT)
        }
    }
    .history(History::KeepLast { depth })
}

/// The outputs' QoS: reliable (or best effort), keep last 5.
fn output_qos(config: &NodeConfig) -> QosProfile {
    match config.output_reliability {
        TopicReliability::Reliable => QosProfile::publisher_default(),
        TopicReliability::BestEffort => QosProfile::subscription_default(),
    }
    .history(History::KeepLast { depth: 5 })
}

/// Creates the subscription, the output writers and the diagnostics publisher.
pub(super) fn create(
    context: &Context,
    node: &mut Node,
    node_name: &NodeName,
    config: &NodeConfig,
) -> Result<Entities, NodeError> {
    let transport = config.image_transport;
    let image_resolved =
        transport.topic(&resolve_topic("image", &config.namespace, &config.remaps));
    let depth = config.image_qos_depth.max(1);
    let topic = image_topic(
        context,
        node_name,
        &topic_name(&image_resolved)?,
        transport.message_type(),
        &image_qos(config),
        depth,
    )?;
    let image = node
        .create_subscription::<Received>(&topic, None)
        .map_err(ros_err)?;
    let qos = output_qos(config);
    // keypoints and matches go through writers with the bulk encoder (`wire`): the same CDR
    // bytes, without ros2-client's per-value serde calls.
    let kp_type = msg::keypoint_array_type();
    let (keypoints, kp_topic) = create_bulk_writer(node, config, "keypoints", kp_type, &qos)?;
    let m_type = msg::match_array_type();
    let (matches, m_topic) = create_bulk_writer(node, config, "matches", m_type, &qos)?;
    let (debug, d_topic) = create_publisher(node, config, "debug_image", msg::image_type(), &qos)?;
    let diag_type = msg::diagnostic_array_type();
    // Absolute, as every ROS driver publishes it: the aggregator listens on `/diagnostics`
    // whatever the namespaces of the nodes it aggregates (a remapping still moves it).
    let (diagnostics, diag_topic) =
        create_publisher(node, config, "/diagnostics", diag_type, &qos)?;
    let outputs = Outputs {
        keypoints,
        buffers: BufferPool::new(config.output_buffers_bytes),
        matches,
        debug,
    };
    let names = TopicNames {
        image: image_resolved,
        keypoints: kp_topic,
        matches: m_topic,
        debug_image: d_topic,
        diagnostics: diag_topic,
    };
    Ok(Entities {
        image,
        outputs,
        diagnostics,
        names,
    })
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
    message_type: ros2_client::MessageTypeName,
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
    let policies = QosPolicies::from(qos)
        .modify_by(&limits)
        .modify_by(&announce_qos(message_type.type_hash()));
    context
        .domain_participant()
        .create_topic(
            name.to_dds_name("rt", node_name, ""),
            message_type.dds_msg_type(),
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

/// Creates a `BulkCdr` writer for `name` (resolved like the others) with `qos`, through the
/// node, so that the ROS graph lists it among the node's publishers (ros2-client patched:
/// `third_party/ros2-client/PATCHES.md`).
fn create_bulk_writer<M>(
    node: &mut Node,
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
    let writer = node
        .create_datawriter::<M, BulkCdr>(&topic, Some(qos.clone()))
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

/// The start-up log: where the node listens and publishes, and its socket buffers.
pub(super) fn start_up_lines(
    config: &NodeConfig,
    fqn: &str,
    names: &TopicNames,
    forced: Option<&ForceOutcome>,
) -> [String; 3] {
    let depth = config.image_qos_depth.max(1);
    let debug = if config.params.debug_image {
        "on"
    } else {
        "off"
    };
    [
        format!(
            "{fqn}: domain {}, {}; image <- {} ({}, {}, keep last {depth})",
            config.domain_id,
            config.discovery,
            names.image,
            config.image_transport.message_name(),
            config.image_reliability.name(),
        ),
        format!(
            "outputs ({}, keep last 5; keypoints buffers kept for reuse up to {}): \
             keypoints -> {}, matches -> {}, diagnostics -> {}, debug_image -> {} ({debug})",
            config.output_reliability.name(),
            mib(config.output_buffers_bytes),
            names.keypoints,
            names.matches,
            names.diagnostics,
            names.debug_image,
        ),
        socket_buffer_line(config, forced),
    ]
}

fn socket_buffer_line(config: &NodeConfig, forced: Option<&ForceOutcome>) -> String {
    let requested = if config.socket_receive_buffer > 0 {
        config.socket_receive_buffer
    } else {
        DomainParticipantBuilder::DEFAULT_SOCKET_RECEIVE_BUFFER_SIZE
    };
    if let Some(f) = forced
        && f.raised > 0
        && f.error.is_none()
    {
        return format!(
            "socket receive buffers: {} UDP sockets raised to {} with SO_RCVBUFFORCE \
             (kernel reports {})",
            f.raised,
            mib(requested),
            mib(f.smallest.unwrap_or(0))
        );
    }
    let rmem_max = kernel_rmem_max();
    let capped = match rmem_max {
        Some(cap) if cap < requested => format!(
            " (net.core.rmem_max = {}: best-effort frames larger than the buffer \
             are lost (and counted); raise it with sysctl)",
            mib(cap)
        ),
        _ => String::new(),
    };
    let failed = match forced.and_then(|f| f.error.as_ref()) {
        Some(e) => format!("; raising past it failed: {e}"),
        None => String::new(),
    };
    format!(
        "socket receive buffers: requested {}, about {} granted{capped}{failed}",
        mib(requested),
        mib(effective_receive_buffer(requested, rmem_max)),
    )
}
