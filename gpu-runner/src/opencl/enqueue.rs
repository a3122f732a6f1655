//! The only place that enqueues kernels (`ocl`'s `enq` is `unsafe` because the runtime cannot
//! check what a kernel does with its buffers).
#![allow(unsafe_code)]

use ocl::{Event, Kernel};

use super::OpenClError;

/// Enqueues `kernel` on its queue over a 1-D range of `global` work-items in groups of `local`
/// (`global` is rounded up to a multiple of `local`; every kernel bounds-checks its id), and
/// records the command's event in `event` for profiling.
///
/// Callers guarantee the invariant that makes this sound: every buffer argument of `kernel` was
/// allocated by the same pipeline for its maximum frame size and capacities, and the scalar
/// arguments (frame size, counts, capacities) never exceed what those buffers hold.
pub(crate) fn launch(
    kernel: &Kernel,
    global: usize,
    local: usize,
    event: &mut Event,
) -> Result<(), OpenClError> {
    let local = local.max(1);
    let global = global.div_ceil(local).max(1) * local;
    // SAFETY: the kernels of kernels/*.cl read and write only inside the index ranges implied by
    // their scalar arguments (all guarded by explicit bounds checks against the frame size and the
    // capacities), and the pipeline sizes every buffer for its maximum frame and capacities, which
    // it checks before setting those scalars (see the doc comment above). Local memory arguments
    // are sized from the same `local` value passed here. The queue is in-order, so no kernel sees
    // a buffer before the command that fills it has finished.
    unsafe {
        kernel
            .cmd()
            .global_work_size(global)
            .local_work_size(local)
            .enew(event)
            .enq()
    }
    .map_err(OpenClError::runtime("enqueue kernel"))
}
