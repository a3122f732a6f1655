//! `surfcl_gpu::opencl::set_profiling`: pipelines made with it on report per-stage device
//! times, pipelines made with it off report none, and both give the same keypoints and
//! descriptors (profiling only changes how the queue records time). In its own test binary,
//! because the switch is process-wide. Runs on PoCL (skipped without an OpenCL device).

use surfcl_core::surf::SurfConfig;
use surfcl_gpu::opencl::{
    DetectOutput, DetectorConfig, StreamPipeline, SurfPipeline, SurfPipelineConfig, profiling,
    set_profiling,
};
use surfcl_tests::boat;

fn pipeline(width: usize, height: usize) -> Option<SurfPipeline> {
    match SurfPipeline::open(
        None,
        SurfPipelineConfig {
            max_width: width,
            max_height: height,
            surf: SurfConfig::default(),
            max_keypoints: 2000,
            local_size: None,
        },
    ) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("skipping: no OpenCL device ({e})");
            None
        }
    }
}

fn same_results(a: &DetectOutput, b: &DetectOutput) {
    assert_eq!(a.keypoints, b.keypoints);
    assert_eq!(a.descriptors.len(), b.descriptors.len());
    for (x, y) in a.descriptors.iter().zip(&b.descriptors) {
        assert_eq!(x.map(f32::to_bits), y.map(f32::to_bits));
    }
}

#[test]
fn profiling_switch_changes_timings_not_results() {
    let image = boat(1);
    let view = image.view().unwrap();
    let (w, h) = (view.width(), view.height());
    assert!(!profiling(), "profiling is off by default");
    let Some(mut plain) = pipeline(w, h) else {
        return;
    };
    set_profiling(true);
    let mut profiled = pipeline(w, h).unwrap();
    set_profiling(false);

    let quiet = plain.detect(&view).unwrap();
    let timed = profiled.detect(&view).unwrap();
    assert!(quiet.keypoints.len() > 1000);
    same_results(&quiet, &timed);
    assert!(quiet.timings.is_empty(), "{:?}", quiet.timings);
    assert!(quiet.wall_ms > 0.0);
    for stage in [
        "upload",
        "hessian_f32",
        "select",
        // Its orientation too: one kernel describes an oriented keypoint.
        "descriptor",
    ] {
        assert!(
            timed.timings.iter().any(|t| t.name == stage),
            "no {stage} in {:?}",
            timed.timings
        );
    }
    // A pipeline keeps the setting it was made with.
    set_profiling(true);
    assert!(plain.detect(&view).unwrap().timings.is_empty());
    set_profiling(false);
    assert!(!profiled.detect(&view).unwrap().timings.is_empty());

    // Streams: the same.
    let config = DetectorConfig::Surf(SurfPipelineConfig {
        max_width: w,
        max_height: h,
        surf: SurfConfig::default(),
        max_keypoints: 2000,
        local_size: None,
    });
    let mut results = Vec::new();
    for on in [false, true] {
        set_profiling(on);
        let mut stream = StreamPipeline::open_detector(None, config, Default::default()).unwrap();
        let mut frames = Vec::new();
        stream.run([view, view], |_, r| {
            frames.push(r.unwrap());
            true
        });
        assert_eq!(frames.len(), 2);
        assert!(!frames[1].matches.is_empty());
        assert_eq!(frames[1].timings.is_empty(), !on, "{:?}", frames[1].timings);
        results.push(frames);
    }
    set_profiling(false);
    assert_eq!(results[0][1].keypoints, results[1][1].keypoints);
    assert_eq!(results[0][1].matches, results[1][1].matches);
}
