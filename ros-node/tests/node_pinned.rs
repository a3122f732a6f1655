//! The node on the OpenCL backend converts each frame on receipt into one of the backend's pinned
//! input frames (`Processor::input_frame`, then `detect_frame_into`), or, with no frame free,
//! into the detector's pinned input area (`Processor::input_area`, then `detect_input_into`):
//! the outputs of both equal those of the fallback path (conversion into the node's memory, then
//! `detect_into`) for every encoding, with padded rows. Three in-process nodes on loopback, one
//! per path, each on its own ROS domain id (161, 162, 163); every wait is bounded. Needs an OpenCL device (PoCL will do): without one the
//! backend does not open and the test fails rather than passing vacuously.
#![cfg(feature = "backend")]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use surfcl_core::GrayImage;
use surfcl_core::config::BackendChoice;
use surfcl_ros::backend::BackendFactory;
use surfcl_ros::convert::{self, luminance};
use surfcl_ros::msg::{Image, KeypointArray, KeypointMsg, MatchArray, MatchMsg};
use surfcl_ros::params::NodeParams;
use surfcl_ros::processor::{Detection, InputFrame, Processor, ProcessorError, ProcessorFactory};

const LIMIT: Duration = Duration::from_secs(60);

/// Calls that reached the production processor, per path.
#[derive(Debug, Default)]
struct Calls {
    detect_into: AtomicUsize,
    input_area: AtomicUsize,
    detect_input_into: AtomicUsize,
    input_frame: AtomicUsize,
    detect_frame_into: AtomicUsize,
}

/// Which of the production processor's pinned memory the node is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Input frames and the input area (as deployed).
    Frames,
    /// The input area only.
    Area,
    /// Neither: the fallback path.
    Fallback,
}

/// The production processor, with its input frames and area offered or hidden as `path` says;
/// counts the detection calls either way.
struct Counting {
    inner: Box<dyn Processor>,
    path: Path,
    calls: Arc<Calls>,
}

impl Processor for Counting {
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
        self.calls.detect_into.fetch_add(1, Ordering::SeqCst);
        self.inner.detect_into(image, params, out)
    }
    fn input_area(
        &mut self,
        width: usize,
        height: usize,
        params: &NodeParams,
    ) -> Result<Option<&mut [u8]>, ProcessorError> {
        self.calls.input_area.fetch_add(1, Ordering::SeqCst);
        if self.path == Path::Fallback {
            return Ok(None);
        }
        self.inner.input_area(width, height, params)
    }
    fn detect_input_into(
        &mut self,
        width: usize,
        height: usize,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        self.calls.detect_input_into.fetch_add(1, Ordering::SeqCst);
        self.inner.detect_input_into(width, height, params, out)
    }
    fn input_frame(
        &mut self,
        capacity: usize,
    ) -> Result<Option<Box<dyn InputFrame>>, ProcessorError> {
        self.calls.input_frame.fetch_add(1, Ordering::SeqCst);
        if self.path != Path::Frames {
            return Ok(None);
        }
        self.inner.input_frame(capacity)
    }
    fn detect_frame_into(
        &mut self,
        frame: &mut dyn InputFrame,
        width: usize,
        height: usize,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        self.calls.detect_frame_into.fetch_add(1, Ordering::SeqCst);
        self.inner
            .detect_frame_into(frame, width, height, params, out)
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

struct CountingFactory {
    path: Path,
    calls: Arc<Calls>,
}

impl ProcessorFactory for CountingFactory {
    fn check(&self, params: &NodeParams) -> Result<(), ProcessorError> {
        BackendFactory.check(params)
    }
    fn open(&self, params: &NodeParams) -> Result<Box<dyn Processor>, ProcessorError> {
        Ok(Box::new(Counting {
            inner: BackendFactory.open(params)?,
            path: self.path,
            calls: self.calls.clone(),
        }))
    }
}

fn opencl_params() -> NodeParams {
    NodeParams {
        backend: BackendChoice::OpenCl,
        ..NodeParams::default()
    }
}

/// Pixel `p` of a gray picture as a colour whose channels differ (so that a swapped channel
/// order changes the luminance).
fn colour(p: u8) -> [u8; 3] {
    [p, p / 2 + 60, 255 - p]
}

/// `g` as an `encoding` message whose rows are `padding` bytes longer than the pixels (the
/// padding filled with a value no conversion should read).
fn message(g: &Gray, encoding: &str, padding: usize, stamp: i32) -> Image {
    let bpp = convert::Encoding::parse(encoding)
        .unwrap()
        .bytes_per_pixel();
    let step = g.width * bpp + padding;
    let mut data = Vec::with_capacity(step * g.height);
    for row in g.pixels.chunks(g.width) {
        for &p in row {
            let [r, gr, b] = colour(p);
            match encoding {
                "mono8" => data.push(p),
                "rgb8" => data.extend([r, gr, b]),
                "bgr8" => data.extend([b, gr, r]),
                "rgba8" => data.extend([r, gr, b, 7]),
                "bgra8" => data.extend([b, gr, r, 7]),
                other => panic!("no test pixels for {other}"),
            }
        }
        data.extend(std::iter::repeat_n(0xee, padding));
    }
    Image {
        header: header(stamp, "cam"),
        height: g.height as u32,
        width: g.width as u32,
        encoding: encoding.into(),
        is_bigendian: 0,
        step: step as u32,
        data,
    }
}

/// The frames both nodes get: two boat pictures alternating (so that every frame after the
/// first has matches), in each encoding, mono8 packed and padded, the others padded.
fn frames() -> Vec<Image> {
    let boat = |n: u32| {
        resize_tile(
            &half(&read_pgm(&data(&format!("oxford-boat/img{n}.pgm")))),
            240,
            180,
        )
    };
    let pictures = [boat(1), boat(2)];
    let cases = [
        ("mono8", 0),
        ("mono8", 6),
        ("rgb8", 5),
        ("bgr8", 3),
        ("rgba8", 4),
        ("bgra8", 9),
    ];
    let mut stamp = 0;
    let mut out = Vec::new();
    for (encoding, padding) in cases {
        for picture in &pictures {
            stamp += 1;
            out.push(message(picture, encoding, padding, stamp));
        }
    }
    out
}

/// Runs `frames` through a node on `domain` whose processor offers its pinned memory as `path`
/// says; returns the outputs of every frame, the calls that reached the processor and the
/// frames the node received into input frames.
fn run_node(
    domain: u16,
    path: Path,
    frames: &[Image],
) -> (Vec<(KeypointArray, MatchArray)>, Arc<Calls>, u64) {
    let calls = Arc::new(Calls::default());
    let factory = Arc::new(CountingFactory {
        path,
        calls: calls.clone(),
    });
    let node = start_node(domain, factory, |c| c.params = opencl_params());
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let outputs = frames
        .iter()
        .map(|frame| {
            let (kp, m) = client.process(frame, LIMIT);
            assert_eq!(kp.header, frame.header);
            (kp, m)
        })
        .collect();
    let stats = node.stats();
    assert_eq!((stats.malformed, stats.failed), (0, 0), "{stats:?}");
    node.stop();
    (outputs, calls, stats.received_into_frames)
}

#[test]
fn frames_received_into_pinned_memory_give_the_fallback_paths_outputs() {
    let frames = frames();
    let (received, received_calls, into_frames) = run_node(163, Path::Frames, &frames);
    let (pinned, pinned_calls, none) = run_node(161, Path::Area, &frames);
    assert_eq!(none, 0);
    let (fallback, fallback_calls, none) = run_node(162, Path::Fallback, &frames);
    assert_eq!(none, 0);

    // Each node took its path for every frame (more calls only if the client sent a frame
    // again). With input frames, the first frame finds none (they are made after it is
    // published) and goes through the input area; every later one was converted on receipt.
    let n = frames.len();
    let count = |c: &AtomicUsize| c.load(Ordering::SeqCst);
    assert!(
        into_frames >= n as u64 - 1,
        "{into_frames} {received_calls:?}"
    );
    assert!(
        count(&received_calls.detect_frame_into) >= n - 1,
        "{received_calls:?}"
    );
    assert!(
        count(&received_calls.detect_input_into) >= 1,
        "{received_calls:?}"
    );
    assert_eq!(count(&received_calls.detect_into), 0, "{received_calls:?}");
    assert_eq!(
        count(&pinned_calls.detect_frame_into),
        0,
        "{pinned_calls:?}"
    );
    assert!(
        count(&pinned_calls.detect_input_into) >= n,
        "{pinned_calls:?}"
    );
    assert_eq!(count(&pinned_calls.detect_into), 0, "{pinned_calls:?}");
    assert!(
        count(&fallback_calls.detect_into) >= n,
        "{fallback_calls:?}"
    );
    assert_eq!(
        count(&fallback_calls.detect_input_into),
        0,
        "{fallback_calls:?}"
    );

    // The same keypoints, descriptors and matches, frame for frame.
    let params = opencl_params();
    let mut direct = BackendFactory.open(&params).unwrap();
    for (i, (((kp, m), (want_kp, want_m)), (got_kp, got_m))) in
        pinned.iter().zip(&fallback).zip(&received).enumerate()
    {
        let what = format!(
            "frame {i}: {} with step {}",
            frames[i].encoding, frames[i].step
        );
        assert!(!kp.keypoints.is_empty(), "{what}");
        assert_eq!(kp.keypoints, want_kp.keypoints, "{what}");
        assert_eq!(got_kp.keypoints, want_kp.keypoints, "{what}: input frames");
        assert_eq!(
            got_kp.descriptors, want_kp.descriptors,
            "{what}: input frames"
        );
        assert_eq!(got_kp.dropped, want_kp.dropped, "{what}: input frames");
        assert_eq!(got_m.matches, want_m.matches, "{what}: input frames");
        assert_eq!(got_m.previous_header, want_m.previous_header, "{what}");
        assert_eq!(kp.descriptors, want_kp.descriptors, "{what}");
        assert_eq!(kp.dropped, want_kp.dropped, "{what}");
        assert_eq!(m.matches, want_m.matches, "{what}");
        assert_eq!(m.previous_header, want_m.previous_header, "{what}");
        if i > 0 {
            assert!(!m.matches.is_empty(), "{what}");
        }
        // And both are the detection of the frame's luminance, whatever its encoding.
        let layout = convert::validate(&frames[i]).unwrap();
        let expected_gray: Vec<u8> = frames[i]
            .data
            .chunks(layout.step)
            .flat_map(|row| {
                row[..layout.width * layout.encoding.bytes_per_pixel()]
                    .chunks(layout.encoding.bytes_per_pixel())
                    .map(|px| match frames[i].encoding.as_str() {
                        "mono8" => px[0],
                        "rgb8" | "rgba8" => luminance(px[0], px[1], px[2]),
                        _ => luminance(px[2], px[1], px[0]),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let d = direct
            .detect(
                &GrayImage::new(&expected_gray, layout.width, layout.height).unwrap(),
                &params,
            )
            .unwrap();
        let expected: Vec<KeypointMsg> = d.keypoints.iter().map(KeypointMsg::from).collect();
        assert_eq!(kp.keypoints, expected, "{what}");
    }
}
