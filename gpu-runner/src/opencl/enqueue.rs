//! The only place with `unsafe`: enqueuing kernels with `ocl` (its `enq` is `unsafe` because
//! the runtime cannot check what a kernel does with its buffers), mapping pinned staging
//! buffers and non-blocking uploads from them.
#![allow(unsafe_code)]

use ocl::{Buffer, Event, Kernel, MemMap, OclPrm, Queue};

use super::OpenClError;
use super::inject::{self, FaultPoint};

/// Enqueues `kernel` on `queue` (its own queue when `None`) over a 1-D range of `global`
/// work-items in groups of `local` (`global` is rounded up to a multiple of `local`; every
/// kernel bounds-checks its id), and records the command's event in `event` for profiling. The
/// kernel starts only after the events of `wait` (commands on other queues: an upload, a gather
/// of the previous frame) have completed.
///
/// Callers guarantee the invariant that makes this sound: every buffer argument of `kernel` was
/// allocated by the same pipeline for its maximum frame size and capacities, and the scalar
/// arguments (frame size, counts, capacities) never exceed what those buffers hold; `queue`
/// belongs to the context the kernel's program was built for.
pub(crate) fn launch_on(
    kernel: &Kernel,
    queue: Option<&Queue>,
    global: usize,
    local: usize,
    wait: &[Event],
    event: &mut Event,
) -> Result<(), OpenClError> {
    inject::runtime(FaultPoint::Enqueue, "enqueue kernel")?;
    let local = local.max(1);
    let global = global.div_ceil(local).max(1) * local;
    let mut cmd = kernel.cmd();
    if let Some(q) = queue {
        cmd = cmd.queue(q);
    }
    let cmd = cmd
        .global_work_size(global)
        .local_work_size(local)
        .enew(event);
    // SAFETY: the kernels of kernels/*.cl read and write only inside the index ranges implied by
    // their scalar arguments (all guarded by explicit bounds checks against the frame size and the
    // capacities), and the pipeline sizes every buffer for its maximum frame and capacities, which
    // it checks before setting those scalars (see the doc comment above). Local memory arguments
    // are sized from the same `local` value passed here. Queues are in-order, so no kernel sees
    // a buffer before the command that fills it has finished; a buffer filled or read on another
    // queue is ordered by `wait`.
    if wait.is_empty() {
        unsafe { cmd.enq() }
    } else {
        unsafe { cmd.ewait(wait).enq() }
    }
    .map_err(OpenClError::runtime("enqueue kernel"))
}

/// [`launch_on`] on the kernel's own queue.
pub(crate) fn launch_after(
    kernel: &Kernel,
    global: usize,
    local: usize,
    wait: &[Event],
    event: &mut Event,
) -> Result<(), OpenClError> {
    launch_on(kernel, None, global, local, wait, event)
}

/// Starts a non-blocking readback of the first `dst.len()` words of `src` into `dst` on
/// `queue`, recording `event`.
///
/// Callers guarantee that `dst` (a mapped pinned staging area) outlives the command and is
/// neither read nor written by the host until `event` has completed.
pub(crate) fn read_async(
    src: &Buffer<u32>,
    dst: &mut [u32],
    queue: &Queue,
    event: &mut Event,
) -> Result<(), OpenClError> {
    inject::runtime(FaultPoint::Readback, "read back results")?;
    if dst.len() > src.len() {
        return Err(OpenClError::Unsupported(format!(
            "readback of {} words from a {}-word buffer",
            dst.len(),
            src.len()
        )));
    }
    // SAFETY: the length is checked above; the lifetime and no-access rule is the caller's
    // documented obligation (the stream owns the staging map and waits on the event before it
    // reads or reuses it).
    unsafe { src.read(dst).queue(queue).block(false).enew(event).enq() }
        .map_err(OpenClError::runtime("read back results"))
}

/// [`launch_after`] without a dependency on another queue.
pub(crate) fn launch(
    kernel: &Kernel,
    global: usize,
    local: usize,
    event: &mut Event,
) -> Result<(), OpenClError> {
    launch_after(kernel, global, local, &[], event)
}

/// Maps a whole staging buffer (made with `CL_MEM_ALLOC_HOST_PTR`: pinned host memory on
/// discrete GPUs) for host reads and writes, for as long as the returned map lives.
///
/// Callers guarantee that the buffer is only ever a host staging area: it is never passed to a
/// kernel or used as the destination of a device command while mapped, so host accesses through
/// the map cannot race with the device.
pub(crate) fn map_staging<T: OclPrm>(buffer: &Buffer<T>) -> Result<MemMap<T>, OpenClError> {
    // SAFETY: see the doc comment: the mapped region is accessed only by the host, and the map
    // (which unmaps on drop) keeps a reference to the buffer, so it cannot outlive it.
    unsafe { buffer.map().read().write().enq() }.map_err(OpenClError::runtime("map staging buffer"))
}

/// Enqueues a non-blocking upload of `src` (a slice of a mapped staging buffer) into `dst` on
/// `queue`; `event` completes when the copy is done.
///
/// Callers guarantee that `src` stays alive and unmodified until `event` has completed (the
/// stream waits for it before refilling that staging slot) and that `src` fits in `dst`.
pub(crate) fn upload_async(
    dst: &Buffer<u8>,
    src: &[u8],
    queue: &Queue,
    event: &mut Event,
) -> Result<(), OpenClError> {
    if src.len() > dst.len() {
        return Err(OpenClError::Unsupported(format!(
            "upload of {} bytes into a {}-byte buffer",
            src.len(),
            dst.len()
        )));
    }
    inject::runtime(FaultPoint::Upload, "upload frame")?;
    // SAFETY: the length is checked above; the lifetime and no-modification rule is the
    // caller's documented obligation (the staging map is owned next to the event and is only
    // rewritten after waiting on it).
    unsafe { dst.write(src).queue(queue).block(false).enew(event).enq() }
        .map_err(OpenClError::runtime("upload frame"))
}

/// The number of OpenCL platforms the ICD loader reports, from one `clGetPlatformIDs` call.
///
/// `ocl-core`'s own query treats "no platform" (`CL_PLATFORM_NOT_FOUND_KHR`, what the loader says
/// when no ICD is installed) as a start-up race and retries five times with 2 s sleeps: a 10 s
/// wait on every board without an OpenCL driver. Asking once here lets the caller fall back at
/// once. Any error code counts as no platform.
pub(crate) fn platform_count() -> u32 {
    let mut count: ocl::core::ffi::cl_uint = 0;
    // SAFETY: with `num_entries = 0` and a null `platforms` pointer, the call only writes the
    // count through the valid `&mut count` pointer (OpenCL 1.2, section 4.1).
    let status = unsafe { ocl::core::ffi::clGetPlatformIDs(0, core::ptr::null_mut(), &mut count) };
    if status == ocl::core::ffi::CL_SUCCESS {
        count
    } else {
        0
    }
}
