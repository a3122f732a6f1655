//! Shared helpers of the node tests: image loading, a ROS test client on loopback, bounded waits.
#![allow(dead_code)]

use std::cell::RefCell;
use std::future::Future;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ros2_client::builtin_interfaces::Time;
use ros2_client::dds::rustdds::{DomainParticipantBuilder, QosPolicies, no_key};
use ros2_client::qos::History;
use ros2_client::{
    Context, Message, MessageInfo, Name, Node, NodeName, NodeOptions, Publisher, QosProfile,
    Subscription,
};
use smol::stream::StreamExt;
use surfcl_ros::msg::{self, DiagnosticArray, Header, Image, KeypointArray, MatchArray};
use surfcl_ros::node::{NodeConfig, RunningNode, TopicReliability};
use surfcl_ros::processor::{Detection, ProcessorFactory};

pub mod decode;

/// Path of a file under the workspace's `data/` (or under `$SURFCL_DATA_DIR`, for a test binary
/// carried to another machine).
pub fn data(rel: &str) -> PathBuf {
    match std::env::var_os("SURFCL_DATA_DIR") {
        Some(dir) => PathBuf::from(dir).join(rel),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../data")
            .join(rel),
    }
}

/// A gray image.
#[derive(Clone)]
pub struct Gray {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

/// Reads a binary PGM (P5, maxval 255, `#` comments allowed).
pub fn read_pgm(path: &std::path::Path) -> Gray {
    let bytes = std::fs::read(path).unwrap();
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes[i] == b'#' {
            while bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        while !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        fields.push(String::from_utf8(bytes[start..i].to_vec()).unwrap());
    }
    assert_eq!(fields[0], "P5");
    let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    assert_eq!(fields[3], "255");
    let pixels = bytes[i + 1..i + 1 + w * h].to_vec();
    Gray {
        width: w,
        height: h,
        pixels,
    }
}

/// Halves the image (2x2 box average), for faster tests.
pub fn half(g: &Gray) -> Gray {
    let (w, h) = (g.width / 2, g.height / 2);
    let mut pixels = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let s: u32 = [(0, 0), (1, 0), (0, 1), (1, 1)]
                .iter()
                .map(|(dx, dy)| u32::from(g.pixels[(2 * y + dy) * g.width + 2 * x + dx]))
                .sum();
            pixels.push(((s + 2) / 4) as u8);
        }
    }
    Gray {
        width: w,
        height: h,
        pixels,
    }
}

/// Crops/tiles the image to `w x h` (wrapping), e.g. 640x480 from the boat.
pub fn resize_tile(g: &Gray, w: usize, h: usize) -> Gray {
    let mut pixels = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            pixels.push(g.pixels[(y % g.height) * g.width + (x % g.width)]);
        }
    }
    Gray {
        width: w,
        height: h,
        pixels,
    }
}

pub fn header(stamp_sec: i32, frame: &str) -> Header {
    Header {
        stamp: Time::new(stamp_sec, 0),
        frame_id: frame.into(),
    }
}

/// A mono8 message.
pub fn mono8(g: &Gray, h: Header) -> Image {
    Image {
        header: h,
        height: g.height as u32,
        width: g.width as u32,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: g.width as u32,
        data: g.pixels.clone(),
    }
}

/// An rgb8 message whose luminance is exactly `g` (R = G = B).
pub fn rgb8(g: &Gray, h: Header) -> Image {
    Image {
        header: h,
        height: g.height as u32,
        width: g.width as u32,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: (g.width * 3) as u32,
        data: g.pixels.iter().flat_map(|&p| [p, p, p]).collect(),
    }
}

/// Runs `fut` for at most `limit`; `None` on timeout.
pub fn within<T>(limit: Duration, fut: impl Future<Output = T>) -> Option<T> {
    smol::block_on(smol::future::or(async { Some(fut.await) }, async {
        smol::Timer::after(limit).await;
        None
    }))
}

/// Something the tests take messages of type `M` from, one at a time.
pub trait Takes<M> {
    /// The next message (waits for one).
    fn next_message(&self) -> impl Future<Output = Result<M, String>>;
    /// A message if one is waiting.
    fn take(&self) -> Result<Option<(M, MessageInfo)>, String>;
}

impl<M: Message + 'static> Takes<M> for Subscription<M> {
    async fn next_message(&self) -> Result<M, String> {
        self.async_take()
            .await
            .map(|(m, _)| m)
            .map_err(|e| format!("{e:?}"))
    }
    fn take(&self) -> Result<Option<(M, MessageInfo)>, String> {
        Subscription::take(self).map_err(|e| format!("{e:?}"))
    }
}

/// How a test client reads the node's `keypoints`.
pub enum KeypointReader {
    /// ros2-client's serde path: what any Rust ROS user gets, and a check that the node's bulk
    /// encoder writes ordinary CDR.
    Serde(Subscription<KeypointArray>),
    /// A RustDDS reader with the tests' block CDR decoder (`common::decode`): what a subscriber
    /// that cares about latency uses (rclcpp's generated code decodes the same way, a block copy).
    Bulk(no_key::SimpleDataReader<KeypointArray, decode::BulkDecode>),
}

impl Takes<KeypointArray> for KeypointReader {
    async fn next_message(&self) -> Result<KeypointArray, String> {
        match self {
            KeypointReader::Serde(s) => s.next_message().await,
            KeypointReader::Bulk(r) => {
                let stream = r.as_async_stream();
                let mut stream = std::pin::pin!(stream);
                match stream.next().await {
                    Some(Ok(dcc)) => Ok(dcc.into_value()),
                    Some(Err(e)) => Err(format!("{e:?}")),
                    None => Err("the reader's stream ended".into()),
                }
            }
        }
    }
    fn take(&self) -> Result<Option<(KeypointArray, MessageInfo)>, String> {
        match self {
            KeypointReader::Serde(s) => Takes::take(s),
            KeypointReader::Bulk(r) => {
                r.drain_read_notifications();
                match r.try_take_one() {
                    Ok(Some(dcc)) => {
                        let info = MessageInfo::from(&dcc);
                        Ok(Some((dcc.into_value(), info)))
                    }
                    Ok(None) => Ok(None),
                    Err(e) => Err(format!("{e:?}")),
                }
            }
        }
    }
}

/// How a [`Client`] talks to the node.
#[derive(Debug, Clone, Copy)]
pub struct ClientOptions {
    /// Reliability of the image publisher (reliable, the default, matches either image
    /// subscription of the node; a camera driver on the sensor-data profile is best effort).
    pub images: TopicReliability,
    /// Reliability of the output subscriptions: reliable (the default) only matches the node's
    /// default reliable outputs; best effort matches either.
    pub outputs: TopicReliability,
    /// Read `keypoints` with the bulk decoder instead of serde.
    pub bulk_keypoints: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            images: TopicReliability::Reliable,
            outputs: TopicReliability::Reliable,
            bulk_keypoints: false,
        }
    }
}

/// A loopback-only ROS test client: publishes images, receives the node's outputs.
pub struct Client {
    pub node: Node,
    pub images: Publisher<Image>,
    pub keypoints: KeypointReader,
    pub matches: Subscription<MatchArray>,
    pub debug: Subscription<Image>,
    /// Stamps of every keypoints (`"keypoints"`) and matches (`"matches"`) message that
    /// [`Client::process`] took, whatever frame it was waiting for.
    pub seen: RefCell<Vec<(&'static str, Time)>>,
}

fn topic(
    node: &mut Node,
    name: &str,
    ty: ros2_client::MessageTypeName,
    qos: &QosProfile,
) -> ros2_client::dds::rustdds::Topic {
    node.create_topic(&Name::parse(name).unwrap(), ty, qos)
        .unwrap()
}

/// A topic as `Node::create_topic` makes it (absolute `name`) with a sample limit of `depth`.
fn limited_topic(
    ctx: &Context,
    name: &str,
    ty: ros2_client::MessageTypeName,
    qos: &QosProfile,
    depth: i32,
) -> ros2_client::dds::rustdds::Topic {
    use ros2_client::dds::rustdds::{QosPolicyBuilder, TopicKind, policy};
    let limits = QosPolicyBuilder::new()
        .resource_limits(policy::ResourceLimits {
            max_samples: depth,
            max_instances: 1,
            max_samples_per_instance: depth,
        })
        .build();
    let node_name = NodeName::new("/", "surfcl_test_client").unwrap();
    ctx.domain_participant()
        .create_topic(
            Name::parse(name).unwrap().to_dds_name("rt", &node_name, ""),
            ty.dds_msg_type(),
            &QosPolicies::from(qos).modify_by(&limits),
            TopicKind::NoKey,
        )
        .unwrap()
}

impl Client {
    /// A client on `domain`, using topics under `ns` ("/" for none).
    pub fn new(domain: u16, ns: &str, image_topic: &str) -> Client {
        Self::with_options(domain, ns, image_topic, ClientOptions::default())
    }

    /// A client with the QoS and keypoint decoding of `options`.
    pub fn with_options(
        domain: u16,
        ns: &str,
        image_topic: &str,
        options: ClientOptions,
    ) -> Client {
        let (ctx, mut node) = loopback_node(
            domain,
            "surfcl_test_client",
            NodeOptions::new()
                .enable_rosout(false)
                .start_parameter_services(false),
        );
        let qos = |r: TopicReliability| {
            match r {
                TopicReliability::Reliable => QosProfile::publisher_default(),
                TopicReliability::BestEffort => QosProfile::subscription_default(),
            }
            .history(History::KeepLast { depth: 10 })
        };
        let (image_qos, output_qos) = (qos(options.images), qos(options.outputs));
        let t = topic(&mut node, image_topic, msg::image_type(), &image_qos);
        let images = node.create_publisher::<Image>(&t, None).unwrap();
        let base = if ns == "/" {
            String::new()
        } else {
            ns.to_string()
        };
        // With a resource limit of its history depth, as the node's image topic (see
        // `surfcl_ros::node`): RustDDS's topic cache otherwise keeps 64 keypoint messages of
        // about 1 MB and reassembles each into fresh memory.
        let t = limited_topic(
            &ctx,
            &format!("{base}/keypoints"),
            msg::keypoint_array_type(),
            &output_qos,
            10,
        );
        let keypoints = if options.bulk_keypoints {
            let subscriber = ctx
                .domain_participant()
                .create_subscriber(&QosPolicies::from(&output_qos))
                .unwrap();
            KeypointReader::Bulk(
                subscriber
                    .create_simple_datareader_no_key::<KeypointArray, decode::BulkDecode>(&t, None)
                    .unwrap(),
            )
        } else {
            KeypointReader::Serde(node.create_subscription::<KeypointArray>(&t, None).unwrap())
        };
        let t = topic(
            &mut node,
            &format!("{base}/matches"),
            msg::match_array_type(),
            &output_qos,
        );
        let matches = node.create_subscription::<MatchArray>(&t, None).unwrap();
        let t = topic(
            &mut node,
            &format!("{base}/debug_image"),
            msg::image_type(),
            &output_qos,
        );
        let debug = node.create_subscription::<Image>(&t, None).unwrap();
        Client {
            node,
            images,
            keypoints,
            matches,
            debug,
            seen: RefCell::new(Vec::new()),
        }
    }

    /// Subscribes (reliable, keep last 10) to the node's diagnostics topic `topic`.
    pub fn diagnostics(&mut self, topic: &str) -> Subscription<DiagnosticArray> {
        let qos = QosProfile::publisher_default().history(History::KeepLast { depth: 10 });
        let t = self::topic(&mut self.node, topic, msg::diagnostic_array_type(), &qos);
        self.node
            .create_subscription::<DiagnosticArray>(&t, None)
            .unwrap()
    }

    /// Waits (bounded) until the node's image subscription and our output subscriptions are
    /// matched.
    pub fn wait_connected(&self, limit: Duration) {
        within(limit, self.images.wait_for_subscription(&self.node))
            .expect("node's image subscription not discovered");
        // A bulk reader is not a ros2-client subscription (no discovery wait of its own): the
        // matches publisher below belongs to the same node and is discovered with it, and the
        // latency test's warm-up frames are resent until their keypoints arrive.
        if let KeypointReader::Serde(k) = &self.keypoints {
            within(limit, k.wait_for_publisher(&self.node))
                .expect("node's keypoints publisher not discovered");
        }
        within(limit, self.matches.wait_for_publisher(&self.node))
            .expect("node's matches publisher not discovered");
    }

    /// Publishes `img` repeatedly (every `period`) until the node's output with the same stamp
    /// arrives (best-effort images may be lost); returns the keypoints and matches.
    pub fn process(&self, img: &Image, limit: Duration) -> (KeypointArray, MatchArray) {
        let deadline = Instant::now() + limit;
        let stamp = img.header.stamp;
        let mut kp = None;
        let mut m = None;
        while Instant::now() < deadline && (kp.is_none() || m.is_none()) {
            if kp.is_none() {
                self.images.publish(img.clone()).unwrap();
            }
            let until = Instant::now() + Duration::from_millis(1500);
            while Instant::now() < until && (kp.is_none() || m.is_none()) {
                if kp.is_none() {
                    kp = take_stamped_seen(
                        &self.keypoints,
                        stamp,
                        Duration::from_millis(50),
                        |k| k.header.stamp,
                        |t| self.seen.borrow_mut().push(("keypoints", t)),
                    );
                }
                if m.is_none() {
                    m = take_stamped_seen(
                        &self.matches,
                        stamp,
                        Duration::from_millis(50),
                        |k| k.header.stamp,
                        |t| self.seen.borrow_mut().push(("matches", t)),
                    );
                }
            }
        }
        (
            kp.expect("no keypoints for the frame"),
            m.expect("no matches for the frame"),
        )
    }
}

/// Takes messages until one has `stamp`, or `limit` passes.
pub fn take_stamped<M>(
    sub: &impl Takes<M>,
    stamp: Time,
    limit: Duration,
    stamp_of: impl Fn(&M) -> Time,
) -> Option<M> {
    take_stamped_seen(sub, stamp, limit, stamp_of, |_| {})
}

/// [`take_stamped`], also telling `seen` the stamp of every message taken.
pub fn take_stamped_seen<M>(
    sub: &impl Takes<M>,
    stamp: Time,
    limit: Duration,
    stamp_of: impl Fn(&M) -> Time,
    mut seen: impl FnMut(Time),
) -> Option<M> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        match within(left, sub.next_message()) {
            Some(Ok(m)) => {
                let t = stamp_of(&m);
                seen(t);
                if t == stamp {
                    return Some(m);
                }
            }
            Some(Err(_)) => {}
            None => break,
        }
    }
    None
}

/// Starts a node on `domain` with the given factory and parameters tweak.
pub fn start_node(
    domain: u16,
    factory: Arc<dyn ProcessorFactory>,
    tweak: impl FnOnce(&mut NodeConfig),
) -> RunningNode {
    let mut config = NodeConfig {
        domain_id: domain,
        log_to_stderr: true,
        ..NodeConfig::default()
    };
    tweak(&mut config);
    surfcl_ros::node::start(config, factory).unwrap()
}

#[cfg(not(feature = "backend"))]
pub mod fake;
pub mod faulty;

/// The factory the tests run the node with: the real CPU backend when the `backend` feature is
/// on, otherwise the stand-in.
pub fn factory() -> Arc<dyn ProcessorFactory> {
    #[cfg(feature = "backend")]
    {
        Arc::new(surfcl_ros::backend::BackendFactory)
    }
    #[cfg(not(feature = "backend"))]
    {
        Arc::new(fake::FakeFactory)
    }
}

/// Parameters for the tests: CPU backend (deterministic, available everywhere).
pub fn test_params() -> surfcl_ros::params::NodeParams {
    surfcl_ros::params::NodeParams {
        backend: surfcl_core::config::BackendChoice::Cpu,
        ..Default::default()
    }
}

/// Sends frames at a fixed rate, as a camera does (`period` `None`: back to back). Behind
/// schedule, a frame goes at once and the next one a period later (no burst), and a measured
/// frame more than a millisecond behind counts as late: the previous one took longer than the
/// period, so the rate is too high for the machine.
pub struct Pacer {
    period: Option<Duration>,
    due: Instant,
    late: u32,
}

impl Pacer {
    /// A pacer whose first frame is due now.
    pub fn new(period: Option<Duration>) -> Self {
        Self {
            period,
            due: Instant::now(),
            late: 0,
        }
    }

    /// Waits until the next frame is due (at most one period); `measured`: whether it counts
    /// for [`Pacer::late`].
    pub fn wait(&mut self, measured: bool) {
        let Some(period) = self.period else {
            return;
        };
        let now = Instant::now();
        match self.due.checked_duration_since(now) {
            Some(wait) => std::thread::sleep(wait),
            None => {
                if measured && now - self.due > Duration::from_millis(1) {
                    self.late += 1;
                }
                self.due = now;
            }
        }
        self.due += period;
    }

    /// Measured frames that went out late.
    pub fn late(&self) -> u32 {
        self.late
    }
}

/// A ROS 2 node named `/name` on `domain`, loopback only, its spinner running in the background;
/// with its context (for the topics a context names, such as `/rosout`).
pub fn loopback_node(domain: u16, name: &str, options: NodeOptions) -> (Context, Node) {
    let dp = DomainParticipantBuilder::new(domain)
        .with_only_networks([Ipv4Addr::LOCALHOST])
        .build()
        .unwrap();
    let ctx = Context::from_domain_participant(dp).unwrap();
    let mut node = ctx
        .new_node(NodeName::new("/", name).unwrap(), options)
        .unwrap();
    smol::spawn(node.spinner().unwrap().spin()).detach();
    (ctx, node)
}

/// Asserts that the node's keypoints and descriptors in `kp` are the direct detection `want`
/// (`what` names the case in a failure).
pub fn assert_keypoints_equal(kp: &KeypointArray, want: &Detection, what: &str) {
    assert_eq!(
        kp.keypoints,
        want.keypoints
            .iter()
            .map(msg::KeypointMsg::from)
            .collect::<Vec<_>>(),
        "{what}"
    );
    assert_eq!(
        kp.descriptors,
        want.descriptors
            .iter()
            .flatten()
            .copied()
            .collect::<Vec<_>>(),
        "{what}"
    );
}
