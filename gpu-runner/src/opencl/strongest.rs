//! The strongest-N selection every detector shares (`kernels/select.cl`): a merge sort of the
//! candidates' 64-bit rank keys on the device, then a copy of the first `max_keypoints` records
//! into the result, strongest first.
//!
//! The sort is `O(n log^2 n)` work for `n` candidates (runs sorted in local memory, then
//! `log2(bound / run)` merge passes, each a binary search per key), all on the device: the number
//! of passes follows the frame's candidate bound, which the host knows, and the count itself is
//! read on the device. Keys are unique, so the order is the core's `Keypoint::rank_cmp` order
//! whatever order the candidates were appended in.

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Kernel};

use super::OpenClError;
use super::enqueue::launch_after;
use super::frame::{Events, FrameIo};
use super::gpu::Gpu;

const SELECT_CL: &str = include_str!("../../kernels/select.cl");

/// The selection kernels of one detector, over its candidate buffers and result.
#[derive(Debug)]
pub(crate) struct StrongestN {
    sort: Kernel,
    merge_to_b: Kernel,
    merge_to_a: Kernel,
    scatter: Kernel,
    buffers: MergeBuffers,
    /// Keys per run sorted in local memory (the sort's work-group size, a power of two).
    run: usize,
    /// Work-group size of the merge and scatter kernels (one work-item per key or record).
    items: usize,
    max_keypoints: usize,
}

/// Candidate indices of the sorted keys, and the second key and index buffers the merges
/// alternate with.
#[derive(Debug)]
struct MergeBuffers {
    idx_a: Buffer<u32>,
    keys_b: Buffer<u64>,
    idx_b: Buffer<u32>,
}

impl MergeBuffers {
    fn new(gpu: &Gpu, capacity: usize) -> Result<Self, OpenClError> {
        let rw = MemFlags::new().read_write();
        Ok(Self {
            idx_a: gpu.buffer::<u32>("sorted candidate indices", capacity, rw)?,
            keys_b: gpu.buffer::<u64>("merge keys", capacity, rw)?,
            idx_b: gpu.buffer::<u32>("merge indices", capacity, rw)?,
        })
    }
}

/// Bytes per candidate the selection adds to the detector's candidate buffers.
pub(crate) const BYTES_PER_CANDIDATE: usize = 4 + 8 + 4;

impl StrongestN {
    /// The kernels for `capacity` candidates in `cand` / `keys` (as the detector's NMS appends
    /// them) and the result of `io`; `wanted`: the sort's work-group size (default 256).
    pub(crate) fn new(
        gpu: &Gpu,
        io: &FrameIo,
        cand: &Buffer<u32>,
        keys: &Buffer<u64>,
        capacity: usize,
        wanted: Option<usize>,
    ) -> Result<Self, OpenClError> {
        let program = gpu.program("select.cl", SELECT_CL, &[])?;
        let buffers = MergeBuffers::new(gpu, capacity)?;
        let cap = capacity as u32;
        // A local key and index per work-item; the bitonic network wants a power of two.
        let mut run = pow2_floor(gpu.fit_local(wanted.unwrap_or(256).max(1), 3));
        let build_sort = |run: usize| {
            gpu.kernel(&program, "sort_runs")
                .arg(keys)
                .arg(&buffers.idx_a)
                .arg(cap)
                .arg(&io.result)
                .arg_local::<u64>(run)
                .arg_local::<u32>(run)
                .build()
                .map_err(OpenClError::runtime("kernel sort_runs"))
        };
        let mut sort = build_sort(run)?;
        let allowed = gpu.local_size(&sort, run);
        if allowed < run {
            run = pow2_floor(allowed);
            sort = build_sort(run)?;
        }
        let merge = |from: (&Buffer<u64>, &Buffer<u32>), to: (&Buffer<u64>, &Buffer<u32>)| {
            gpu.kernel(&program, "merge_runs")
                .arg(from.0)
                .arg(from.1)
                .arg(to.0)
                .arg(to.1)
                .arg(cap)
                .arg(&io.result)
                .arg(0u32)
                .build()
                .map_err(OpenClError::runtime("kernel merge_runs"))
        };
        let (a, b) = ((keys, &buffers.idx_a), (&buffers.keys_b, &buffers.idx_b));
        let merge_to_b = merge(a, b)?;
        let merge_to_a = merge(b, a)?;
        let scatter = gpu
            .kernel(&program, "scatter_kept")
            .arg(cand)
            .arg(&buffers.idx_a)
            .arg(cap)
            .arg(io.max_keypoints as u32)
            .arg(&io.result)
            .build()
            .map_err(OpenClError::runtime("kernel scatter_kept"))?;
        Ok(Self {
            items: gpu.local_size(&merge_to_b, 64),
            sort,
            merge_to_b,
            merge_to_a,
            scatter,
            buffers,
            run,
            max_keypoints: io.max_keypoints,
        })
    }

    /// Points the kernels at grown candidate buffers of `capacity` and sizes the merge buffers
    /// for them.
    pub(crate) fn point_at(
        &mut self,
        gpu: &Gpu,
        cand: &Buffer<u32>,
        keys: &Buffer<u64>,
        capacity: usize,
    ) -> Result<(), OpenClError> {
        let buffers = MergeBuffers::new(gpu, capacity)?;
        let cap = capacity as u32;
        let (a, b) = ((keys, &buffers.idx_a), (&buffers.keys_b, &buffers.idx_b));
        let set_merge =
            |k: &Kernel, from: (&Buffer<u64>, &Buffer<u32>), to: (&Buffer<u64>, &Buffer<u32>)| {
                k.set_arg(0, from.0)
                    .and_then(|_| k.set_arg(1, from.1))
                    .and_then(|_| k.set_arg(2, to.0))
                    .and_then(|_| k.set_arg(3, to.1))
                    .and_then(|_| k.set_arg(4, cap))
            };
        self.sort
            .set_arg(0, keys)
            .and_then(|_| self.sort.set_arg(1, &buffers.idx_a))
            .and_then(|_| self.sort.set_arg(2, cap))
            .and_then(|_| set_merge(&self.merge_to_b, a, b))
            .and_then(|_| set_merge(&self.merge_to_a, b, a))
            .and_then(|_| self.scatter.set_arg(0, cand))
            .and_then(|_| self.scatter.set_arg(2, cap))
            .map_err(OpenClError::runtime("set selection arguments"))?;
        self.buffers = buffers;
        Ok(())
    }

    /// Enqueues the selection of a frame with at most `bound` candidates.
    pub(crate) fn enqueue(&self, bound: usize, events: &mut Events) -> Result<(), OpenClError> {
        let mut run_kernel = |kernel: &Kernel, global: usize, local: usize| {
            let mut ev = Event::empty();
            launch_after(kernel, global, local, &[], &mut ev)?;
            events.push(("select", ev));
            Ok::<(), OpenClError>(())
        };
        run_kernel(&self.sort, bound, self.run)?;
        let mut width = self.run;
        let mut sorted_in_a = true;
        while width < bound {
            let merge = if sorted_in_a {
                &self.merge_to_b
            } else {
                &self.merge_to_a
            };
            merge
                .set_arg(6, width as u32)
                .map_err(OpenClError::runtime("set selection arguments"))?;
            run_kernel(merge, bound, self.items)?;
            sorted_in_a = !sorted_in_a;
            width *= 2;
        }
        let sorted = if sorted_in_a {
            &self.buffers.idx_a
        } else {
            &self.buffers.idx_b
        };
        self.scatter
            .set_arg(1, sorted)
            .map_err(OpenClError::runtime("set selection arguments"))?;
        run_kernel(&self.scatter, bound.min(self.max_keypoints), self.items)
    }
}

/// The largest power of two not above `n` (1 for 0).
fn pow2_floor(n: usize) -> usize {
    if n <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - n.leading_zeros())
    }
}
