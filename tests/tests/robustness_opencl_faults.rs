//! Fault injection inside the OpenCL backend (`surfcl_gpu::opencl::inject`), on PoCL in CI: a
//! failed buffer allocation, program build, upload, kernel enqueue or readback surfaces as the
//! typed error of that operation; nothing partial is returned; the pipeline gives exactly the
//! reference results for the next frames (or, when it failed while being made, can be made
//! again); a stream skips the one failed frame and matches the next good frame against the last
//! good one; the CLI exits non-zero with the reason.

use std::sync::OnceLock;

use surfcl_cli::io::OwnedGray;
use surfcl_core::GrayImage;
use surfcl_core::harris::HarrisConfig;
use surfcl_core::matcher::MatchConfig;
use surfcl_core::surf::SurfConfig;
use surfcl_gpu::opencl::inject::{
    CL_FAULT_ENV, ClFaultPlan, FaultPoint, INJECTED, clear_plan, set_plan,
};
use surfcl_gpu::opencl::{
    DetectOutput, DetectorConfig, GpuMatcher, MatchTimings, OpenClError, StreamFrame,
    StreamPipeline, SurfPipeline, SurfPipelineConfig,
};
use surfcl_gpu::opencl::{HarrisPipeline, HarrisPipelineConfig};
use surfcl_tests::{boat_crop, core_matches, detect_in_child, require_opencl, run_child_test};

const W: usize = 200;
const H: usize = 160;

/// A `W x H` crop of boat image 1 at `(x, y)`: consecutive offsets overlap, so frames match.
fn crop(x: usize, y: usize) -> OwnedGray {
    boat_crop(1, x, y, W, H)
}

fn frames() -> Vec<OwnedGray> {
    [(300, 200), (306, 203), (311, 207), (317, 210), (322, 214)]
        .iter()
        .map(|&(x, y)| crop(x, y))
        .collect()
}

/// [`frames`] as the core's images, the frames made once for all the tests (which only read
/// them).
fn views() -> Vec<GrayImage<'static>> {
    static FRAMES: OnceLock<Vec<OwnedGray>> = OnceLock::new();
    FRAMES
        .get_or_init(frames)
        .iter()
        .map(|f| f.view().unwrap())
        .collect()
}

fn surf_config() -> SurfPipelineConfig {
    SurfPipelineConfig {
        max_width: W,
        max_height: H,
        surf: SurfConfig::default(),
        max_keypoints: 300,
        local_size: None,
    }
}

fn harris_config() -> HarrisPipelineConfig {
    HarrisPipelineConfig::new(W, H, HarrisConfig::default(), 300)
}

fn plan(point: FaultPoint, nth: u32) {
    set_plan(ClFaultPlan { point, nth });
}

/// Whether `e` is the typed error of an injected failure at `point`.
fn is_injected(e: &OpenClError, point: FaultPoint) -> bool {
    let typed = match point {
        FaultPoint::Allocate => matches!(e, OpenClError::Allocation { .. }),
        FaultPoint::Build => matches!(e, OpenClError::Build { .. }),
        FaultPoint::Upload | FaultPoint::Enqueue | FaultPoint::Readback => {
            matches!(e, OpenClError::Runtime { .. })
        }
    };
    typed && e.to_string().contains(INJECTED)
}

fn same(a: &DetectOutput, b: &DetectOutput) -> bool {
    a.keypoints == b.keypoints && a.descriptors == b.descriptors && a.candidates == b.candidates
}

/// Per-frame faults (upload, every kernel enqueue of a frame, readback) on the SURF and the
/// Harris pipeline: a typed error for that frame, then the reference results again.
#[test]
fn frame_faults_are_typed_and_the_pipeline_stays_usable() {
    require_opencl();
    let views = views();
    let mut surf_ref = SurfPipeline::open(None, surf_config()).unwrap();
    let mut harris_ref = HarrisPipeline::open(None, harris_config()).unwrap();
    let want_surf: Vec<_> = views.iter().map(|v| surf_ref.detect(v).unwrap()).collect();
    let want_harris: Vec<_> = views
        .iter()
        .map(|v| harris_ref.detect(v).unwrap())
        .collect();
    assert!(want_surf[1].keypoints.len() > 20 && want_harris[1].keypoints.len() > 20);

    let mut surf = SurfPipeline::open(None, surf_config()).unwrap();
    let mut harris = HarrisPipeline::open(None, harris_config()).unwrap();
    // Enqueue faults at the first, a middle and the last kernel of a frame (SURF: 8, Harris:
    // 7 kernels), and one beyond the frame's kernels, which must not fire in that frame.
    let cases = [
        (FaultPoint::Upload, 1),
        (FaultPoint::Enqueue, 1),
        (FaultPoint::Enqueue, 4),
        (FaultPoint::Enqueue, 7),
        (FaultPoint::Readback, 1),
    ];
    for (point, nth) in cases {
        for name in ["surf", "harris"] {
            let mut detect = |v: &GrayImage<'_>| match name {
                "surf" => surf.detect(v),
                _ => harris.detect(v),
            };
            let want = if name == "surf" {
                &want_surf
            } else {
                &want_harris
            };
            assert!(same(&detect(&views[0]).unwrap(), &want[0]));
            plan(point, nth);
            let failed = detect(&views[1]);
            assert!(
                !clear_plan(),
                "{name}: {point}:{nth} did not fire within one frame"
            );
            match failed {
                Err(e) => assert!(is_injected(&e, point), "{name} {point}:{nth}: {e}"),
                Ok(_) => panic!("{name} {point}:{nth}: the frame succeeded"),
            }
            // The next frames are exactly the reference ones.
            for k in [1, 2] {
                let got = detect(&views[k]).unwrap();
                assert!(
                    same(&got, &want[k]),
                    "{name} after {point}:{nth}, frame {k}"
                );
            }
        }
    }
}

/// Allocation and build faults while a pipeline, a matcher or a stream is being made: a typed
/// error, and making it again works and gives the reference results.
#[test]
fn creation_faults_are_typed_and_a_retry_works() {
    require_opencl();
    let frames = frames();
    let view = frames[0].view().unwrap();
    let want = SurfPipeline::open(None, surf_config())
        .unwrap()
        .detect(&view)
        .unwrap();
    for (point, nth) in [
        (FaultPoint::Allocate, 1),
        (FaultPoint::Allocate, 3),
        (FaultPoint::Allocate, 6),
        (FaultPoint::Build, 1),
    ] {
        plan(point, nth);
        let e = SurfPipeline::open(None, surf_config()).unwrap_err();
        assert!(!clear_plan(), "pipeline {point}:{nth} did not fire");
        assert!(is_injected(&e, point), "pipeline {point}:{nth}: {e}");
        let got = SurfPipeline::open(None, surf_config())
            .unwrap()
            .detect(&view)
            .unwrap();
        assert!(same(&got, &want));

        plan(point, nth);
        let e = HarrisPipeline::open(None, harris_config()).unwrap_err();
        assert!(!clear_plan(), "harris {point}:{nth} did not fire");
        assert!(is_injected(&e, point), "harris {point}:{nth}: {e}");

        plan(point, nth);
        let e = StreamPipeline::open(None, surf_config(), MatchConfig::default()).unwrap_err();
        assert!(!clear_plan(), "stream {point}:{nth} did not fire");
        assert!(is_injected(&e, point), "stream {point}:{nth}: {e}");
    }
    // The matcher builds its program when made and allocates on first use.
    plan(FaultPoint::Build, 1);
    let e = GpuMatcher::open(None).unwrap_err();
    assert!(!clear_plan() && is_injected(&e, FaultPoint::Build), "{e}");
    let mut matcher = GpuMatcher::open(None).unwrap();
    let d = SurfPipeline::open(None, surf_config())
        .unwrap()
        .detect(&view)
        .unwrap();
    // The frame's descriptors against themselves: each matches itself.
    let mut match_itself = || {
        matcher.match_f32(
            &d.keypoints,
            &d.descriptors,
            &d.keypoints,
            &d.descriptors,
            &MatchConfig::default(),
            &mut MatchTimings::default(),
        )
    };
    for point in [
        FaultPoint::Allocate,
        FaultPoint::Upload,
        FaultPoint::Enqueue,
        FaultPoint::Readback,
    ] {
        plan(point, 1);
        let r = match_itself();
        assert!(!clear_plan(), "matcher {point} did not fire");
        match r {
            Err(e) => assert!(is_injected(&e, point), "matcher {point}: {e}"),
            Ok(_) => panic!("matcher {point}: succeeded"),
        }
        let m = match_itself().unwrap();
        assert_eq!(m.len(), d.keypoints.len(), "each descriptor matches itself");
        assert!(m.iter().all(|x| x.query == x.train));
    }
}

/// Checks that stream frame `f` (input `i`) has exactly the core's matches against frame `p`,
/// from the frame-by-frame outputs `want`; `what` names the case in failure messages.
fn assert_matches_core(
    f: &StreamFrame,
    want: &[DetectOutput],
    (i, p): (usize, usize),
    matching: &MatchConfig,
    what: impl std::fmt::Display,
) {
    let core = core_matches(
        &want[i].keypoints,
        &want[i].descriptors,
        &want[p].keypoints,
        &want[p].descriptors,
        matching,
    );
    assert!(core.len() > 10, "frames should match");
    assert_eq!(f.matches, core, "{what}: frame {i} against {p}");
}

/// A fault planned while the stream runs (from the sink of the first frame: the next
/// operation of that kind belongs to a later frame, with other frames in flight) fails exactly
/// one frame; every other frame equals frame-by-frame processing, and the frame after the
/// failed one is matched against the last good one.
#[test]
fn stream_fault_fails_one_frame_and_the_stream_goes_on() {
    require_opencl();
    let views = views();
    let matching = MatchConfig::default();
    for detector in [
        DetectorConfig::Surf(surf_config()),
        DetectorConfig::Harris(harris_config()),
    ] {
        let want: Vec<DetectOutput> = match detector {
            DetectorConfig::Surf(c) => {
                let mut p = SurfPipeline::open(None, c).unwrap();
                views.iter().map(|v| p.detect(v).unwrap()).collect()
            }
            DetectorConfig::Harris(c) => {
                let mut p = HarrisPipeline::open(None, c).unwrap();
                views.iter().map(|v| p.detect(v).unwrap()).collect()
            }
        };
        for point in [
            FaultPoint::Upload,
            FaultPoint::Enqueue,
            FaultPoint::Readback,
        ] {
            let mut stream = StreamPipeline::open_detector(None, detector, matching).unwrap();
            let mut results: Vec<(usize, Result<StreamFrame, OpenClError>)> = Vec::new();
            stream.run(views.iter().copied(), |i, r| {
                if i == 0 {
                    plan(point, 1);
                }
                results.push((i, r));
                true
            });
            assert!(!clear_plan(), "{detector:?} {point}: did not fire");
            let failed: Vec<usize> = results
                .iter()
                .filter_map(|(i, r)| r.is_err().then_some(*i))
                .collect();
            assert_eq!(failed.len(), 1, "{point}: failed frames {failed:?}");
            let mut last_good: Option<usize> = None;
            for (i, r) in &results {
                match r {
                    Err(e) => assert!(is_injected(e, point), "{point}: frame {i}: {e}"),
                    Ok(f) => {
                        assert_eq!(f.keypoints, want[*i].keypoints, "{point}: frame {i}");
                        assert_eq!(f.descriptors, want[*i].descriptors, "{point}: frame {i}");
                        assert_eq!(f.previous, last_good, "{point}: frame {i}");
                        if let Some(p) = last_good {
                            assert_matches_core(f, &want, (*i, p), &matching, point);
                        }
                        last_good = Some(*i);
                    }
                }
            }
        }
    }
}

/// A failed readback of a frame's matches (the second readback after frame 0's sink: the
/// first is the detection readback of the frame queued two ahead): that frame fails, the
/// next frame starts a new sequence (matched against nothing: the frame before the failed one
/// has been overwritten by then), and every frame after it matches its predecessor again.
#[test]
fn stream_matching_fault_restarts_the_sequence() {
    require_opencl();
    let views = views();
    let matching = MatchConfig::default();
    let mut reference = SurfPipeline::open(None, surf_config()).unwrap();
    let want: Vec<DetectOutput> = views.iter().map(|v| reference.detect(v).unwrap()).collect();
    let mut stream =
        StreamPipeline::open_detector(None, DetectorConfig::Surf(surf_config()), matching).unwrap();
    let mut results: Vec<(usize, Result<StreamFrame, OpenClError>)> = Vec::new();
    stream.run(views.iter().copied(), |i, r| {
        if i == 0 {
            plan(FaultPoint::Readback, 2);
        }
        results.push((i, r));
        true
    });
    assert!(!clear_plan(), "the readback fault did not fire");
    assert_eq!(results.len(), views.len());
    let failed: Vec<usize> = results
        .iter()
        .filter_map(|(i, r)| r.is_err().then_some(*i))
        .collect();
    assert_eq!(failed, [1], "failed frames");
    let Err(e) = &results[1].1 else {
        unreachable!()
    };
    assert!(is_injected(e, FaultPoint::Readback), "{e}");
    assert!(
        e.to_string().contains("matches"),
        "not the matching's readback: {e}"
    );
    for (i, r) in &results {
        let Ok(f) = r else { continue };
        assert_eq!(f.keypoints, want[*i].keypoints, "frame {i}");
        let previous = match i {
            0 | 2 => None,
            _ => Some(i - 1),
        };
        assert_eq!(f.previous, previous, "frame {i}");
        match previous {
            None => assert!(f.matches.is_empty(), "frame {i}"),
            Some(p) => assert_matches_core(f, &want, (*i, p), &matching, "matching fault"),
        }
    }
}

/// The child half of [`cli_reports_an_injected_device_fault`]: `surfcl detect` in-process on
/// OpenCL; does nothing without the parent's environment variable.
#[test]
fn cli_opencl_child() {
    detect_in_child("SURFCL_TEST_CL_IMAGE", "opencl");
}

/// A frame through [`cli_opencl_child`], with `fault` in [`CL_FAULT_ENV`].
fn run_child(fault: Option<&str>) -> std::process::Output {
    run_child_test(
        "cli_opencl_child",
        &crop(300, 200),
        "SURFCL_TEST_CL_IMAGE",
        (CL_FAULT_ENV, fault),
    )
}

#[test]
fn cli_reports_an_injected_device_fault() {
    require_opencl();
    let clean = run_child(None);
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    for (plan, says) in [
        ("readback:1", "read back results: injected fault"),
        ("enqueue:2", "enqueue kernel: injected fault"),
        ("alloc:1", "cannot allocate"),
    ] {
        let out = run_child(Some(plan));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{CL_FAULT_ENV}={plan} succeeded");
        assert!(stderr.contains(says), "{plan}: {stderr}");
        assert!(stderr.contains(INJECTED), "{plan}: {stderr}");
    }
    let typo = run_child(Some("readbak:1"));
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert!(!typo.status.success());
    assert!(stderr.contains(CL_FAULT_ENV), "{stderr}");
}
