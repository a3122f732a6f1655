//! The process-wide switch that makes OpenCL queues profile (per-stage device times) or not.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether queues made from now on record device times ([`set_profiling`]).
static PROFILING: AtomicBool = AtomicBool::new(false);

/// Makes the OpenCL queues created after this call (by any pipeline, stream, matcher or backend
/// of this process) profiling queues, whose results carry per-stage device times
/// (`Features::timings`, `DetectOutput::timings`), or not. Off by default: NVIDIA's OpenCL
/// takes measurable time for it (docs/BENCHMARKS.md). `surfcl detect`, `match` and
/// `bench --profile` turn it on; without it a result's timings hold only host-measured stages.
pub fn set_profiling(on: bool) {
    PROFILING.store(on, Ordering::Relaxed);
}

/// Whether queues made now record device times ([`set_profiling`]).
pub fn profiling() -> bool {
    PROFILING.load(Ordering::Relaxed)
}
