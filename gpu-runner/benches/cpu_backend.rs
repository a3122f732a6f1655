//! The CPU backend end to end (integral, detection, orientation and description; the matcher's
//! own bench is `surfcl-core`'s `matcher`) on real images, with one thread and with every
//! thread of the machine, warm (buffers reused from frame to frame, as in a stream).
//!
//! Run: `cargo bench -p surfcl-gpu --bench cpu_backend`. `SURFCL_BENCH_IMAGES` (paths separated
//! by commas) replaces the default image, Oxford boat img1; `SURFCL_BENCH_THREADS` (e.g. `1` or
//! `1,2`) the thread counts. Frames are detected as a stream does: into the previous frame's
//! `Features` (`Backend::detect_into`, see [`detect_frame`]). Before the criterion figures, each
//! case prints the median time of every stage over `SURFCL_BENCH_FRAMES` frames (default 15;
//! the backend's own `Features::timings`) and the best and median frame. A criterion filter that matches nothing
//! (`-- report`) prints only these lines: `scripts/bench_cpu_vs_b728.sh` alternates trees that
//! way.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use surfcl_core::harris::HarrisConfig;
use surfcl_core::surf::SurfConfig;
use surfcl_gpu::backend::{Backend, DescriptorKind, DetectParams, DetectorKind, Features};
use surfcl_gpu::cpu::CpuBackend;
#[path = "../tests/support/gray.rs"]
mod gray;
use gray::load_gray;

/// The images of this run.
fn images() -> Vec<PathBuf> {
    match std::env::var("SURFCL_BENCH_IMAGES") {
        Ok(list) => list.split(',').map(PathBuf::from).collect(),
        Err(_) => vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat/img1.pgm")],
    }
}

/// The thread counts of this run: 1 and the machine's.
fn thread_counts() -> Vec<usize> {
    if let Ok(list) = std::env::var("SURFCL_BENCH_THREADS") {
        return list
            .split(',')
            .filter_map(|t| t.trim().parse().ok())
            .collect();
    }
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    if all > 1 { vec![1, all] } else { vec![1] }
}

/// The two configurations of the comparisons: default oriented SURF (4 octaves), and upright
/// SURF with 3 octaves (what the fastest CPU SURF implementations do).
fn configurations() -> [(&'static str, DetectParams); 2] {
    let params = |surf: SurfConfig| DetectParams {
        detector: DetectorKind::Surf,
        surf,
        harris: HarrisConfig::default(),
        max_keypoints: 100_000,
        descriptor: DescriptorKind::F32,
    };
    [
        ("oriented", params(SurfConfig::default())),
        (
            "upright_3oct",
            params(SurfConfig {
                upright: true,
                octaves: 3,
                ..SurfConfig::default()
            }),
        ),
    ]
}

/// Detects one frame into `out`, whose arrays the backend refills, as a caller detecting frame
/// after frame does. `scripts/bench_cpu_vs_b728.sh` turns the `detect_into` call into
/// `detect(..).map(|f| *out = f)` in its b728fc2 copy of this file: that tree's backends have
/// no `detect_into`.
fn detect_frame(
    backend: &mut CpuBackend,
    image: &surfcl_core::GrayImage<'_>,
    params: &DetectParams,
    out: &mut Features,
) {
    let detected = backend.detect_into(image, params, out);
    detected.expect("detection failed");
}

/// Frames per stage report: `SURFCL_BENCH_FRAMES`, default 15.
fn report_frames() -> usize {
    std::env::var("SURFCL_BENCH_FRAMES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15)
        .max(1)
}

/// Times `frames` frames and prints, on one line, the median time of every stage and the best
/// and median whole frame (the sum of its stages). On a shared machine the best frame is the
/// figure least disturbed by other work.
fn print_stages(
    backend: &mut CpuBackend,
    image: &surfcl_core::GrayImage<'_>,
    params: &DetectParams,
    label: &str,
) {
    let frames = report_frames();
    let mut per_stage: Vec<(String, Vec<f64>)> = Vec::new();
    let mut totals = Vec::with_capacity(frames);
    let mut keypoints = 0;
    // One warm-up frame sizes the buffers.
    let mut features = Features::default();
    detect_frame(backend, image, params, &mut features);
    for _ in 0..frames {
        detect_frame(backend, image, params, &mut features);
        keypoints = features.keypoints.len();
        totals.push(features.timings.iter().map(|t| t.ms).sum::<f64>());
        // By name: a stage may run in some frames only (the Haar maps while the backend
        // times them, `HaarMapPolicy::Timed`).
        for t in &features.timings {
            match per_stage.iter_mut().find(|(name, _)| *name == t.name) {
                Some((_, times)) => times.push(t.ms),
                None => per_stage.push((t.name.clone(), vec![t.ms])),
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut line = format!("{label}: {keypoints} keypoints, median ms:");
    for (name, times) in per_stage {
        let runs = times.len();
        line.push_str(&format!(" {name} {:.2}", median(times)));
        if runs < frames {
            line.push_str(&format!(" ({runs} of {frames} frames)"));
        }
    }
    let best = totals.iter().copied().fold(f64::INFINITY, f64::min);
    println!("{line}; frame best {best:.2} median {:.2}", median(totals));
}

fn bench(c: &mut Criterion) {
    for path in images() {
        let owned = load_gray(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let image = owned.view().expect("image view");
        let name = path
            .file_stem()
            .map_or("image".into(), |s| s.to_string_lossy().into_owned());
        let mut group = c.benchmark_group(format!(
            "cpu_backend/{name}_{}x{}",
            image.width(),
            image.height()
        ));
        group.sample_size(15);
        for threads in thread_counts() {
            let mut backend = CpuBackend::with_threads(threads);
            for (mode, params) in configurations() {
                let label = format!("{mode}/{threads}t");
                print_stages(&mut backend, &image, &params, &format!("{name} {label}"));
                let mut features = Features::default();
                group.bench_function(&label, |b| {
                    b.iter(|| {
                        detect_frame(&mut backend, &image, &params, &mut features);
                        black_box(&features);
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
