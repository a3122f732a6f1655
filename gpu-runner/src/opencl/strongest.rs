//! The strongest-N selection every detector shares (`kernels/select.cl`): a merge sort of the
//! candidates' 64-bit rank keys on the device, then a copy of the first `max_keypoints` records
//! into the result, strongest first.
//!
//! Runs of candidates are sorted in local memory first. A frame whose candidate bound, or the
//! last frame's count, spans at most [`RANK_RUNS_MAX`] runs (the usual frame) is then done in one
//! more launch: every key's rank is found by binary searches in the other runs (correct for any
//! count; slow only for a frame with far more candidates than the last), on a GPU each search
//! by its own work-item ([`SelectLayout`]). Others are merge-sorted:
//! `log2(bound / run)` passes, each a binary search per key, `O(n log^2 n)` in all. Everything
//! runs on the device: the launches follow the frame's candidate bound, which the host knows, and
//! the count itself is read on the device. Keys are unique, so the order is the core's `Keypoint::rank_cmp` order
//! whatever order the candidates were appended in.

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Kernel};

use super::enqueue::launch_after;
use super::error::OpenClError;
use super::frame::{Events, FrameIo};
use super::gpu::Gpu;

const SELECT_CL: &str = include_str!("../../kernels/select.cl");

/// The most runs `rank_runs` searches (above that, the merge passes cost less).
pub(crate) const RANK_RUNS_MAX: usize = 32;

/// How the selection's work is spread over work-items; every layout gives the same result.
///
/// On a GPU the selection of a 1080p frame (6000-9000 candidates) waits on latency: few
/// work-groups sort few runs, and each key's rank is a chain of dependent loads, one binary
/// search per other run. There, runs of 512 keys (2 per work-item) are sorted by twice as many
/// work-groups as runs of 1024, and 32 work-items share a key, each searching other runs, which
/// shortens both `sort_runs` and `rank_runs` (docs/BENCHMARKS.md). On a CPU device (PoCL)
/// work-items are iterations of one thread's loop, so lanes only add barriers and partial sums
/// (`rank_runs` several times slower): one lane per key and runs of 1024 there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SelectLayout {
    /// Keys each work-item of `sort_runs` sorts (a power of two; a run is this many times the
    /// sort's work-group size).
    pub run_per_item: usize,
    /// Work-items of `rank_runs` per key (a power of two).
    pub rank_lanes: usize,
}

impl SelectLayout {
    /// The layout for an OpenCL device of `kind` ("GPU", "CPU", ... as in `DeviceInfo::kind`):
    /// CPU devices the CPU's, every other kind (GPUs, accelerators) the GPU's. With runs of 512
    /// the GPU ranks frames of up to 16384 candidates by `rank_runs` ([`RANK_RUNS_MAX`] runs)
    /// and merge-sorts larger ones.
    pub(crate) fn for_kind(kind: &str) -> Self {
        #[cfg(test)]
        if let Some(forced) = tests::FORCED_LAYOUT.with(std::cell::Cell::get) {
            return forced;
        }
        if kind == "CPU" {
            Self {
                run_per_item: 4,
                rank_lanes: 1,
            }
        } else {
            Self {
                run_per_item: 2,
                rank_lanes: 32,
            }
        }
    }
}

/// The selection kernels of one detector, over its candidate buffers and result.
#[derive(Debug)]
pub(crate) struct StrongestN {
    sort: Kernel,
    rank: Kernel,
    merge_to_b: Kernel,
    merge_to_a: Kernel,
    scatter: Kernel,
    buffers: MergeBuffers,
    /// Work-items of the sort (a power of two); a run is `run_per_item` times as many keys.
    sort_items: usize,
    /// Keys per work-item of the sort.
    run_per_item: usize,
    /// Work-group size of `rank_runs`, a multiple of `rank_lanes`.
    rank_items: usize,
    /// Work-items of `rank_runs` per key.
    rank_lanes: usize,
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
        let layout = SelectLayout::for_kind(&gpu.selected.info.kind);
        // Both must be powers of two (the bitonic runs, the lanes' tree sum).
        let run_per_item = pow2_floor(layout.run_per_item);
        let program = gpu.program("select.cl", SELECT_CL, &[("RUN_PER_ITEM", run_per_item)])?;
        let buffers = MergeBuffers::new(gpu, capacity)?;
        let cap = capacity as u32;
        // Local keys and indices (3 words each) per work-item; the bitonic network wants a power
        // of two.
        let mut items = pow2_floor(gpu.fit_local(wanted.unwrap_or(256).max(1), 3 * run_per_item));
        let build_sort = |items: usize| {
            gpu.kernel(&program, "sort_runs")
                .arg(keys)
                .arg(&buffers.idx_a)
                .arg(cap)
                .arg(&io.result)
                .arg_local::<u64>(items * run_per_item)
                .arg_local::<u32>(items * run_per_item)
                .build()
                .map_err(OpenClError::runtime("kernel sort_runs"))
        };
        let mut sort = build_sort(items)?;
        let allowed = gpu.local_size(&sort, items);
        if allowed < items {
            items = pow2_floor(allowed);
            sort = build_sort(items)?;
        }
        // A key's lanes and its group of keys (8 on a GPU) share one work-group (its size does
        // not follow `wanted`, which sizes the sort).
        let lanes = pow2_floor(layout.rank_lanes);
        let wanted_rank = (8 * lanes).max(64);
        let rank = gpu
            .kernel(&program, "rank_runs")
            .arg(keys)
            .arg(&buffers.idx_a)
            .arg(cand)
            .arg(cap)
            .arg(io.max_keypoints as u32)
            .arg(&io.result)
            .arg((items * run_per_item) as u32)
            .arg(lanes as u32)
            .arg_local::<u32>(wanted_rank)
            .build()
            .map_err(OpenClError::runtime("kernel rank_runs"))?;
        let rank_items = pow2_floor(gpu.local_size(&rank, wanted_rank));
        let rank_lanes = lanes.min(rank_items);
        rank.set_arg(7, rank_lanes as u32)
            .map_err(OpenClError::runtime("kernel rank_runs"))?;
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
            rank,
            merge_to_b,
            merge_to_a,
            scatter,
            buffers,
            sort_items: items,
            run_per_item,
            rank_items,
            rank_lanes,
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
            .and_then(|_| self.rank.set_arg(0, keys))
            .and_then(|_| self.rank.set_arg(1, &buffers.idx_a))
            .and_then(|_| self.rank.set_arg(2, cand))
            .and_then(|_| self.rank.set_arg(3, cap))
            .and_then(|_| self.scatter.set_arg(0, cand))
            .and_then(|_| self.scatter.set_arg(2, cap))
            .map_err(OpenClError::runtime("set selection arguments"))?;
        self.buffers = buffers;
        Ok(())
    }

    /// Enqueues the selection of a frame with at most `bound` candidates; `expected`: the last
    /// frame's count, which picks the faster way for a frame like it (both give the same result
    /// for any count).
    pub(crate) fn enqueue(
        &self,
        bound: usize,
        expected: Option<usize>,
        events: &mut Events,
    ) -> Result<(), OpenClError> {
        let mut run_kernel = |kernel: &Kernel, global: usize, local: usize| {
            let mut ev = Event::empty();
            launch_after(kernel, global, local, &[], &mut ev)?;
            events.push(("select", ev));
            Ok::<(), OpenClError>(())
        };
        let run = self.sort_items * self.run_per_item;
        run_kernel(
            &self.sort,
            bound.div_ceil(run) * self.sort_items,
            self.sort_items,
        )?;
        let few_runs = |n: usize| n <= RANK_RUNS_MAX * run;
        if few_runs(bound) || expected.is_some_and(few_runs) {
            #[cfg(test)]
            tests::RANK_FRAMES.with(|n| n.set(n.get() + 1));
            let keys_per_group = self.rank_items / self.rank_lanes;
            return run_kernel(
                &self.rank,
                bound.div_ceil(keys_per_group) * self.rank_items,
                self.rank_items,
            );
        }
        #[cfg(test)]
        tests::MERGE_FRAMES.with(|n| n.set(n.get() + 1));
        let mut width = run;
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

#[cfg(test)]
pub(crate) mod tests {
    use super::SelectLayout;
    use std::cell::Cell;

    std::thread_local! {
        /// A layout that pipelines made on this thread use whatever their device, so that a
        /// CPU device (CI's PoCL) runs the GPU's layout too.
        pub(crate) static FORCED_LAYOUT: Cell<Option<SelectLayout>> = const { Cell::new(None) };
        /// Frames this thread ranked by `rank_runs` and merge-sorted, so that a test can
        /// check that it ran both ways.
        pub(crate) static RANK_FRAMES: Cell<usize> = const { Cell::new(0) };
        pub(crate) static MERGE_FRAMES: Cell<usize> = const { Cell::new(0) };
    }
}
