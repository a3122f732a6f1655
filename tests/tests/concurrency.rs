//! Several pipelines in several threads give exactly the results of one at a time, and their
//! processing overlaps in time (no process-wide lock around detection).
//!
//! Overlap is observed directly: each thread records the `[start, end)` interval of every
//! `detect` call after a warm-up frame (the warm-up may take the OpenCL setup lock while it
//! builds kernels); if a global lock serialised processing, no two intervals of different threads
//! could intersect.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use surfcl_cli::io::OwnedGray;
use surfcl_gpu::backend::{Backend, DetectParams, DetectorKind, Features};
use surfcl_gpu::cpu::CpuBackend;
use surfcl_gpu::opencl::OpenClError;
use surfcl_tests::{boat_crop, detect_params, untimed};

const THREADS: usize = 3;

/// Per-thread frame lists: different images (and sizes) per thread, so that a mix-up between
/// threads' buffers would show.
fn frames_of(thread: usize) -> Vec<OwnedGray> {
    (0..4)
        .map(|i| {
            let k = 1 + (thread + i) % 6;
            boat_crop(k, 40 * thread + 20 * i, 30 * i, 240 - 8 * thread, 180)
        })
        .collect()
}

type Interval = (Instant, Instant);

/// Runs every frame through `backend`, timed (after the barrier, when given).
fn run(
    backend: &mut dyn Backend,
    frames: &[OwnedGray],
    params: &DetectParams,
    barrier: Option<&Barrier>,
) -> (Vec<Features>, Vec<Interval>) {
    if let Some(b) = barrier {
        b.wait();
    }
    let mut out = Vec::new();
    let mut spans = Vec::new();
    for f in frames {
        let start = Instant::now();
        let features = backend.detect(&f.view().unwrap(), params).unwrap();
        spans.push((start, Instant::now()));
        out.push(untimed(features));
    }
    (out, spans)
}

/// Total time during which at least two threads were inside `detect`.
fn overlap(spans: &[Vec<Interval>]) -> Duration {
    let mut total = Duration::ZERO;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            for &(s1, e1) in a {
                for &(s2, e2) in b {
                    let (s, e) = (s1.max(s2), e1.min(e2));
                    if e > s {
                        total += e - s;
                    }
                }
            }
        }
    }
    total
}

/// Opens `threads` backends, runs each one's frames one backend at a time (the reference), then
/// all of them at once, one thread each; returns (sequential, parallel) wall times and the
/// overlap. The same backends serve both runs, so the comparison also covers reuse.
fn check<B: Backend, F: Fn() -> B>(
    open: &F,
    detector: DetectorKind,
    threads: usize,
) -> (Duration, Duration, Duration) {
    let params = detect_params(detector, 400);
    let frames: Vec<Vec<OwnedGray>> = (0..threads).map(frames_of).collect();
    // Warm-up (untimed): the first frame builds the pipeline (OpenCL: kernel builds under the
    // setup lock).
    let mut backends: Vec<B> = (0..threads).map(|_| open()).collect();
    for (b, f) in backends.iter_mut().zip(&frames) {
        b.detect(&f[0].view().unwrap(), &params).unwrap();
    }

    let start = Instant::now();
    let sequential: Vec<Vec<Features>> = frames
        .iter()
        .zip(&mut backends)
        .map(|(f, b)| run(b, f, &params, None).0)
        .collect();
    let sequential_time = start.elapsed();
    assert!(sequential.iter().flatten().all(|f| !f.keypoints.is_empty()));

    let barrier = Barrier::new(threads);
    let start = Instant::now();
    let parallel: Vec<(Vec<Features>, Vec<Interval>)> = std::thread::scope(|s| {
        let handles: Vec<_> = frames
            .iter()
            .zip(backends)
            .map(|(f, mut b)| {
                let (params, barrier) = (&params, &barrier);
                s.spawn(move || run(&mut b, f, params, Some(barrier)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let parallel_time = start.elapsed();
    for (t, ((got, _), want)) in parallel.iter().zip(&sequential).enumerate() {
        assert_eq!(got, want, "thread {t} differs from the sequential run");
    }
    let spans: Vec<Vec<Interval>> = parallel.into_iter().map(|(_, s)| s).collect();
    (sequential_time, parallel_time, overlap(&spans))
}

/// Attempts of [`check`] before a test concludes that calls never overlap. On a loaded machine
/// (two cores, three threads, other jobs) a thread can run all its frames inside one time slice
/// while the others wait, so one attempt without overlap proves nothing; with a process-wide
/// lock around detection no attempt could ever overlap, so the test still fails then.
const OVERLAP_ATTEMPTS: usize = 8;

/// [`check`] until some calls overlap (at most [`OVERLAP_ATTEMPTS`] times, every attempt also
/// comparing the threads' results with the sequential ones); the overlap of the last attempt.
fn check_until_overlap<B: Backend, F: Fn() -> B>(
    name: &str,
    open: F,
    detector: DetectorKind,
    threads: usize,
) -> Duration {
    let mut overlapped = Duration::ZERO;
    for attempt in 1..=OVERLAP_ATTEMPTS {
        let (seq, par, ov) = check(&open, detector, threads);
        eprintln!(
            "{name} {detector:?}, attempt {attempt}: sequential {seq:?}, {threads} threads \
             {par:?}, overlap {ov:?}"
        );
        overlapped = ov;
        if ov > Duration::ZERO {
            break;
        }
    }
    overlapped
}

#[test]
fn cpu_pipelines_in_threads_match_and_overlap() {
    for detector in [DetectorKind::Surf, DetectorKind::Harris] {
        let ov = check_until_overlap("cpu", || CpuBackend::with_threads(1), detector, THREADS);
        assert!(
            ov > Duration::ZERO,
            "no two detect calls overlapped in {OVERLAP_ATTEMPTS} attempts"
        );
    }
}

#[test]
fn opencl_pipelines_in_threads_match_and_overlap() {
    match surfcl_gpu::opencl::open(None) {
        Ok(_) => {}
        Err(OpenClError::NoPlatform | OpenClError::NoDevice { .. }) => {
            eprintln!("no OpenCL device: OpenCL concurrency test not run");
            return;
        }
        Err(e) => panic!("OpenCL open failed: {e}"),
    }
    for detector in [DetectorKind::Surf, DetectorKind::Harris] {
        let open = || surfcl_gpu::opencl::open(None).unwrap();
        let ov = check_until_overlap("opencl", open, detector, 2);
        assert!(
            ov > Duration::ZERO,
            "no two detect calls overlapped in {OVERLAP_ATTEMPTS} attempts"
        );
    }
}
