//! Fault injection through `surfcl_gpu::fault::FaultyBackend`: a failing call gives the caller a
//! typed error and nothing else, and the next frame through the same backend is exactly what a
//! backend that never failed produces.

use surfcl_cli::io::OwnedGray;
use surfcl_core::matcher::MatchConfig;
use surfcl_gpu::backend::{Backend, DescriptorKind, DetectParams, DetectorKind, Features};
use surfcl_gpu::cpu::CpuBackend;
use surfcl_gpu::error::Error;
use surfcl_gpu::fault::{FAULT_ENV, FaultKind, FaultPlan, FaultyBackend, Operation};
use surfcl_gpu::opencl::OpenClError;
use surfcl_tests::{boat_crop, detect_in_child, detect_params, run_child_test, untimed};

fn frames() -> Vec<OwnedGray> {
    vec![
        boat_crop(1, 300, 200, 200, 160),
        boat_crop(2, 300, 200, 200, 160),
        boat_crop(3, 100, 100, 180, 150),
        boat_crop(1, 500, 400, 160, 200),
    ]
}

fn params() -> DetectParams {
    detect_params(DetectorKind::Surf, 500)
}

fn run_stream(backend: &mut dyn Backend, frames: &[OwnedGray]) -> Vec<Result<Features, Error>> {
    frames
        .iter()
        .map(|f| backend.detect(&f.view().unwrap(), &params()).map(untimed))
        .collect()
}

#[test]
fn detect_fault_fails_one_frame_and_the_stream_goes_on() {
    let frames = frames();
    let reference: Vec<Features> = run_stream(&mut CpuBackend::with_threads(2), &frames)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(reference.iter().all(|f| !f.keypoints.is_empty()));

    let plan = FaultPlan::once(Operation::Detect, 2, FaultKind::Internal);
    let mut faulty = FaultyBackend::new(CpuBackend::with_threads(2), plan);
    let got = run_stream(&mut faulty, &frames);
    assert_eq!(faulty.injected(), 1);
    for (i, (g, r)) in got.iter().zip(&reference).enumerate() {
        if i == 1 {
            let e = g.as_ref().unwrap_err();
            assert!(
                matches!(e, Error::Internal(m) if m.contains("detect call 2")),
                "{e}"
            );
        } else {
            assert_eq!(g.as_ref().unwrap(), r, "frame {i} after the fault differs");
        }
    }
}

#[test]
fn sticky_faults_then_recovery_through_a_fresh_plan() {
    let frames = frames();
    let plan: FaultPlan = "detect:2+:alloc".parse().unwrap();
    let mut faulty = FaultyBackend::new(CpuBackend::with_threads(1), plan);
    let got = run_stream(&mut faulty, &frames);
    assert!(got[0].is_ok());
    for g in &got[1..] {
        let e = g.as_ref().unwrap_err();
        assert!(
            matches!(e, Error::OpenCl(OpenClError::Allocation { .. })),
            "{e}"
        );
    }
    // The inner backend was never touched by the failing calls: unwrapped, it still works and
    // gives the reference result for the last frame.
    let mut inner = faulty.into_inner();
    let last = untimed(inner.detect(&frames[3].view().unwrap(), &params()).unwrap());
    let reference = untimed(
        CpuBackend::with_threads(1)
            .detect(&frames[3].view().unwrap(), &params())
            .unwrap(),
    );
    assert_eq!(last, reference);
}

#[test]
fn match_fault_is_typed_and_the_next_match_is_unchanged() {
    let frames = frames();
    let mut cpu = CpuBackend::with_threads(2);
    let a = cpu.detect(&frames[0].view().unwrap(), &params()).unwrap();
    let b = cpu.detect(&frames[1].view().unwrap(), &params()).unwrap();
    let config = MatchConfig::default();
    let reference = cpu
        .match_features(&a, &b, &config, DescriptorKind::F32)
        .unwrap();
    assert!(!reference.is_empty());

    for kind in [
        FaultKind::Internal,
        FaultKind::Allocation,
        FaultKind::Runtime,
        FaultKind::Io,
    ] {
        let plan = FaultPlan::once(Operation::Match, 1, kind);
        let mut faulty = FaultyBackend::new(CpuBackend::with_threads(2), plan);
        let e = faulty
            .match_features(&a, &b, &config, DescriptorKind::Q7)
            .unwrap_err();
        let typed = match kind {
            FaultKind::Internal => matches!(e, Error::Internal(_)),
            FaultKind::Allocation => matches!(e, Error::OpenCl(OpenClError::Allocation { .. })),
            FaultKind::Runtime => matches!(e, Error::OpenCl(OpenClError::Runtime { .. })),
            FaultKind::Io => matches!(e, Error::Io { .. }),
        };
        assert!(typed, "{kind:?} gave {e:?}");
        assert!(e.to_string().contains("injected fault"), "{e}");
        let next = faulty
            .match_features(&a, &b, &config, DescriptorKind::F32)
            .unwrap();
        assert_eq!(next, reference);
        // Detection is not affected by a match plan.
        assert!(faulty.detect(&frames[2].view().unwrap(), &params()).is_ok());
    }
}

#[test]
fn opencl_backend_recovers_after_an_injected_fault() {
    let inner = match surfcl_gpu::opencl::open(None) {
        Ok(b) => b,
        Err(OpenClError::NoPlatform | OpenClError::NoDevice { .. }) => {
            eprintln!("no OpenCL device: OpenCL fault test not run");
            return;
        }
        Err(e) => panic!("OpenCL open failed: {e}"),
    };
    let frames = frames();
    let mut reference_backend = surfcl_gpu::opencl::open(None).unwrap();
    let reference = run_stream(reference_backend.as_mut(), &frames);
    let plan = FaultPlan::once(Operation::Detect, 1, FaultKind::Runtime);
    let mut faulty = FaultyBackend::new(inner, plan);
    let got = run_stream(&mut faulty, &frames);
    assert!(matches!(
        got[0],
        Err(Error::OpenCl(OpenClError::Runtime { .. }))
    ));
    for (g, r) in got.iter().zip(&reference).skip(1) {
        assert_eq!(g.as_ref().unwrap(), r.as_ref().unwrap());
    }
}

/// The child half of [`cli_detect_with_injected_fault_exits_nonzero`]: runs `surfcl detect`
/// in-process (the same `main_with_args` as the binary) and fails when it does not succeed.
/// Without the environment variable of the parent it does nothing.
#[test]
fn cli_child() {
    detect_in_child("SURFCL_TEST_CLI_IMAGE", "cpu");
}

/// A small image (debug builds stay fast) through [`cli_child`], with `fault` in [`FAULT_ENV`].
fn run_child(fault: Option<&str>) -> std::process::Output {
    let image = boat_crop(1, 300, 200, 120, 100);
    run_child_test(
        "cli_child",
        &image,
        "SURFCL_TEST_CLI_IMAGE",
        (FAULT_ENV, fault),
    )
}

#[test]
fn cli_detect_with_injected_fault_exits_nonzero() {
    let clean = run_child(None);
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    let faulty = run_child(Some("detect:1"));
    let stderr = String::from_utf8_lossy(&faulty.stderr);
    assert!(
        !faulty.status.success(),
        "detect with {FAULT_ENV}=detect:1 succeeded"
    );
    assert!(
        stderr.contains("error: internal error: injected fault: detect call 1"),
        "{stderr}"
    );
    let typo = run_child(Some("detcet:1"));
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert!(!typo.status.success());
    assert!(stderr.contains(FAULT_ENV), "{stderr}");
}
