//! The streaming pipeline against frame-by-frame processing, on PoCL in CI: the same keypoints
//! and descriptors as `SurfPipeline::detect` of each frame alone, the same matches as the core's
//! `match_f32` of each frame against the previous good one, and bad frames skipped without
//! disturbing the stream.

use surfcl_core::harris::HarrisConfig;
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::surf::SurfConfig;
use surfcl_core::{Descriptor, GrayImage, Keypoint};
use surfcl_gpu::opencl::{
    DetectOutput, DetectorConfig, OpenClError, StreamFrame, StreamPipeline, SurfPipeline,
    SurfPipelineConfig,
};
use surfcl_gpu::opencl::{HarrisPipeline, HarrisPipelineConfig};
use surfcl_tests::{boat, core_matches, crop_pixels, require_opencl};

/// The core's matches of the frame-by-frame output `frame` against `previous`: what a stream
/// reports for `frame`.
fn core_matches_of(
    frame: &DetectOutput,
    previous: &DetectOutput,
    config: &MatchConfig,
) -> Vec<Match> {
    core_matches(
        &frame.keypoints,
        &frame.descriptors,
        &previous.keypoints,
        &previous.descriptors,
        config,
    )
}

fn config(w: usize, h: usize) -> SurfPipelineConfig {
    SurfPipelineConfig {
        max_width: w,
        max_height: h,
        surf: SurfConfig::default(),
        max_keypoints: 300,
        local_size: None,
    }
}

#[test]
fn stream_equals_frame_by_frame_and_skips_bad_frames() {
    require_opencl();
    let src = boat(1);
    let (w, h) = (240, 180);
    let crops: Vec<Vec<u8>> = [(0, 0), (6, 3), (13, 5), (20, 9)]
        .iter()
        .map(|&(dx, dy)| crop_pixels(&src, 300 + dx, 250 + dy, w, h))
        .collect();
    let too_big = crop_pixels(&src, 300, 250, w + 8, h);
    let mut frames: Vec<GrayImage<'_>> = crops
        .iter()
        .map(|c| GrayImage::new(c, w, h).unwrap())
        .collect();
    // A frame larger than the pipeline's maximum, third in the stream.
    frames.insert(2, GrayImage::new(&too_big, w + 8, h).unwrap());

    for cross_check in [false, true] {
        let matching = MatchConfig {
            cross_check,
            ..MatchConfig::default()
        };
        // Reference: each good frame alone, then the core matcher against the previous good one.
        let mut single = SurfPipeline::open(None, config(w, h)).unwrap();
        let reference: Vec<_> = crops
            .iter()
            .map(|c| single.detect(&GrayImage::new(c, w, h).unwrap()).unwrap())
            .collect();

        let mut stream = StreamPipeline::open(None, config(w, h), matching).unwrap();
        let mut results: Vec<(usize, Result<StreamFrame, OpenClError>)> = Vec::new();
        stream.run(frames.iter().copied(), |i, r| {
            results.push((i, r));
            true
        });
        assert_eq!(results.len(), frames.len());
        // Input indices of the good frames, in order, and the previous good one of each.
        let good = [0usize, 1, 3, 4];
        let mut good_seen = 0;
        for (i, r) in &results {
            if *i == 2 {
                assert!(
                    matches!(r, Err(OpenClError::ImageTooLarge { .. })),
                    "bad frame: {r:?}"
                );
                continue;
            }
            let f = r.as_ref().unwrap();
            assert_eq!(f.index, *i);
            let k = good_seen;
            good_seen += 1;
            assert_eq!(good[k], *i);
            let want = &reference[k];
            assert!(!want.keypoints.is_empty());
            assert_eq!(f.keypoints, want.keypoints, "frame {i}");
            assert_eq!(f.descriptors, want.descriptors, "frame {i}");
            if k == 0 {
                assert_eq!(f.previous, None);
                assert!(f.matches.is_empty());
            } else {
                assert_eq!(f.previous, Some(good[k - 1]), "frame {i}");
                let prev = &reference[k - 1];
                let core = core_matches_of(want, prev, &matching);
                assert!(core.len() > 10, "frames should match: {}", core.len());
                assert_eq!(f.matches, core, "frame {i} cross_check {cross_check}");
            }
        }
        assert_eq!(good_seen, good.len());

        // `process` (no overlap) gives the same frames as `run`.
        stream.reset();
        let mut previous: Option<(Vec<Keypoint>, Vec<Descriptor>)> = None;
        for (k, c) in crops.iter().enumerate() {
            let f = stream.process(&GrayImage::new(c, w, h).unwrap()).unwrap();
            assert_eq!(f.keypoints, reference[k].keypoints);
            assert_eq!(f.previous.is_some(), previous.is_some());
            if let Some((pk, pd)) = &previous {
                let core = core_matches(
                    &reference[k].keypoints,
                    &reference[k].descriptors,
                    pk,
                    pd,
                    &matching,
                );
                assert_eq!(f.matches, core);
            }
            previous = Some((f.keypoints.clone(), f.descriptors.clone()));
        }
    }
}

/// Harris streams: each frame's corners and descriptors equal `HarrisPipeline::detect` of that
/// frame alone, matches equal the core's; a frame too large and an unreadable one (an `Err`
/// item) are reported for their index and skipped.
#[test]
fn harris_stream_equals_frame_by_frame_and_skips_bad_frames() {
    require_opencl();
    let src = boat(1);
    let (w, h) = (240, 180);
    let crops: Vec<Vec<u8>> = [(0, 0), (5, 2), (11, 7)]
        .iter()
        .map(|&(dx, dy)| crop_pixels(&src, 200 + dx, 300 + dy, w, h))
        .collect();
    let config = HarrisPipelineConfig::new(w, h, HarrisConfig::default(), 250);
    let mut single = HarrisPipeline::open(None, config).unwrap();
    let reference: Vec<_> = crops
        .iter()
        .map(|c| single.detect(&GrayImage::new(c, w, h).unwrap()).unwrap())
        .collect();

    let matching = MatchConfig::default();
    let mut stream =
        StreamPipeline::open_detector(None, DetectorConfig::Harris(config), matching).unwrap();
    let too_wide = crop_pixels(&src, 200, 300, w + 4, h);
    // Inputs: good, larger than the stream, good, unreadable (an empty file), good.
    let inputs: Vec<Result<GrayImage<'_>, String>> = vec![
        Ok(GrayImage::new(&crops[0], w, h).unwrap()),
        Ok(GrayImage::new(&too_wide, w + 4, h).unwrap()),
        Ok(GrayImage::new(&crops[1], w, h).unwrap()),
        Err("empty file".to_string()),
        Ok(GrayImage::new(&crops[2], w, h).unwrap()),
    ];
    let mut results = Vec::new();
    stream.run(inputs, |i, r| {
        results.push((i, r));
        true
    });
    assert_eq!(
        results.iter().map(|r| r.0).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert!(
        matches!(results[1].1, Err(OpenClError::ImageTooLarge { .. })),
        "{:?}",
        results[1].1
    );
    assert!(
        matches!(&results[3].1, Err(OpenClError::BadFrame(m)) if m.contains("empty file")),
        "{:?}",
        results[3].1
    );
    let good = [(0usize, 0usize), (2, 1), (4, 2)];
    for (k, &(input, crop_index)) in good.iter().enumerate() {
        let f = results[input].1.as_ref().unwrap();
        let want = &reference[crop_index];
        assert!(want.keypoints.len() > 50, "{}", want.keypoints.len());
        assert_eq!(f.keypoints, want.keypoints, "frame {input}");
        assert_eq!(f.descriptors, want.descriptors, "frame {input}");
        if k == 0 {
            assert_eq!(f.previous, None);
        } else {
            let (prev_input, prev_crop) = good[k - 1];
            assert_eq!(f.previous, Some(prev_input));
            let prev = &reference[prev_crop];
            let core = core_matches_of(want, prev, &matching);
            assert!(core.len() > 10, "frames should match: {}", core.len());
            assert_eq!(f.matches, core, "frame {input}");
        }
    }
}

/// A Harris stream must describe its corners: without descriptors it is refused at creation.
#[test]
fn harris_stream_without_descriptors_is_refused() {
    require_opencl();
    let config = HarrisPipelineConfig {
        describe: false,
        ..HarrisPipelineConfig::new(64, 64, HarrisConfig::default(), 10)
    };
    let r =
        StreamPipeline::open_detector(None, DetectorConfig::Harris(config), MatchConfig::default());
    assert!(matches!(r, Err(OpenClError::Unsupported(_))), "{r:?}");
}

/// Keypoint counts that jump between frames (a flat frame between textured ones) take the
/// stream's re-run path (the readback sized from recent frames is too short): the results are
/// still those of frame-by-frame processing.
#[test]
fn stream_with_jumping_keypoint_counts_equals_frame_by_frame() {
    require_opencl();
    let src = boat(1);
    let (w, h) = (240, 180);
    let flat = vec![128u8; w * h];
    let crops: Vec<Vec<u8>> = [(0, 0), (4, 3), (9, 5)]
        .iter()
        .map(|&(dx, dy)| crop_pixels(&src, 300 + dx, 250 + dy, w, h))
        .collect();
    // The readback of a frame is sized from the two frames finished before it was queued:
    // after two flat frames it is too short for a textured one.
    let sequence: Vec<&[u8]> = vec![
        &crops[0], &flat, &flat, &crops[1], &crops[2], &flat, &crops[0],
    ];
    let mut single = SurfPipeline::open(None, config(w, h)).unwrap();
    let reference: Vec<_> = sequence
        .iter()
        .map(|p| single.detect(&GrayImage::new(p, w, h).unwrap()).unwrap())
        .collect();
    assert!(reference[1].keypoints.is_empty());
    assert!(reference[4].keypoints.len() > 100);
    let matching = MatchConfig::default();
    let mut stream = StreamPipeline::open(None, config(w, h), matching).unwrap();
    let mut results = Vec::new();
    stream.run(
        sequence.iter().map(|p| GrayImage::new(p, w, h).unwrap()),
        |i, r| {
            results.push((i, r.unwrap()));
            true
        },
    );
    assert_eq!(results.len(), sequence.len());
    assert!(stream.reruns() >= 1, "reruns {}", stream.reruns());
    for (i, f) in &results {
        let want = &reference[*i];
        assert_eq!(f.keypoints, want.keypoints, "frame {i}");
        assert_eq!(f.descriptors, want.descriptors, "frame {i}");
        if *i > 0 {
            assert_eq!(f.previous, Some(i - 1));
            let prev = &reference[i - 1];
            let core = core_matches_of(want, prev, &matching);
            assert_eq!(f.matches, core, "frame {i}");
        }
    }
}

/// `surfcl stream DIR --json FILE` (in-process, the binary's `main_with_args`), SURF and Harris:
/// one JSON row per input file in name order; an empty file and a frame larger than
/// `--max-size` are reported with their error and skipped; the good frames have the keypoints of
/// frame-by-frame processing and are matched against the previous good frame.
#[test]
fn stream_cli_reports_bad_files_and_matches_good_frames() {
    require_opencl();
    let src = boat(1);
    let (w, h) = (240, 180);
    let dir = std::env::temp_dir().join(format!("surfcl-stream-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pgm = |name: &str, pixels: &[u8], w: usize, h: usize| {
        let mut bytes = format!("P5\n{w} {h}\n255\n").into_bytes();
        bytes.extend_from_slice(pixels);
        std::fs::write(dir.join(name), bytes).unwrap();
    };
    let good: Vec<Vec<u8>> = [(0, 0), (5, 3), (11, 6)]
        .iter()
        .map(|&(dx, dy)| crop_pixels(&src, 300 + dx, 250 + dy, w, h))
        .collect();
    pgm("f0.pgm", &good[0], w, h);
    pgm("f1.pgm", &good[1], w, h);
    std::fs::write(dir.join("f2.pgm"), b"").unwrap();
    pgm("f3.pgm", &crop_pixels(&src, 300, 250, w + 10, h), w + 10, h);
    pgm("f4.pgm", &good[2], w, h);

    for detector in ["surf", "harris"] {
        let json = dir.join(format!("{detector}.json"));
        let code = surfcl_cli::main_with_args([
            "surfcl",
            "stream",
            dir.to_str().unwrap(),
            "--max-size",
            "240x180",
            "--max-keypoints",
            "300",
            "--detector",
            detector,
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(code, std::process::ExitCode::SUCCESS, "{detector}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["detector"], detector);
        let frames = v["frames"].as_array().unwrap();
        assert_eq!(frames.len(), 5, "{detector}: one row per file");
        assert!(
            frames[2]["error"].as_str().unwrap().contains("f2.pgm"),
            "{}",
            frames[2]
        );
        assert!(
            frames[3]["error"].as_str().unwrap().contains("exceeds"),
            "{}",
            frames[3]
        );
        // Reference keypoint counts, frame by frame, with the CLI's configuration.
        let counts: Vec<usize> = good
            .iter()
            .map(|p| {
                let image = GrayImage::new(p, w, h).unwrap();
                if detector == "surf" {
                    SurfPipeline::open(None, config(w, h))
                        .unwrap()
                        .detect(&image)
                        .unwrap()
                        .keypoints
                        .len()
                } else {
                    HarrisPipeline::open(
                        None,
                        HarrisPipelineConfig::new(w, h, HarrisConfig::default(), 300),
                    )
                    .unwrap()
                    .detect(&image)
                    .unwrap()
                    .keypoints
                    .len()
                }
            })
            .collect();
        for (row, (want_kp, previous)) in
            [0usize, 1, 4]
                .iter()
                .zip(counts.iter().zip([None, Some(0u64), Some(1u64)]))
        {
            let f = &frames[*row];
            assert!(f.get("error").is_none(), "{detector}: {f}");
            assert_eq!(f["index"], *row as u64);
            assert_eq!(
                f["keypoints"].as_array().unwrap().len(),
                *want_kp,
                "{detector} {row}"
            );
            assert_eq!(f["previous"].as_u64(), previous, "{detector} {row}");
            if previous.is_some() {
                assert!(
                    f["matches"].as_array().unwrap().len() > 10,
                    "{detector} {row}"
                );
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Resident memory of the process, KiB (`VmRSS` of `/proc/self/status`; `None` off Linux).
fn vm_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A long stream holds no growing state (events, kernels, staging): after a warm-up, 400 more
/// frames leave the resident memory within 8 MiB, and the frames keep matching.
#[test]
fn long_stream_does_not_grow() {
    require_opencl();
    let src = boat(1);
    let (w, h) = (160, 120);
    let crops: Vec<Vec<u8>> = (0..8)
        .map(|k| crop_pixels(&src, 300 + 3 * k, 250 + 2 * k, w, h))
        .collect();
    let mut stream = StreamPipeline::open(None, config(w, h), MatchConfig::default()).unwrap();
    let frames = |n: usize| {
        (0..n)
            .map(|i| GrayImage::new(&crops[i % crops.len()], w, h).unwrap())
            .collect::<Vec<_>>()
    };
    let mut matched = 0usize;
    let mut run = |stream: &mut StreamPipeline, n: usize| {
        stream.run(frames(n), |_, r| {
            matched += usize::from(r.unwrap().matches.len() > 5);
            true
        });
    };
    run(&mut stream, 100);
    let before = vm_rss_kib();
    run(&mut stream, 400);
    let after = vm_rss_kib();
    assert!(
        matched >= 490,
        "{matched} of 500 frames matched their previous one"
    );
    if let (Some(b), Some(a)) = (before, after) {
        eprintln!("VmRSS {b} KiB after 100 frames, {a} KiB after 500");
        assert!(
            a <= b + 8 * 1024,
            "resident memory grew from {b} to {a} KiB"
        );
    }
}
