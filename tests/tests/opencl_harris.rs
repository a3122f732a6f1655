//! Harris on OpenCL against the CPU reference (`surfcl_core::harris`), on PoCL in CI.
//!
//! Without an OpenCL platform these tests FAIL (CI installs PoCL): a silently skipped GPU test
//! would hide a broken pipeline.
//!
//! Claims checked: the response map is bit-identical; the kept corners are identical (every field,
//! same order); descriptors are within 1e-4 (L2) of the core's upright `describe` at the fixed
//! scale; results do not depend on the work-group size or on the run; too-large frames and bad
//! configurations are typed errors.

use std::time::Instant;

use surfcl_core::describe::describe;
use surfcl_core::harris::{self, HarrisConfig, HarrisStats, HarrisThreshold};
use surfcl_core::integral::integral_len;
use surfcl_core::{GrayImage, IntegralImage, Keypoint, KeypointBuffer, KeypointSink};
use surfcl_gpu::backend::{Backend, DetectParams, DetectorKind};
use surfcl_gpu::cpu::CpuBackend;
use surfcl_gpu::opencl::{DetectOutput, OpenClBackend, OpenClError};
use surfcl_gpu::opencl::{HarrisPipeline, HarrisPipelineConfig};
use surfcl_tests::{boat, crop_pixels, require_opencl};

/// The `w x h` window of boat image 1 at `(x, y)`, as (pixels, width, height).
fn boat_window(x: usize, y: usize, w: usize, h: usize) -> (Vec<u8>, usize, usize) {
    (crop_pixels(&boat(1), x, y, w, h), w, h)
}

fn checkerboard(w: usize, h: usize, cell: usize, margin: usize) -> Vec<u8> {
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            if x < margin || y < margin || x + margin >= w || y + margin >= h {
                128
            } else if ((x - margin) / cell + (y - margin) / cell).is_multiple_of(2) {
                230
            } else {
                20
            }
        })
        .collect()
}

/// Euclidean distance between two descriptors.
fn l2_distance(a: &[f32; 64], b: &[f32; 64]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f32>()
        .sqrt()
}

fn pipeline(
    w: usize,
    h: usize,
    harris: HarrisConfig,
    max_kp: usize,
    local: Option<usize>,
) -> HarrisPipeline {
    HarrisPipeline::open(
        None,
        HarrisPipelineConfig {
            local_size: local,
            ..HarrisPipelineConfig::new(w, h, harris, max_kp)
        },
    )
    .unwrap()
}

/// The core: response map, sorted strongest-N keypoints, stats.
fn cpu(
    pixels: &[u8],
    w: usize,
    h: usize,
    config: &HarrisConfig,
    max_kp: usize,
) -> (Vec<f32>, Vec<Keypoint>, HarrisStats) {
    let image = GrayImage::new(pixels, w, h).unwrap();
    let mut scratch = vec![0i32; harris::scratch_len(w, h).unwrap()];
    let mut map = vec![0f32; w * h];
    harris::response_map(&image, config, &mut scratch, &mut map).unwrap();
    let mut storage = vec![Keypoint::default(); max_kp];
    let mut sink = KeypointBuffer::new(&mut storage);
    let stats = harris::detect(&image, config, &mut scratch, &mut sink).unwrap();
    sink.sort();
    (map, sink.points().to_vec(), stats)
}

/// Runs one frame on `p` and checks it against the core: bit-identical responses, identical
/// keypoints (all fields, same order), counts, max and threshold. Returns the GPU output.
fn check_frame(
    p: &mut HarrisPipeline,
    pixels: &[u8],
    w: usize,
    h: usize,
    max_kp: usize,
    what: &str,
) -> DetectOutput {
    let config = p.config().harris;
    let image = GrayImage::new(pixels, w, h).unwrap();
    let out = p.detect(&image).unwrap();
    let (map, kps, stats) = cpu(pixels, w, h, &config, max_kp);
    let gpu_map = p.read_responses().unwrap();
    assert_eq!(gpu_map.len(), map.len());
    for (i, (a, b)) in gpu_map.iter().zip(&map).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "{what}: response at ({}, {}): gpu {a} cpu {b}",
            i % w,
            i / w
        );
    }
    // The first difference only: the full lists run to thousands of points.
    if let Some(i) =
        (0..out.keypoints.len().max(kps.len())).find(|&i| out.keypoints.get(i) != kps.get(i))
    {
        panic!(
            "{what}: keypoint {i} of {}/{} differs: gpu {:?} cpu {:?}",
            out.keypoints.len(),
            kps.len(),
            out.keypoints.get(i),
            kps.get(i)
        );
    }
    assert_eq!(out.candidates, stats.candidates, "{what}: candidates");
    assert_eq!(out.dropped, stats.dropped, "{what}: dropped");
    let s = p.last_stats();
    assert_eq!(s.max_response, stats.max_response, "{what}: max response");
    assert_eq!(s.threshold, stats.threshold, "{what}: threshold");
    out
}

#[test]
fn boat_crops_match_the_core_exactly() {
    require_opencl();
    let src = boat(1);
    let mut total = 0;
    for (x0, y0, w, h, window, k, threshold) in [
        (0, 0, 641, 479, 3, 0.04, HarrisThreshold::Relative(0.01)),
        (100, 37, 333, 257, 5, 0.06, HarrisThreshold::Relative(0.05)),
        (
            200,
            150,
            97,
            131,
            13,
            0.04,
            HarrisThreshold::Relative(0.001),
        ),
        (17, 301, 250, 9, 7, 0.1, HarrisThreshold::Absolute(1e-5)),
    ] {
        let pixels = crop_pixels(&src, x0, y0, w, h);
        let config = HarrisConfig {
            window,
            k,
            threshold,
            ..HarrisConfig::default()
        };
        let mut p = pipeline(w, h, config, 5000, None);
        let out = check_frame(&mut p, &pixels, w, h, 5000, &format!("{w}x{h} n={window}"));
        assert_eq!(out.descriptors.len(), out.keypoints.len());
        total += out.keypoints.len();
    }
    // The comparison is only meaningful when corners are found.
    assert!(total > 500, "only {total} corners");
}

#[test]
fn synthetic_images_and_edge_sizes_match_the_core() {
    require_opencl();
    let board = checkerboard(150, 130, 16, 11);
    // Full-contrast 1-pixel checkerboard: the largest gradients, products and window sums.
    let fine: Vec<u8> = (0..61 * 43)
        .map(|i| if (i % 61 + i / 61) % 2 == 0 { 255 } else { 0 })
        .collect();
    let noise: Vec<u8> = (0..37u32 * 29)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let cases: Vec<(&str, Vec<u8>, usize, usize, HarrisConfig)> = vec![
        ("board", board.clone(), 150, 130, HarrisConfig::default()),
        (
            "board no subpixel",
            board,
            150,
            130,
            HarrisConfig {
                subpixel: false,
                threshold: HarrisThreshold::Relative(0.1),
                ..HarrisConfig::default()
            },
        ),
        (
            "fine n=13",
            fine.clone(),
            61,
            43,
            HarrisConfig {
                window: 13,
                ..HarrisConfig::default()
            },
        ),
        ("fine n=3", fine, 61, 43, HarrisConfig::default()),
        ("noise", noise.clone(), 37, 29, HarrisConfig::default()),
        ("1x1", vec![9], 1, 1, HarrisConfig::default()),
        ("5x1", noise[..5].to_vec(), 5, 1, HarrisConfig::default()),
        ("1x7", noise[..7].to_vec(), 1, 7, HarrisConfig::default()),
        ("3x2", noise[..6].to_vec(), 3, 2, HarrisConfig::default()),
        (
            "flat",
            vec![77; 40 * 33],
            40,
            33,
            HarrisConfig {
                threshold: HarrisThreshold::Absolute(0.0),
                ..HarrisConfig::default()
            },
        ),
    ];
    let mut found = 0;
    for (what, pixels, w, h, config) in &cases {
        let mut p = pipeline(*w, *h, *config, 1000, None);
        found += check_frame(&mut p, pixels, *w, *h, 1000, what)
            .keypoints
            .len();
    }
    assert!(found > 100, "{found}");
}

#[test]
fn work_group_size_and_repeated_runs_do_not_change_results() {
    require_opencl();
    let (pixels, w, h) = boat_window(311, 222, 301, 203);
    let image = GrayImage::new(&pixels, w, h).unwrap();
    let config = HarrisConfig {
        window: 5,
        ..HarrisConfig::default()
    };
    let mut reference: Option<DetectOutput> = None;
    for local in [Some(4), Some(16), Some(64), Some(256), Some(512), None] {
        let mut p = pipeline(w, h, config, 800, local);
        for _ in 0..2 {
            let out = check_frame(&mut p, &pixels, w, h, 800, &format!("local {local:?}"));
            match &reference {
                None => reference = Some(out),
                Some(r) => {
                    assert_eq!(out.keypoints, r.keypoints);
                    assert_eq!(out.descriptors, r.descriptors, "local {local:?}");
                }
            }
        }
        // A smaller frame on the same pipeline, then the big one again: nothing stale.
        let (small, _, _) = boat_window(0, 0, 64, 50);
        check_frame(&mut p, &small, 64, 50, 800, "small frame");
        let again = p.detect(&image).unwrap();
        assert_eq!(again.keypoints, reference.as_ref().unwrap().keypoints);
    }
    assert!(reference.unwrap().keypoints.len() > 50);
}

#[test]
fn strongest_n_equals_the_core_sink() {
    require_opencl();
    let (pixels, w, h) = boat_window(50, 60, 400, 300);
    for max_kp in [1, 7, 100] {
        let mut p = pipeline(w, h, HarrisConfig::default(), max_kp, None);
        let out = check_frame(&mut p, &pixels, w, h, max_kp, &format!("max {max_kp}"));
        assert_eq!(out.keypoints.len(), max_kp);
        assert!(out.dropped > 0);
    }
}

#[test]
fn descriptors_match_core_upright_describe() {
    require_opencl();
    let (pixels, w, h) = boat_window(120, 90, 513, 389);
    let image = GrayImage::new(&pixels, w, h).unwrap();
    for scale in [2.0f32, 3.3] {
        let config = HarrisConfig {
            descriptor_scale: scale,
            ..HarrisConfig::default()
        };
        let mut p = pipeline(w, h, config, 2000, None);
        let out = p.detect(&image).unwrap();
        assert!(out.keypoints.len() > 100);
        let mut table = vec![0u32; integral_len(w, h).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        let mut worst = 0f32;
        for (kp, d) in out.keypoints.iter().zip(&out.descriptors) {
            assert_eq!(kp.scale, scale);
            let expected = describe(&ii, kp, true);
            let dist = l2_distance(d, &expected);
            worst = worst.max(dist);
            assert!(
                dist <= 1e-4,
                "descriptor at ({}, {}): L2 {dist}",
                kp.x,
                kp.y
            );
            let norm = d.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
        }
        eprintln!("scale {scale}: worst descriptor L2 distance {worst:e}");
    }
}

#[test]
fn descriptors_of_wide_frames_and_smaller_ones_after_them_match_the_core() {
    require_opencl();
    // The descriptors sample the integral image of surf.cl's kernels: frames wider than one
    // chunk of their columns (2048 with the default groups) and heights across their bands of
    // 16 rows, on one pipeline made for the largest.
    let mut p = pipeline(2600, 300, HarrisConfig::default(), 3000, None);
    for (w, h) in [(2600, 300), (2100, 37), (301, 299)] {
        let pixels: Vec<u8> = checkerboard(w, h, 16, 11)
            .iter()
            .enumerate()
            .map(|(i, &v)| v + ((i as u32).wrapping_mul(2_654_435_761) >> 29) as u8)
            .collect();
        let image = GrayImage::new(&pixels, w, h).unwrap();
        let out = p.detect(&image).unwrap();
        assert!(out.keypoints.len() > 50, "{w}x{h}: {}", out.keypoints.len());
        let mut table = vec![0u32; integral_len(w, h).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        for (kp, d) in out.keypoints.iter().zip(&out.descriptors) {
            let expected = describe(&ii, kp, true);
            let dist = l2_distance(d, &expected);
            assert!(
                dist <= 1e-4,
                "{w}x{h}: descriptor at ({}, {}): L2 {dist}",
                kp.x,
                kp.y
            );
        }
    }
}

#[test]
fn detection_only_pipeline_has_no_descriptors_and_same_points() {
    require_opencl();
    let (pixels, w, h) = boat_window(0, 0, 200, 150);
    let mut p = HarrisPipeline::open(
        None,
        HarrisPipelineConfig {
            describe: false,
            ..HarrisPipelineConfig::new(w, h, HarrisConfig::default(), 500)
        },
    )
    .unwrap();
    let out = check_frame(&mut p, &pixels, w, h, 500, "detect only");
    assert!(!out.keypoints.is_empty());
    assert!(out.descriptors.is_empty());
    assert!(out.timings.iter().all(|t| t.name != "descriptor"));
}

#[test]
fn errors_are_typed() {
    require_opencl();
    let mut p = pipeline(64, 48, HarrisConfig::default(), 100, None);
    let pixels = vec![0u8; 65 * 48];
    let image = GrayImage::new(&pixels, 65, 48).unwrap();
    match p.detect(&image) {
        Err(OpenClError::ImageTooLarge {
            width: 65,
            height: 48,
            max_width: 64,
            max_height: 48,
        }) => {}
        other => panic!("expected ImageTooLarge, got {other:?}"),
    }
    let pixels = vec![0u8; 64 * 49];
    let image = GrayImage::new(&pixels, 64, 49).unwrap();
    assert!(matches!(
        p.detect(&image),
        Err(OpenClError::ImageTooLarge { height: 49, .. })
    ));
    let unsupported = [
        (
            HarrisConfig {
                window: 4,
                ..HarrisConfig::default()
            },
            10,
        ),
        (
            HarrisConfig {
                k: 0.3,
                ..HarrisConfig::default()
            },
            10,
        ),
        (HarrisConfig::default(), 0),
    ];
    for (harris, max_kp) in unsupported {
        let r = HarrisPipeline::open(None, HarrisPipelineConfig::new(64, 48, harris, max_kp));
        assert!(
            matches!(r, Err(OpenClError::Unsupported(_))),
            "{harris:?}, {max_kp} keypoints: {:?}",
            r.err()
        );
    }
}

#[test]
fn opencl_backend_harris_equals_cpu_backend() {
    require_opencl();
    let src = boat(1);
    let mut gpu = OpenClBackend::new(None).unwrap();
    let mut cpu = CpuBackend::with_threads(1);
    let params = DetectParams {
        detector: DetectorKind::Harris,
        surf: Default::default(),
        harris: HarrisConfig::default(),
        max_keypoints: 700,
        descriptor: Default::default(),
    };
    // Two sizes on one backend: the second frame is larger (pipeline rebuilt), the third smaller.
    for (w, h) in [(300, 200), (641, 479), (123, 77)] {
        let pixels = crop_pixels(&src, 0, 0, w, h);
        let image = GrayImage::new(&pixels, w, h).unwrap();
        let g = gpu.detect(&image, &params).unwrap();
        let c = cpu.detect(&image, &params).unwrap();
        assert_eq!(g.keypoints, c.keypoints, "{w}x{h}");
        assert_eq!(g.dropped, c.dropped);
        assert_eq!((g.width, g.height), (w, h));
        assert!(!g.keypoints.is_empty());
        for (a, b) in g.descriptors.iter().zip(&c.descriptors) {
            let dist = a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f32>()
                .sqrt();
            assert!(dist <= 1e-4, "{w}x{h}: {dist}");
        }
        assert_eq!(g.descriptors.len(), c.descriptors.len());
    }
    // SURF still works on the same backend after Harris.
    let pixels = crop_pixels(&src, 0, 0, 200, 160);
    let image = GrayImage::new(&pixels, 200, 160).unwrap();
    let surf = DetectParams {
        detector: DetectorKind::Surf,
        ..params
    };
    let g = gpu.detect(&image, &surf).unwrap();
    let c = cpu.detect(&image, &surf).unwrap();
    assert_eq!(g.keypoints.len(), c.keypoints.len());
}

/// Timing on the local OpenCL device (PoCL here) against the core, same run:
/// `cargo test --release -p surfcl-tests --test opencl_harris -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_1024() {
    require_opencl();
    let src = boat(1);
    let (w, h) = (1024, 1024);
    // The boat image mirrored to 1024x1024 (it is 850x680).
    let pixels: Vec<u8> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let fx = if x < src.width {
                x
            } else {
                2 * src.width - 1 - x
            };
            let fy = if y < src.height {
                y
            } else {
                2 * src.height - 1 - y
            };
            src.pixels[fy * src.width + fx]
        })
        .collect();
    let image = GrayImage::new(&pixels, w, h).unwrap();
    let config = HarrisConfig::default();
    let max_kp = 2000;
    let runs = 10;
    // SURFCL_HARRIS_LOCAL=n: tile work-items (default: the pipeline's choice).
    let local = std::env::var("SURFCL_HARRIS_LOCAL")
        .ok()
        .and_then(|v| v.parse().ok());
    // The stage times come from profiling queues.
    surfcl_gpu::opencl::set_profiling(true);
    for describe in [false, true] {
        let mut p = HarrisPipeline::open(
            None,
            HarrisPipelineConfig {
                describe,
                local_size: local,
                ..HarrisPipelineConfig::new(w, h, config, max_kp)
            },
        )
        .unwrap();
        p.detect(&image).unwrap();
        let first = p.detect(&image).unwrap();
        eprintln!(
            "{} candidates, {} kept, tile {} work-items",
            first.candidates,
            first.keypoints.len(),
            p.tile_work_items()
        );
        let mut walls = Vec::new();
        let mut stages: Vec<(String, f64)> = Vec::new();
        for _ in 0..runs {
            let out = p.detect(&image).unwrap();
            walls.push(out.wall_ms);
            for t in &out.timings {
                match stages.iter_mut().find(|s| s.0 == t.name) {
                    Some(s) => s.1 += t.ms / runs as f64,
                    None => stages.push((t.name.clone(), t.ms / runs as f64)),
                }
            }
        }
        walls.sort_by(f64::total_cmp);
        let kernels: f64 = stages
            .iter()
            .filter(|s| s.0 != "upload" && s.0 != "readback")
            .map(|s| s.1)
            .sum();
        eprintln!(
            "{}: opencl describe={describe} wall median {:.3} ms, kernels {:.3} ms, stages {:?}",
            p.device_name(),
            walls[runs / 2],
            kernels,
            stages
                .iter()
                .map(|s| format!("{} {:.3}", s.0, s.1))
                .collect::<Vec<_>>()
        );
    }
    let mut scratch = vec![0i32; harris::scratch_len(w, h).unwrap()];
    let mut storage = vec![Keypoint::default(); max_kp];
    let mut times = Vec::new();
    let mut n = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let mut sink = KeypointBuffer::new(&mut storage);
        harris::detect(&image, &config, &mut scratch, &mut sink).unwrap();
        sink.sort();
        n = sink.len();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "core harris::detect 1024x1024: median {:.3} ms ({n} corners)",
        times[runs / 2]
    );
}
