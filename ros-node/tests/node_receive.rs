//! The receive side of the node: receiving never waits for processing (a slow backend does not
//! hold back image messages; frames that arrive while one is processed replace the waiting one
//! and are counted), and the diagnostics carry the per-stage breakdown and the loss counters.
//! Each test has its own ROS domain id; every wait is bounded.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use surfcl_core::GrayImage;
use surfcl_ros::msg::{DiagnosticArray, MatchMsg};
use surfcl_ros::node::StageTimes;
use surfcl_ros::params::NodeParams;
use surfcl_ros::processor::{Detection, Processor, ProcessorError, ProcessorFactory};

/// A backend that takes `delay` for every detection.
struct Slow {
    inner: Arc<dyn ProcessorFactory>,
    delay: Duration,
}

struct SlowProcessor {
    inner: Box<dyn Processor>,
    delay: Duration,
}

impl ProcessorFactory for Slow {
    fn check(&self, params: &NodeParams) -> Result<(), ProcessorError> {
        self.inner.check(params)
    }
    fn open(&self, params: &NodeParams) -> Result<Box<dyn Processor>, ProcessorError> {
        Ok(Box::new(SlowProcessor {
            inner: self.inner.open(params)?,
            delay: self.delay,
        }))
    }
}

impl Processor for SlowProcessor {
    fn describe(&self) -> String {
        format!("slow {}", self.inner.describe())
    }
    fn detect(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
    ) -> Result<Detection, ProcessorError> {
        std::thread::sleep(self.delay);
        self.inner.detect(image, params)
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

/// 20 frames of 578 KB (850x680 rgb8) published back to back while each detection takes 500 ms:
/// all 20 are received while the slow backend has processed fewer than half of them (receiving
/// tied to processing would receive one frame per detection, 10 s for 20), the ones that
/// arrived while a frame was processed are counted as replaced, and every frame is accounted
/// for.
#[test]
fn receiving_does_not_wait_for_processing() {
    let domain = 151;
    let node = start_node(
        domain,
        Arc::new(Slow {
            inner: factory(),
            delay: Duration::from_millis(500),
        }),
        |c| c.params = test_params(),
    );
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(Duration::from_secs(30));
    let img = read_pgm(&data("oxford-boat/img1.pgm"));
    let t0 = Instant::now();
    for i in 0..20 {
        let msg = rgb8(&img, header(100 + i, "cam"));
        assert_eq!(msg.data.len(), 850 * 680 * 3);
        client.images.publish(msg).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let deadline = t0 + Duration::from_secs(8);
    let mut s = node.stats();
    while s.received + s.lost < 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        s = node.stats();
    }
    let took = t0.elapsed();
    eprintln!("20 frames received or counted lost after {took:?}: {s:?}");
    assert_eq!(
        s.received + s.lost,
        20,
        "frames still not received after {took:?}: {s:?}"
    );
    assert!(
        s.processed < 10,
        "the slow backend cannot have processed most frames yet: {s:?}"
    );
    // Let the processing thread drain the slot, then account for every frame.
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.processed + s.dropped_stale + s.lost < 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        s = node.stats();
    }
    assert_eq!(s.processed + s.dropped_stale + s.lost, 20, "{s:?}");
    assert!(
        s.dropped_stale >= 10,
        "frames waiting were not replaced: {s:?}"
    );
    node.stop();
}

/// `diagnostics` carries the stage breakdown (every stage's mean and max), the loss counters,
/// and stage times that add up: the node's time covers its stages, detection dominates on the
/// CPU backend.
#[test]
fn diagnostics_report_stage_times_and_counters() {
    let domain = 152;
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let mut client = Client::new(domain, "/", "/image");
    let diag = client.diagnostics("/diagnostics");
    client.wait_connected(Duration::from_secs(30));
    let img = half(&read_pgm(&data("oxford-boat/img1.pgm")));
    for i in 0..3 {
        client.process(
            &mono8(&img, header(200 + i, "cam")),
            Duration::from_secs(60),
        );
    }
    // The first report that saw processed frames in its window.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut found = None;
    while found.is_none() && Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        if let Some(Ok((arr, _))) = within(left, diag.async_take()) {
            let arr: DiagnosticArray = arr;
            found = arr.status.into_iter().find(|s| {
                s.values
                    .iter()
                    .any(|kv| kv.key == "stage_detect_ms_mean" && kv.value != "0.000")
            });
        }
    }
    let status = found.expect("no diagnostics with stage times");
    let get = |k: &str| -> f64 {
        status
            .values
            .iter()
            .find(|kv| kv.key == k)
            .unwrap_or_else(|| panic!("no {k} in {status:?}"))
            .value
            .parse()
            .unwrap()
    };
    for (name, _) in StageTimes::default().named() {
        let (mean, max) = (
            get(&format!("stage_{name}_ms_mean")),
            get(&format!("stage_{name}_ms_max")),
        );
        assert!(mean >= 0.0 && max >= mean - 1e-3, "{name}: {mean} {max}");
    }
    assert!(get("stage_detect_ms_mean") > 0.0);
    assert!(get("stage_node_ms_mean") >= get("stage_detect_ms_mean"));
    assert!(get("stage_transport_ms_mean") > 0.0);
    assert_eq!(get("frames_lost"), 0.0);
    assert!(get("frames_received") >= 3.0);
    let last = node.stats().last_stages;
    assert!(last.node_ms >= last.detect_ms + last.match_ms, "{last:?}");
    // Keypoints are published before matching: their share ends after detection, before the
    // node's time does.
    assert!(
        last.keypoints_out_ms >= last.detect_ms && last.keypoints_out_ms <= last.node_ms,
        "{last:?}"
    );
    node.stop();
}
