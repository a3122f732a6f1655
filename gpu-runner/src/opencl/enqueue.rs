//! The only place with `unsafe`: enqueuing kernels with `ocl` (its `enq` is `unsafe` because
//! the runtime cannot check what a kernel does with its buffers) and the pinned [`Staging`]
//! areas with their non-blocking transfers.
#![allow(unsafe_code)]

use std::ops::Range;

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Kernel, MemMap, OclPrm, Queue};

use super::error::OpenClError;
use super::gpu::Gpu;
use super::inject::{self, FaultPoint};

/// Enqueues `kernel` on `queue` (its own queue when `None`) over a 1-D range of `global`
/// work-items in groups of `local` (`global` is rounded up to a multiple of `local`; every
/// kernel bounds-checks its id), and records the command's event in `event` for profiling. The
/// kernel starts only after the events of `wait` (commands on other queues: an upload, a gather
/// of the previous frame) have completed.
///
/// What makes this sound is kept where kernels are made, not at each call: every kernel object
/// is built by the pipeline that owns its buffers, sized for the pipeline's maximum frame and
/// capacities, and a frame's scalar arguments (size, counts) are set only after the frame was
/// checked against them (`FrameIo::check_size`); the kernels bounds-check every index against
/// those scalars. Work-group sizes only change how the range is split.
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

/// [`launch_after`] without a dependency on another queue.
pub(crate) fn launch(
    kernel: &Kernel,
    global: usize,
    local: usize,
    event: &mut Event,
) -> Result<(), OpenClError> {
    launch_after(kernel, global, local, &[], event)
}

/// A pinned host staging area (`CL_MEM_ALLOC_HOST_PTR`, page-locked on discrete GPUs), mapped
/// once for its whole life, for uploads and readbacks at DMA speed.
///
/// It owns its buffer, so no kernel ever sees it, and it remembers its non-blocking transfers
/// in flight: the host reaches the memory only through [`Staging::host`], which waits for all
/// of them first, and dropping the area waits for them too. The obligations of a non-blocking
/// transfer (the host memory outlives the command and is not touched before it completes) are
/// therefore kept by the type, not by its callers. A new transfer waits only for those in
/// flight whose elements it shares, so that the pieces of one frame (disjoint ranges, possibly
/// on two queues) can travel together.
#[derive(Debug)]
pub(crate) struct Staging<T: OclPrm> {
    map: MemMap<T>,
    /// Non-blocking transfers not yet waited for: their elements and events.
    pending: Vec<(Range<usize>, Event)>,
}

impl<T: OclPrm> Staging<T> {
    /// Allocates and maps `len` elements on `gpu`'s context.
    pub(crate) fn new(gpu: &Gpu, what: &'static str, len: usize) -> Result<Self, OpenClError> {
        let buffer = gpu.buffer::<T>(what, len, MemFlags::new().alloc_host_ptr().read_write())?;
        // SAFETY: the buffer is private to this `Staging`: no kernel or device command other
        // than the transfers below (which are waited for before any host access) touches it
        // while it is mapped, and the map keeps a reference to the buffer, so it cannot outlive
        // it.
        let map = unsafe { buffer.map().read().write().enq() }
            .map_err(OpenClError::runtime("map staging buffer"))?;
        Ok(Self {
            map,
            pending: Vec::new(),
        })
    }

    /// Elements the area holds.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The whole area for the host, after the last transfer has completed.
    pub(crate) fn host(&mut self) -> Result<&mut [T], OpenClError> {
        self.wait()?;
        Ok(&mut self.map[..])
    }

    /// Waits for every non-blocking transfer in flight.
    pub(crate) fn wait(&mut self) -> Result<(), OpenClError> {
        self.wait_overlapping(&(0..usize::MAX))
    }

    /// Waits for the transfers in flight that share an element with `range`.
    fn wait_overlapping(&mut self, range: &Range<usize>) -> Result<(), OpenClError> {
        let mut result = Ok(());
        self.pending.retain(|(r, ev)| {
            if r.start >= range.end || range.start >= r.end {
                return true;
            }
            if result.is_ok() {
                result = ev
                    .wait_for()
                    .map_err(|e| OpenClError::runtime("wait for a transfer")(e.into()));
            }
            false
        });
        result
    }

    /// Notes a transfer of `range` whose command's event is `event` (nothing to note when it
    /// blocked).
    fn note(&mut self, range: Range<usize>, blocking: bool, event: &Event) {
        if !blocking {
            self.pending.push((range, event.clone()));
        }
    }

    /// Before a transfer of `range` to or from a buffer of `device_len` elements: checks the
    /// range, waits for the transfers in flight that touch it, and fails here when the fault
    /// plan (tests) says `point` fails, with `what` in the error.
    fn prepare(
        &mut self,
        range: &Range<usize>,
        device_len: usize,
        point: FaultPoint,
        what: &'static str,
    ) -> Result<(), OpenClError> {
        self.check(range, device_len)?;
        self.wait_overlapping(range)?;
        inject::runtime(point, what)
    }

    fn check(&self, range: &Range<usize>, device_len: usize) -> Result<(), OpenClError> {
        if range.start > range.end || range.end > self.map.len() || range.end > device_len {
            return Err(OpenClError::Unsupported(format!(
                "transfer of {range:?} with a {}-element staging area and a {device_len}-element buffer",
                self.map.len()
            )));
        }
        Ok(())
    }
}

impl Staging<u8> {
    /// Copies the bytes `range` to the same bytes of `dst` on `queue`, blocking or not; the
    /// command's event goes to `event`.
    pub(crate) fn upload(
        &mut self,
        dst: &Buffer<u8>,
        range: Range<usize>,
        queue: &Queue,
        blocking: bool,
        event: &mut Event,
    ) -> Result<(), OpenClError> {
        self.prepare(&range, dst.len(), FaultPoint::Upload, "upload frame")?;
        let start = range.start;
        // SAFETY: the range is checked above; the host memory is owned by `self`, which waits
        // for this command (recorded below) before any host access and before it is dropped,
        // and no other transfer in flight touches these bytes (waited for above).
        unsafe {
            dst.write(&self.map[range.clone()])
                .offset(start)
                .queue(queue)
                .block(blocking)
                .enew(&mut *event)
                .enq()
        }
        .map_err(OpenClError::runtime("upload frame"))?;
        self.note(range, blocking, event);
        Ok(())
    }
}

impl Staging<u32> {
    /// Copies the words `range` of `src` into the same words of the area on `queue`, blocking
    /// or not, after the events of `wait` (commands on other queues); the command's event goes
    /// to `event`.
    pub(crate) fn read_back(
        &mut self,
        src: &Buffer<u32>,
        range: Range<usize>,
        queue: &Queue,
        blocking: bool,
        wait: &[Event],
        event: &mut Event,
    ) -> Result<(), OpenClError> {
        self.prepare(&range, src.len(), FaultPoint::Readback, "read back results")?;
        let start = range.start;
        // SAFETY: the range is checked above; the host memory is owned by `self`, which waits
        // for this command (recorded below) before any host access and before it is dropped,
        // and no other transfer in flight touches these words (waited for above).
        unsafe {
            let cmd = src
                .read(&mut self.map[range.clone()])
                .offset(start)
                .queue(queue)
                .block(blocking)
                .enew(&mut *event);
            if wait.is_empty() {
                cmd.enq()
            } else {
                cmd.ewait(wait).enq()
            }
        }
        .map_err(OpenClError::runtime("read back results"))?;
        self.note(range, blocking, event);
        Ok(())
    }
}

impl<T: OclPrm> Drop for Staging<T> {
    fn drop(&mut self) {
        // The device must be done with the memory before it is unmapped and freed.
        let _ = self.wait();
    }
}
