//! SURF description on the device: surf.cl's `descriptor` kernel (orientation unless upright,
//! then the 64 sums) over a detector's integral image and result records, its orientation
//! table, local memory check and launches (split in two when the readback overlaps it).

use ocl::{Buffer, Event, Kernel, Program};
use surfcl_core::describe::ORIENTATION_GRID;

use super::enqueue::launch_after;
use super::error::OpenClError;
use super::frame::{Events, FrameIo};
use super::gpu::Gpu;

/// Local memory of surf.cl's `descriptor` kernel (5072 bytes, as ptxas reports it): the larger
/// of the 24 x 24 sample grid (576 float2) and the orientation's scratch (4712 bytes), which
/// share it, plus the sub-region sums, lengths and weights (90 floats). Well within the 16 KB of
/// ION-class boards.
pub(crate) const DESCRIPTOR_LOCAL: u64 = 4712 + 90 * 4;

/// Work-items per keypoint of surf.cl's `descriptor` kernel (fewer where the device or kernel
/// allows fewer): the 576 samples of a keypoint's grid take 3 steps of 256; more work-items
/// gained nothing on the GPUs measured (docs/BENCHMARKS.md).
pub(crate) const DESCRIPTOR_WORK_ITEMS: usize = 256;

/// The 109 orientation samples `(i, j, weight, 0)` in OpenSURF's order, with the core's integer
/// Gaussian weights in units of `2^-16` (exact in `f32`; its compile-time `expf`, the same bits
/// as at run time: `docs/ARCHITECTURE.md`, orientation), so the kernel computes no `exp` per
/// sample.
fn orientation_table() -> Vec<f32> {
    ORIENTATION_GRID
        .iter()
        .flat_map(|&(i, j, weight)| [f32::from(i), f32::from(j), weight, 0.0])
        .collect()
}

/// Device bytes of the orientation table each descriptor kernel reads.
pub(crate) const ORIENTATION_TABLE_BYTES: usize = 16 * ORIENTATION_GRID.len();

/// surf.cl's `descriptor` kernel over a detector's integral image and result records, after
/// checking that the device has the local memory it needs. Unless `upright`, it computes each
/// keypoint's orientation first (from the orientation table it is given here).
pub(crate) fn descriptor_kernel(
    gpu: &Gpu,
    program: &Program,
    io: &FrameIo,
    integral: &Buffer<u32>,
    candidate_capacity: usize,
    upright: bool,
) -> Result<Kernel, OpenClError> {
    let local_mem = gpu.selected.info.local_mem_bytes;
    if local_mem > 0 && local_mem < DESCRIPTOR_LOCAL {
        return Err(OpenClError::Unsupported(format!(
            "the descriptor kernel needs {DESCRIPTOR_LOCAL} bytes of local memory, the device has {local_mem}"
        )));
    }
    let table = gpu.constant("orientation table", &orientation_table())?;
    gpu.kernel(program, "descriptor")
        .arg(integral)
        .arg(io.max_width as i32)
        .arg(io.max_height as i32)
        .arg(candidate_capacity as u32)
        .arg(io.max_keypoints as u32)
        .arg(i32::from(upright))
        .arg(&io.result)
        .arg(0u32)
        .arg(u32::MAX)
        .arg(&table)
        .build()
        .map_err(OpenClError::runtime("kernel descriptor"))
}

impl FrameIo {
    /// Enqueues surf.cl's `descriptor` kernel (made by [`descriptor_kernel`]) over
    /// [`FrameIo::descriptor_groups`] groups of `local` work-items: in one launch, or, when
    /// `split` asks for it, the first records in a launch of their own, whose count and event go
    /// to [`FrameIo::split_done`] (`None` there otherwise), then the rest.
    pub(crate) fn describe(
        &mut self,
        kernel: &Kernel,
        local: usize,
        split: Option<usize>,
        events: &mut Events,
    ) -> Result<(), OpenClError> {
        let groups = self.descriptor_groups;
        self.split_done = enqueue_descriptor(kernel, groups, local, split, events)?;
        Ok(())
    }
}

/// [`FrameIo::describe`]'s launches; returns the split part's count and event.
fn enqueue_descriptor(
    kernel: &Kernel,
    groups: usize,
    local: usize,
    split: Option<usize>,
    events: &mut Events,
) -> Result<Option<(usize, Event)>, OpenClError> {
    // Argument positions of the first and the end record (surf.cl).
    let range = |first: usize, end: usize| {
        let (Ok(first), Ok(end)) = (u32::try_from(first), u32::try_from(end)) else {
            return Err(OpenClError::Unsupported(format!(
                "records {first}..{end} to describe"
            )));
        };
        kernel
            .set_arg(7, first)
            .and_then(|_| kernel.set_arg(8, end))
            .map_err(OpenClError::runtime("set kernel arguments"))
    };
    let mut first_part = None;
    let mut from = 0;
    if let Some(split) = split.filter(|&s| s > 0) {
        range(0, split)?;
        let mut ev = Event::empty();
        launch_after(kernel, groups.min(split) * local, local, &[], &mut ev)?;
        events.push(("descriptor", ev.clone()));
        first_part = Some((split, ev));
        from = split;
    }
    range(from, u32::MAX as usize)?;
    let mut ev = Event::empty();
    launch_after(kernel, groups * local, local, &[], &mut ev)?;
    events.push(("descriptor", ev));
    Ok(first_part)
}
