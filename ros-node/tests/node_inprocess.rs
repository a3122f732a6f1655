//! In-process tests of the node: a ros2-client test client on loopback publishes boat images
//! and receives keypoints and matches. Each test has its own ROS domain id; every wait is
//! bounded.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ros2_client::qos::History;
use ros2_client::rcl_interfaces::{SetParametersRequest, SetParametersResponse};
use ros2_client::{Name, Parameter, ParameterValue, QosProfile, ServiceMapping, ServiceTypeName};
use surfcl_core::GrayImage;
use surfcl_ros::msg::{Image, KeypointMsg, MatchMsg};
use surfcl_ros::node::TopicReliability;
use surfcl_ros::params::NodeParams;
use surfcl_ros::processor::{Detection, Processor, ProcessorError, ProcessorFactory};

const LIMIT: Duration = Duration::from_secs(60);

fn boat(n: u32) -> Gray {
    half(&read_pgm(&data(&format!("oxford-boat/img{n}.pgm"))))
}

#[test]
fn boat_keypoints_and_matches_equal_direct_backend() {
    equal_direct_backend(111, TopicReliability::Reliable, ClientOptions::default());
}

/// The same through best-effort outputs (the low-latency setting), read by a best-effort
/// client that decodes keypoints with the bulk decoder and publishes images best effort.
#[test]
fn best_effort_outputs_and_bulk_decoding_give_the_same_results() {
    equal_direct_backend(
        115,
        TopicReliability::BestEffort,
        ClientOptions {
            images: TopicReliability::BestEffort,
            outputs: TopicReliability::BestEffort,
            bulk_keypoints: true,
        },
    );
}

/// Records, for every `detect_into` call, the descriptor capacity the node handed in, and
/// passes the call on to the production processor.
struct Recording {
    inner: Box<dyn Processor>,
    calls: Arc<Mutex<Vec<usize>>>,
}

impl Processor for Recording {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn detect(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
    ) -> Result<Detection, ProcessorError> {
        self.inner.detect(image, params)
    }
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        self.calls.lock().unwrap().push(out.descriptors.capacity());
        self.inner.detect_into(image, params, out)
    }
    fn match_frames(
        &mut self,
        query: &mut Detection,
        train: &mut Detection,
        params: &NodeParams,
    ) -> Result<Vec<MatchMsg>, ProcessorError> {
        self.inner.match_frames(query, train, params)
    }
}

struct RecordingFactory(Arc<Mutex<Vec<usize>>>);

impl ProcessorFactory for RecordingFactory {
    fn check(&self, params: &NodeParams) -> Result<(), ProcessorError> {
        factory().check(params)
    }
    fn open(&self, params: &NodeParams) -> Result<Box<dyn Processor>, ProcessorError> {
        Ok(Box::new(Recording {
            inner: factory().open(params)?,
            calls: self.0.clone(),
        }))
    }
}

/// From the third frame on, the node detects into the arrays of the frame before the previous
/// one (which it no longer needs) instead of fresh ones, and the outputs stay those of each
/// frame alone.
#[test]
fn detections_refill_the_arrays_of_an_earlier_frame() {
    let domain = 116;
    let calls = Arc::new(Mutex::new(Vec::new()));
    let node = start_node(domain, Arc::new(RecordingFactory(calls.clone())), |c| {
        c.params = test_params();
    });
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let (img1, img2) = (boat(1), boat(2));
    let mut received = Vec::new();
    for i in 0..5 {
        let img = if i % 2 == 0 { &img1 } else { &img2 };
        let (kp, m) = client.process(&mono8(img, header(i + 1, "cam")), LIMIT);
        assert_eq!(kp.header, header(i + 1, "cam"));
        received.push((kp, m));
    }
    // Same picture, same keypoints, descriptors and matches, whatever arrays they went through.
    for i in 2..5 {
        assert_eq!(
            received[i].0.keypoints,
            received[i - 2].0.keypoints,
            "frame {i}"
        );
        assert_eq!(
            received[i].0.descriptors,
            received[i - 2].0.descriptors,
            "frame {i}"
        );
    }
    assert_eq!(received[3].1.matches, received[1].1.matches);
    assert_eq!(received[4].1.matches, received[2].1.matches);
    // One call per frame (more only if the client had to publish a frame again).
    let calls = calls.lock().unwrap().clone();
    assert!(calls.len() >= 5, "{calls:?}");
    assert_eq!(&calls[..2], &[0, 0], "nothing to reuse yet: {calls:?}");
    let fewest = received
        .iter()
        .map(|r| r.0.keypoints.len())
        .min()
        .unwrap_or(0);
    assert!(fewest > 0);
    assert!(
        calls[2..].iter().all(|&capacity| capacity >= fewest),
        "from the third frame on, the arrays of an earlier frame: {calls:?}"
    );
    node.stop();
}

fn equal_direct_backend(domain: u16, outputs: TopicReliability, options: ClientOptions) {
    let node = start_node(domain, factory(), |c| {
        c.params = test_params();
        c.output_reliability = outputs;
    });
    let client = Client::with_options(domain, "/", "/image", options);
    client.wait_connected(LIMIT);

    let (img1, img2) = (boat(1), boat(2));
    let (kp1, m1) = client.process(&mono8(&img1, header(1, "cam")), LIMIT);
    let (kp2, m2) = client.process(&rgb8(&img2, header(2, "cam")), LIMIT);

    // The same images straight through the backend.
    let params = test_params();
    let mut direct = factory().open(&params).unwrap();
    let d1 = direct
        .detect(
            &GrayImage::new(&img1.pixels, img1.width, img1.height).unwrap(),
            &params,
        )
        .unwrap();
    let d2 = direct
        .detect(
            &GrayImage::new(&img2.pixels, img2.width, img2.height).unwrap(),
            &params,
        )
        .unwrap();
    let dm = direct
        .match_frames(&mut d2.clone(), &mut d1.clone(), &params)
        .unwrap();

    assert!(!d1.keypoints.is_empty());
    assert_eq!(kp1.header, header(1, "cam"));
    assert_eq!(
        kp1.keypoints,
        d1.keypoints
            .iter()
            .map(KeypointMsg::from)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        kp1.descriptors,
        d1.descriptors.iter().flatten().copied().collect::<Vec<_>>()
    );
    assert!(kp1.descriptors_q7.is_empty());
    assert_eq!(
        (kp1.descriptor_length, kp1.dropped as usize),
        (64, d1.dropped)
    );
    // rgb8 with R = G = B has exactly the gray luminance.
    assert_eq!(
        kp2.keypoints,
        d2.keypoints
            .iter()
            .map(KeypointMsg::from)
            .collect::<Vec<_>>()
    );

    assert!(
        m1.matches.is_empty(),
        "first frame has nothing to match against"
    );
    assert_eq!(m2.header, header(2, "cam"));
    assert_eq!(m2.previous_header, header(1, "cam"));
    assert_eq!(m2.matches, dm);
    assert!(!dm.is_empty(), "boat 1 -> 2 should match");
    for m in &m2.matches {
        assert!(
            (m.query as usize) < kp2.keypoints.len() && (m.train as usize) < kp1.keypoints.len()
        );
    }
    // The counters are updated after publishing: poll (bounded).
    let deadline = Instant::now() + Duration::from_secs(5);
    while node.stats().processed < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = node.stats();
    assert_eq!(stats.malformed, 0);
    assert!(stats.processed >= 2);
    node.stop();
}

#[test]
fn malformed_messages_are_dropped_and_node_keeps_running() {
    let domain = 112;
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let small = resize_tile(&boat(1), 160, 120);
    let good = mono8(&small, header(50, "cam"));
    let bad = [
        Image {
            data: vec![0; 100],
            ..mono8(&small, header(10, "bad-length"))
        },
        Image {
            width: 0,
            step: 0,
            data: vec![],
            ..mono8(&small, header(11, "zero-width"))
        },
        Image {
            encoding: "yuv422".into(),
            ..mono8(&small, header(12, "bad-encoding"))
        },
        Image {
            width: 100_000,
            height: 100_000,
            step: 100_000,
            data: vec![1; 64],
            ..mono8(&small, header(13, "huge"))
        },
        Image {
            step: 10,
            data: vec![0; 10 * 120],
            ..mono8(&small, header(14, "short-step"))
        },
    ];
    let deadline = Instant::now() + LIMIT;
    // Best-effort delivery: resend the batch until the node has seen all of them.
    while node.stats().malformed < bad.len() as u64 {
        assert!(
            Instant::now() < deadline,
            "malformed messages never arrived: {:?}",
            node.stats()
        );
        for b in &bad {
            client.images.publish(b.clone()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (kp, m) = client.process(&good, LIMIT);
    assert_eq!(kp.header, header(50, "cam"));
    assert!(!kp.keypoints.is_empty());
    assert!(
        m.matches.is_empty(),
        "malformed frames must not become the previous frame"
    );
    assert_eq!(m.previous_header, surfcl_ros::msg::Header::default());
    // Nothing was published for a malformed stamp.
    while let Ok(Some((k, _))) = client.keypoints.take() {
        assert!(
            k.header.stamp.to_nanos() >= 50_000_000_000,
            "{:?}",
            k.header
        );
    }
    // The counters are updated after publishing: poll (bounded).
    let deadline = Instant::now() + Duration::from_secs(5);
    while node.stats().processed < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = node.stats();
    assert!(s.malformed >= bad.len() as u64 && s.processed >= 1, "{s:?}");
    node.stop();
}

#[test]
fn parameters_apply_on_next_frame_and_bad_values_are_refused() {
    let domain = 113;
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let mut client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let img = boat(1);
    let (kp1, _) = client.process(&mono8(&img, header(1, "cam")), LIMIT);
    let limit = (kp1.keypoints.len() / 3).max(1) as i64;

    let results = set_param_calls(
        &mut client,
        node.fully_qualified_name(),
        vec![
            ("octaves", ParameterValue::Integer(9)),
            ("backend", ParameterValue::String("cuda".into())),
            ("max_keypoints", ParameterValue::String("many".into())),
        ],
    );
    for (ok, reason) in &results {
        assert!(!ok && !reason.is_empty(), "{results:?}");
    }
    assert_eq!(
        node.params(),
        test_params(),
        "refused values must not change anything"
    );

    let results = set_param_calls(
        &mut client,
        node.fully_qualified_name(),
        vec![
            ("max_keypoints", ParameterValue::Integer(limit)),
            ("descriptor", ParameterValue::String("q7".into())),
        ],
    );
    assert_eq!(results, vec![(true, String::new()); 2]);
    let (kp2, _) = client.process(&mono8(&img, header(2, "cam")), LIMIT);
    assert_eq!(kp2.keypoints.len() as i64, limit);
    assert_eq!(
        kp2.keypoints[..],
        kp1.keypoints[..limit as usize],
        "the strongest are kept"
    );
    assert!(kp2.dropped as usize >= kp1.keypoints.len() - limit as usize);
    assert!(kp2.descriptors.is_empty());
    assert_eq!(kp2.descriptors_q7.len(), 64 * limit as usize);
    let expect_q7: Vec<i8> = kp1.descriptors[..64 * limit as usize]
        .iter()
        .map(|f| (f * 127.0).round().clamp(-127.0, 127.0) as i8)
        .collect();
    assert_eq!(kp2.descriptors_q7, expect_q7);
    node.stop();
}

fn set_param_calls(
    client: &mut Client,
    fqn: &str,
    params: Vec<(&str, ParameterValue)>,
) -> Vec<(bool, String)> {
    let qos = QosProfile::publisher_default().history(History::KeepLast { depth: 1 });
    let svc = client
        .node
        .create_client::<SetParametersRequest, SetParametersResponse>(
            ServiceMapping::Enhanced,
            &Name::new(fqn, "set_parameters").unwrap(),
            &ServiceTypeName::new("rcl_interfaces", "SetParameters"),
            qos.clone(),
            qos,
        )
        .unwrap();
    within(LIMIT, svc.wait_for_service(&client.node))
        .expect("set_parameters service not discovered");
    let req = SetParametersRequest {
        parameter: params
            .into_iter()
            .map(|(name, value)| {
                Parameter {
                    name: name.into(),
                    value,
                }
                .into()
            })
            .collect(),
    };
    // `wait_for_service` returns once the request path is matched; the reply path (the node's
    // response writer to our reader) can still be in discovery, and a reply written before it is
    // matched is lost. Setting parameters is idempotent, so the call is simply made again, a
    // bounded number of times.
    let mut resp = None;
    for _ in 0..6 {
        if let Some(r) = within(Duration::from_secs(10), svc.async_call_service(req.clone())) {
            resp = Some(r);
            break;
        }
    }
    let resp = resp.expect("no reply in 6 attempts").unwrap();
    resp.results
        .into_iter()
        .map(|r| (r.successful, r.reason))
        .collect()
}

#[test]
fn namespace_remap_and_debug_image() {
    let domain = 114;
    let node = start_node(domain, factory(), |c| {
        c.params = test_params();
        c.params.debug_image = true;
        c.namespace = "/robot".into();
        c.node_name = "feat".into();
        c.remaps = vec![("image".into(), "/camera/image_raw".into())];
    });
    assert_eq!(node.fully_qualified_name(), "/robot/feat");
    let client = Client::new(domain, "/robot", "/camera/image_raw");
    client.wait_connected(LIMIT);
    let img = resize_tile(&boat(1), 200, 150);
    let (kp, _) = client.process(&mono8(&img, header(7, "cam")), LIMIT);
    assert!(!kp.keypoints.is_empty());
    let dbg = take_stamped(
        &client.debug,
        kp.header.stamp,
        Duration::from_secs(10),
        |m| m.header.stamp,
    )
    .expect("no debug image");
    assert_eq!(
        (dbg.width, dbg.height, dbg.encoding.as_str(), dbg.step),
        (200, 150, "rgb8", 600)
    );
    assert_eq!(dbg.data.len(), 200 * 150 * 3);
    // Away from the drawings the picture is the gray frame.
    let gray_px = dbg
        .data
        .chunks(3)
        .zip(&img.pixels)
        .filter(|(p, g)| p == &[**g, **g, **g])
        .count();
    assert!(gray_px > 200 * 150 / 2 && gray_px < 200 * 150, "{gray_px}");
    node.stop();
}
