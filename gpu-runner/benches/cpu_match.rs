//! The CPU backend's 2-NN matching (ratio test 0.8) on real SURF-64 descriptors, one thread:
//! `f32` and Q7, with and without the sign-of-Laplacian test, at N = 3000 and 15000 descriptors
//! per side (the strongest N keypoints of two real images, so that every size is the same kind
//! of data).
//!
//! Run: `cargo bench -p surfcl-gpu --bench cpu_match -- report`. `SURFCL_MATCH_IMAGES=A,B`
//! replaces the default pair, Oxford boat img1 and img2, upscaled 2x (so that 15000 keypoints
//! exist); `SURFCL_MATCH_SIZES` the sizes (default `3000,15000`); `SURFCL_MATCH_DUMP=DIR` writes
//! each size's descriptors as raw little-endian `f32` (`DIR/query_N.f32`, `DIR/train_N.f32`, 64
//! per row) for the OpenCV peer, `scripts/peer_bfmatcher.py`, to match the same data. Each line
//! is the best of 5 runs (after a warm-up) in milliseconds.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use surfcl_core::matcher::MatchConfig;
use surfcl_core::surf::SurfConfig;
use surfcl_gpu::backend::{Backend, DescriptorKind, DetectParams, Features};
use surfcl_gpu::cpu::CpuBackend;
#[path = "../tests/support/gray.rs"]
mod gray;
use gray::{OwnedGray, load_gray};

/// The two images and whether to upscale them 2x.
fn images() -> (Vec<PathBuf>, bool) {
    match std::env::var("SURFCL_MATCH_IMAGES") {
        Ok(list) => (list.split(',').map(PathBuf::from).collect(), false),
        Err(_) => {
            let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat");
            (vec![data.join("img1.pgm"), data.join("img2.pgm")], true)
        }
    }
}

fn sizes() -> Vec<usize> {
    std::env::var("SURFCL_MATCH_SIZES")
        .unwrap_or_else(|_| "3000,15000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

/// `image` upscaled 2x by pixel repetition.
fn upscale(image: &OwnedGray) -> (Vec<u8>, usize, usize) {
    let view = image.view().expect("image view");
    let (w, h) = (view.width(), view.height());
    let pixels = view.pixels();
    let mut out = vec![0u8; 4 * w * h];
    for y in 0..2 * h {
        for x in 0..2 * w {
            out[y * 2 * w + x] = pixels[(y / 2) * w + x / 2];
        }
    }
    (out, 2 * w, 2 * h)
}

/// The strongest `n` keypoints of each image (a low threshold, every sample), described.
fn features(backend: &mut CpuBackend, n: usize) -> Vec<Features> {
    let (paths, twice) = images();
    let params = DetectParams {
        surf: SurfConfig {
            threshold: 0.00001,
            init_sample_step: 1,
            ..SurfConfig::default()
        },
        max_keypoints: n,
        ..DetectParams::default()
    };
    paths
        .iter()
        .map(|path| {
            let owned = load_gray(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let (pixels, w, h) = if twice {
                upscale(&owned)
            } else {
                let view = owned.view().expect("image view");
                (view.pixels().to_vec(), view.width(), view.height())
            };
            let image = surfcl_core::GrayImage::new(&pixels, w, h).expect("image");
            backend.detect(&image, &params).expect("detection failed")
        })
        .collect()
}

fn dump(dir: &str, name: &str, f: &Features) {
    let bytes: Vec<u8> = f
        .descriptors
        .iter()
        .flat_map(|d| d.iter().flat_map(|v| v.to_le_bytes()))
        .collect();
    let path = Path::new(dir).join(format!("{name}_{}.f32", f.descriptors.len()));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn best_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn bench(c: &mut Criterion) {
    let mut backend = CpuBackend::with_threads(1);
    for n in sizes() {
        let sides = features(&mut backend, n);
        let (query, train) = (&sides[0], &sides[1]);
        if let Ok(dir) = std::env::var("SURFCL_MATCH_DUMP") {
            dump(&dir, "query", query);
            dump(&dir, "train", train);
        }
        let mut line = format!(
            "match {} x {} (1 thread, best of 5, ms):",
            query.keypoints.len(),
            train.keypoints.len()
        );
        for (kind, name) in [(DescriptorKind::F32, "f32"), (DescriptorKind::Q7, "q7")] {
            for sign_test in [false, true] {
                let config = MatchConfig {
                    sign_test,
                    ..MatchConfig::default()
                };
                let ms = best_ms(5, || {
                    black_box(
                        backend
                            .match_features(query, train, &config, kind)
                            .expect("matching failed"),
                    );
                });
                let label = if sign_test { "+sign" } else { "" };
                line.push_str(&format!(" {name}{label} {ms:.1}"));
            }
        }
        println!("{line}");
        let config = MatchConfig::default();
        c.bench_function(&format!("cpu_match/f32_sign_{n}"), |b| {
            b.iter(|| black_box(backend.match_features(query, train, &config, DescriptorKind::F32)))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
