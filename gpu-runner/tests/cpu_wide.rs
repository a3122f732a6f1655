//! The CPU backend runs its Hessian fill, description and Q7 matching loops with AVX2 where the
//! CPU has it (`gpu-runner/src/cpu/simd.rs`, chosen once per backend), the f32 matcher its
//! distance kernel; the core, called directly, is the portable build. The two must agree bit for bit: same keypoints,
//! orientations, descriptors and matches. On a CPU without
//! AVX2 (or off x86-64) both sides are portable and the test still checks the backend against
//! the core.

use std::path::Path;

use surfcl_core::describe::{describe_all, to_q7};
use surfcl_core::integral::integral_len;
use surfcl_core::keypoint::{KeypointBuffer, KeypointSink};
use surfcl_core::matcher::{Match, MatchConfig, TrainBest, match_f32, match_q7, scratch_len};
use surfcl_core::surf::{self, SurfConfig};
use surfcl_core::{IntegralImage, Keypoint};
use surfcl_gpu::backend::{Backend, DescriptorKind, DetectParams, Features};
use surfcl_gpu::cpu::CpuBackend;
#[path = "support/gray.rs"]
mod gray;
use gray::{OwnedGray, load_gray};

fn boat(n: u32) -> OwnedGray {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../data/oxford-boat/img{n}.pgm"));
    load_gray(&path).unwrap()
}

/// The integral table of `image` (the core's, computed directly).
fn integral_table(image: &OwnedGray) -> Vec<u32> {
    let view = image.view().unwrap();
    let mut table = vec![0u32; integral_len(view.width(), view.height()).unwrap()];
    IntegralImage::compute(&view, &mut table).unwrap();
    table
}

/// `table` ([`integral_table`] of `image`) as the core's integral image.
fn integral_of<'a>(image: &OwnedGray, table: &'a [u32]) -> IntegralImage<'a> {
    IntegralImage::from_table(table, image.width, image.height).unwrap()
}

fn detect(backend: &mut CpuBackend, image: &OwnedGray, upright: bool) -> Features {
    let mut params = DetectParams::default();
    params.surf.upright = upright;
    backend.detect(&image.view().unwrap(), &params).unwrap()
}

/// Whether the backend computed Haar maps for the frame (it reports their time as a stage).
fn used_haar_maps(features: &Features) -> bool {
    features.timings.iter().any(|t| t.name == "haar maps")
}

#[test]
fn backend_description_equals_the_portable_core() {
    // Upright descriptions read most Haar pairs from the backend's Haar maps (one, two threads);
    // the core, called directly, reads the integral table.
    let image = boat(1);
    let table = integral_table(&image);
    let ii = integral_of(&image, &table);
    for (threads, upright) in [(1, false), (1, true), (2, true)] {
        let mut backend = CpuBackend::with_threads(threads);
        let features = detect(&mut backend, &image, upright);
        assert!(features.keypoints.len() > 1000);
        assert_eq!(used_haar_maps(&features), upright);
        // The same keypoints described again by the portable core, orientation included.
        let mut keypoints: Vec<Keypoint> = features
            .keypoints
            .iter()
            .map(|kp| Keypoint {
                orientation: 1.0,
                ..*kp
            })
            .collect();
        let mut descriptors = vec![[0f32; 64]; keypoints.len()];
        describe_all(&ii, &mut keypoints, upright, &mut descriptors).unwrap();
        for (core, backend) in keypoints.iter().zip(&features.keypoints) {
            assert_eq!(core.orientation.to_bits(), backend.orientation.to_bits());
        }
        for (core, backend) in descriptors.iter().zip(&features.descriptors) {
            assert_eq!(
                core.map(f32::to_bits),
                backend.map(f32::to_bits),
                "upright {upright}, {threads} threads"
            );
        }
    }
}

#[test]
fn backend_harris_description_equals_the_portable_core() {
    // Harris corners are described upright at one fixed scale: every one from the same map.
    let image = boat(3);
    let view = image.view().unwrap();
    let table = integral_table(&image);
    let ii = integral_of(&image, &table);
    let params = DetectParams {
        detector: surfcl_gpu::backend::DetectorKind::Harris,
        ..DetectParams::default()
    };
    let features = CpuBackend::with_threads(2).detect(&view, &params).unwrap();
    assert!(
        features.keypoints.len() > 500,
        "{}",
        features.keypoints.len()
    );
    assert!(used_haar_maps(&features));
    let mut keypoints = features.keypoints.clone();
    let mut descriptors = vec![[0f32; 64]; keypoints.len()];
    describe_all(&ii, &mut keypoints, true, &mut descriptors).unwrap();
    for (core, backend) in descriptors.iter().zip(&features.descriptors) {
        assert_eq!(core.map(f32::to_bits), backend.map(f32::to_bits));
    }
}

#[test]
fn backend_matching_equals_the_portable_core() {
    let mut backend = CpuBackend::with_threads(1);
    let query = detect(&mut backend, &boat(1), false);
    let train = detect(&mut backend, &boat(2), false);
    let q7 = |f: &Features| f.descriptors.iter().map(to_q7).collect::<Vec<_>>();
    let (query_q7, train_q7) = (q7(&query), q7(&train));
    let key = |m: &Match| (m.query, m.train, m.distance.to_bits());
    for (sign_test, cross_check) in [(true, false), (false, false), (true, true)] {
        let config = MatchConfig {
            sign_test,
            cross_check,
            ..MatchConfig::default()
        };
        for kind in [DescriptorKind::F32, DescriptorKind::Q7] {
            let mut best = vec![TrainBest::EMPTY; scratch_len(train.keypoints.len())];
            let mut out = vec![Match::default(); query.keypoints.len()];
            let count = match kind {
                DescriptorKind::F32 => match_f32(
                    &query.keypoints,
                    &query.descriptors,
                    &train.keypoints,
                    &train.descriptors,
                    &config,
                    &mut best,
                    &mut out,
                ),
                DescriptorKind::Q7 => match_q7(
                    &query.keypoints,
                    &query_q7,
                    &train.keypoints,
                    &train_q7,
                    &config,
                    &mut best,
                    &mut out,
                ),
            }
            .unwrap();
            assert!(count > 300, "{sign_test} {cross_check} {kind:?}: {count}");
            let from_backend = backend
                .match_features(&query, &train, &config, kind)
                .unwrap();
            assert_eq!(
                out[..count].iter().map(key).collect::<Vec<_>>(),
                from_backend.iter().map(key).collect::<Vec<_>>(),
                "{sign_test} {cross_check} {kind:?}"
            );
        }
    }
}

#[test]
fn backend_detection_equals_the_portable_core() {
    // The backend fills the response maps a grid row at a time with the column sums and the
    // `f64` determinant (AVX2 where the CPU has it), in bands on threads; the core's `detect`
    // reads the integral table per sample in `i64`. Both initial sample steps, every octave.
    let key = |kp: &Keypoint| {
        (
            kp.x.to_bits(),
            kp.y.to_bits(),
            kp.scale.to_bits(),
            kp.response.to_bits(),
            kp.laplacian,
            kp.octave,
            kp.interval,
        )
    };
    for n in [1, 3] {
        let image = boat(n);
        let view = image.view().unwrap();
        let table = integral_table(&image);
        let ii = integral_of(&image, &table);
        for init_sample_step in [1, 2] {
            let config = SurfConfig {
                init_sample_step,
                octaves: surf::MAX_OCTAVES,
                upright: true,
                ..SurfConfig::default()
            };
            let mut scratch =
                vec![0u32; surf::scratch_len(&config, ii.width(), ii.height()).unwrap()];
            let mut storage = vec![Keypoint::default(); 100_000];
            let mut sink = KeypointBuffer::new(&mut storage);
            surf::detect(&ii, &config, &mut scratch, &mut sink).unwrap();
            sink.sort();
            let core: Vec<_> = sink.points().iter().map(key).collect();
            assert!(
                core.len() > 1000,
                "img{n} step {init_sample_step}: {}",
                core.len()
            );
            for threads in [1, 2] {
                let mut backend = CpuBackend::with_threads(threads);
                let params = DetectParams {
                    surf: config,
                    max_keypoints: 100_000,
                    ..DetectParams::default()
                };
                let features = backend.detect(&view, &params).unwrap();
                let from_backend: Vec<_> = features.keypoints.iter().map(key).collect();
                assert!(
                    core == from_backend,
                    "img{n} step {init_sample_step}, {threads} threads: {} against {} keypoints",
                    core.len(),
                    from_backend.len()
                );
            }
        }
    }
}

#[test]
fn haar_map_policy_changes_the_time_not_the_descriptors() {
    // Timed (the default): the first MAP_TRIALS frames of a size alternate with and without
    // maps, then one choice is kept; a new size starts over. Always and Never are what they say.
    // Every frame's keypoints and descriptors are the same bits.
    use surfcl_gpu::cpu::{HaarMapPolicy, MAP_TRIALS};
    let image = boat(1);
    let small = boat(2);
    let mut backend = CpuBackend::with_threads(1);
    let reference = detect(&mut backend, &image, true);
    assert!(used_haar_maps(&reference));
    let bits = |f: &Features| {
        let d: Vec<_> = f.descriptors.iter().map(|d| d.map(f32::to_bits)).collect();
        (f.keypoints.clone(), d)
    };
    let mut uses = vec![true];
    for _ in 1..MAP_TRIALS + 3 {
        let f = detect(&mut backend, &image, true);
        assert_eq!(bits(&f), bits(&reference));
        uses.push(used_haar_maps(&f));
    }
    let trials = MAP_TRIALS as usize;
    let alternating: Vec<bool> = (0..trials).map(|k| k % 2 == 0).collect();
    assert_eq!(uses[..trials], alternating[..], "{uses:?}");
    assert!(
        uses[trials..].iter().all(|&u| u == uses[trials]),
        "{uses:?}"
    );
    // Another size: the trials start over, with maps first.
    let view = small.view().unwrap();
    let mut params = DetectParams::default();
    params.surf.upright = true;
    let cropped: Vec<u8> = view.pixels()[..view.width() * 400].to_vec();
    let other = surfcl_core::GrayImage::new(&cropped, view.width(), 400).unwrap();
    assert!(used_haar_maps(&backend.detect(&other, &params).unwrap()));
    assert!(!used_haar_maps(&backend.detect(&other, &params).unwrap()));
    for (policy, expected) in [(HaarMapPolicy::Always, true), (HaarMapPolicy::Never, false)] {
        backend.set_haar_map_policy(policy);
        for _ in 0..3 {
            let f = detect(&mut backend, &image, true);
            assert_eq!(used_haar_maps(&f), expected, "{policy:?}");
            assert_eq!(bits(&f), bits(&reference), "{policy:?}");
        }
    }
}
