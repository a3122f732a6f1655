//! The per-frame SURF pipeline on one OpenCL device.
//!
//! A [`SurfPipeline`] is made once for a device, a maximum frame size, the SURF parameters and a
//! keypoint capacity, and reused for every frame: every device buffer is allocated at creation,
//! so a frame costs one upload, a dozen kernel launches on one in-order queue (no host synchronisation in
//! between) and normally one readback of the header, keypoints and descriptors together. The
//! upload, readback and output are the shared plumbing of `frame.rs`.
//!
//! Stages (all octaves per launch):
//! 1. `integral_band_sums`, `integral_bands` (`integral::IntegralKernels`): the exact `u32`
//!    integral image, written once (the first also clears the result header, so no separate
//!    fill is needed);
//! 2. `hessian_f32` or `hessian_packed`: the box-filter responses of the 4 intervals of every
//!    sample, as 4 `f32` planes or one `u32` word of 4 log-companded bytes;
//! 3. `nms_f32` or `nms_packed`: threshold, 3x3x3 NMS (packed: screening on the codes, then an
//!    exact recompute of the 27 responses), the sub-pixel fit, and an atomic append into the
//!    candidate buffer;
//! 4. `sort_runs`, `merge_runs`, `scatter_kept` (`strongest.rs`, shared with Harris): the
//!    candidates sorted by their 64-bit `Keypoint::rank_cmp` keys in `O(n log^2 n)`, the
//!    strongest `max_keypoints` copied to the result in that order;
//! 5. `descriptor`: one work-group per keypoint, its orientation first (unless upright), then
//!    its descriptor.
//!
//! Candidates per frame are at most `sum over octaves of ceil(gw/2) * ceil(gh/2)`: two strict
//! 3x3x3 maxima of one octave can never be neighbours (each would have to exceed the other), so
//! their grid positions are pairwise at least 2 apart. The candidate buffer starts smaller (4 per
//! kept keypoint, at least 4096) so that memory follows the keypoint capacity; a frame that finds
//! more is detected by the counter (which counts every append, also those that did not fit),
//! the buffer grows up to that bound and the frame's kernels run again. The result is therefore
//! complete and independent of the order in which work-items append.

use ocl::builders::KernelBuilder;
use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Kernel, Program};
use surfcl_core::GrayImage;
use surfcl_core::surf::{PackedCodeTable, Precision, SurfConfig, filter_size, response_norm};

use super::descriptor::{DESCRIPTOR_WORK_ITEMS, ORIENTATION_TABLE_BYTES, descriptor_kernel};
use super::device::select;
use super::enqueue::launch_after;
use super::error::OpenClError;
use super::frame::{
    DetectOutput, DetectorKernels, DetectorSetup, Events, FrameIo, Launch, run_frame,
};
use super::gpu::Gpu;
use super::integral::{INTEGRAL_DEFINES, IntegralKernels};
use super::record::{Header, KP_WORDS, MAX_OCTAVES};
use super::strongest::{self, StrongestN};

const SURF_CL: &str = include_str!("../../kernels/surf.cl");

/// The candidate buffers' entry of [`SurfPipeline::device_memory`], and their bytes per candidate:
/// the record, the rank key and the selection's sort buffers.
const CANDIDATE_MEMORY: &str = "candidates + keys + sort";
const CANDIDATE_BYTES: usize = 4 * KP_WORDS + 8 + strongest::BYTES_PER_CANDIDATE;

/// What a [`SurfPipeline`] is made for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SurfPipelineConfig {
    /// Largest frame width.
    pub max_width: usize,
    /// Largest frame height.
    pub max_height: usize,
    /// SURF parameters (validated with `SurfConfig::validate` at creation).
    pub surf: SurfConfig,
    /// Capacity: the strongest `max_keypoints` are kept.
    pub max_keypoints: usize,
    /// Work-group size to use (clamped to what the device and each kernel allow); `None`: 64.
    /// Results do not depend on it (the tests check that).
    pub local_size: Option<usize>,
}

impl DetectorSetup for SurfPipelineConfig {
    fn open(&self, gpu: Gpu) -> Result<Box<dyn DetectorKernels>, OpenClError> {
        Ok(Box::new(SurfPipeline::new(gpu, *self)?))
    }
}

/// Sampling grid of each octave for a frame size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grids {
    pub gw: [usize; MAX_OCTAVES],
    pub gh: [usize; MAX_OCTAVES],
    pub total: usize,
}

impl Grids {
    pub(crate) fn new(width: usize, height: usize, surf: &SurfConfig) -> Self {
        let mut g = Grids {
            gw: [0; MAX_OCTAVES],
            gh: [0; MAX_OCTAVES],
            total: 0,
        };
        for o in 0..usize::from(surf.octaves).min(MAX_OCTAVES) {
            let step = usize::from(surf.init_sample_step) << o;
            g.gw[o] = width / step;
            g.gh[o] = height / step;
            g.total += g.gw[o] * g.gh[o];
        }
        g
    }
    /// Upper bound of the strict 3x3x3 maxima of a frame (module docs).
    fn max_candidates(&self) -> usize {
        (0..MAX_OCTAVES)
            .map(|o| self.gw[o].div_ceil(2) * self.gh[o].div_ceil(2))
            .sum()
    }
}

/// Local work sizes chosen per kernel.
#[derive(Debug, Clone, Copy)]
struct LocalSizes {
    hessian: usize,
    nms: usize,
    descriptor: usize,
}

impl LocalSizes {
    /// The sizes for `wanted` work-items per group (`None`: the defaults), as far as the device
    /// and each kernel allow.
    fn new(
        gpu: &Gpu,
        wanted: Option<usize>,
        k_hessian: &Kernel,
        k_nms: &Kernel,
        k_descriptor: &Kernel,
    ) -> Self {
        // Unless the caller fixed a size: 128 work-items for the Hessian and NMS kernels (the
        // sizes tried: docs/HISTORY.md), `DESCRIPTOR_WORK_ITEMS` per
        // keypoint for its orientation's 109 samples and then its descriptor's 576.
        let (per_kp, per_descriptor) = match wanted {
            None => (128, DESCRIPTOR_WORK_ITEMS),
            Some(w) => (w.max(1), w.max(1)),
        };
        Self {
            hessian: gpu.local_size(k_hessian, per_kp),
            nms: gpu.local_size(k_nms, per_kp),
            descriptor: gpu.local_size(k_descriptor, per_descriptor),
        }
    }
}

/// Device memory per buffer of a pipeline: (what, bytes).
fn device_memory(
    io: &FrameIo,
    integral: &Buffer<u32>,
    k_integral: &IntegralKernels,
    grids: &Grids,
    packed_mode: bool,
    cand_capacity: usize,
) -> Vec<(&'static str, u64)> {
    vec![
        ("image (u8)", io.image.len() as u64),
        ("integral image (u32)", 4 * integral.len() as u64),
        ("integral band sums (u32)", k_integral.device_bytes()),
        (
            if packed_mode {
                "responses (packed u8 x4)"
            } else {
                "responses (f32 x4)"
            },
            4 * if packed_mode {
                grids.total as u64
            } else {
                4 * grids.total as u64
            },
        ),
        (
            "tables",
            (4 * 24 + 4 * 128 + ORIENTATION_TABLE_BYTES) as u64,
        ),
        (CANDIDATE_MEMORY, (CANDIDATE_BYTES * cand_capacity) as u64),
        ("keypoints + descriptors", 4 * io.result.len() as u64),
    ]
}

/// The SURF pipeline for one device, frame size limit, configuration and capacity.
#[derive(Debug)]
pub struct SurfPipeline {
    io: FrameIo,
    config: SurfPipelineConfig,
    cand: Buffer<u32>,
    keys: Buffer<u64>,
    select: StrongestN,
    local: LocalSizes,
    integral: Buffer<u32>,
    responses: Option<Buffer<f32>>,
    packed: Option<Buffer<u32>>,
    k_integral: IntegralKernels,
    k_hessian: Kernel,
    k_nms: Kernel,
    k_descriptor: Kernel,
    memory: Vec<(&'static str, u64)>,
}

impl SurfPipeline {
    /// Makes a pipeline on the device chosen by `spec` (an index or a name substring, see
    /// `opencl::open`).
    pub fn open(spec: Option<&str>, config: SurfPipelineConfig) -> Result<Self, OpenClError> {
        Self::new(Gpu::new(select(spec)?)?, config)
    }

    /// Makes a pipeline on an existing context/queue.
    pub(crate) fn new(gpu: Gpu, config: SurfPipelineConfig) -> Result<Self, OpenClError> {
        let surf = config.surf;
        surf.validate()
            .map_err(|e| OpenClError::Unsupported(format!("SURF configuration: {e}")))?;
        let n = config.max_keypoints;
        let mut io = FrameIo::new(gpu.clone(), config.max_width, config.max_height, n, true)?;
        let packed_mode = surf.precision == Precision::Packed8;
        let grids = Grids::new(config.max_width, config.max_height, &surf);
        let cand_capacity = initial_candidate_capacity(&grids, n);
        let rw = MemFlags::new().read_write();
        let integral = gpu.buffer::<u32>(
            "integral image",
            (config.max_width + 1) * (config.max_height + 1),
            rw,
        )?;
        let (responses, packed) = if packed_mode {
            let words = gpu.buffer::<u32>("packed responses", grids.total, rw)?;
            (None, Some(words))
        } else {
            let planes = gpu.buffer::<f32>("f32 responses", 4 * grids.total, rw)?;
            (Some(planes), None)
        };
        let (norms, table) = response_tables(&gpu, &surf)?;
        let cand = gpu.buffer::<u32>("candidates", cand_capacity * KP_WORDS, rw)?;
        let keys = gpu.buffer::<u64>("candidate keys", cand_capacity, rw)?;

        let program = gpu.program("surf.cl", SURF_CL, &INTEGRAL_DEFINES)?;
        let k_integral = IntegralKernels::new(&gpu, &program, &io, &integral, config.local_size)?;
        // Both NMS kernels end with the candidate buffers and the result.
        let out = CandidateArgs {
            cand: &cand,
            keys: &keys,
            capacity: cand_capacity as u32,
            result: &io.result,
        };
        let (k_hessian, k_nms) = response_kernels(
            &gpu,
            &program,
            &config,
            &integral,
            (responses.as_ref(), packed.as_ref()),
            (&norms, &table),
            &out,
        )?;
        let select = StrongestN::new(&gpu, &io, &cand, &keys, cand_capacity, config.local_size)?;
        let k_descriptor =
            descriptor_kernel(&gpu, &program, &io, &integral, cand_capacity, surf.upright)?;
        let local = LocalSizes::new(&gpu, config.local_size, &k_hessian, &k_nms, &k_descriptor);
        // Groups of the per-keypoint kernels loop over keypoints: up to one group per keypoint
        // (groups past the frame's count leave at once), at most 32 per compute unit.
        let cus = gpu.selected.info.compute_units.max(1) as usize;
        io.descriptor_groups = (cus * 32).clamp(1, n.max(1));
        let memory = device_memory(
            &io,
            &integral,
            &k_integral,
            &grids,
            packed_mode,
            cand_capacity,
        );
        io.candidate_capacity = cand_capacity;
        io.device_bytes = memory.iter().map(|(_, b)| b).sum();
        Ok(Self {
            io,
            config,
            cand,
            keys,
            select,
            local,
            integral,
            responses,
            packed,
            k_integral,
            k_hessian,
            k_nms,
            k_descriptor,
            memory,
        })
    }

    /// Device memory held by the pipeline's buffers, bytes (the pinned host staging buffers
    /// are not counted: they live in host memory).
    pub fn device_bytes(&self) -> u64 {
        self.io.device_bytes
    }

    /// Device memory per buffer: (what, bytes).
    pub fn device_memory(&self) -> Vec<(&'static str, u64)> {
        self.memory.clone()
    }

    /// What the pipeline was made for.
    pub fn config(&self) -> &SurfPipelineConfig {
        &self.config
    }

    /// Size of the candidate buffer: sized from `max_keypoints` at creation and grown (up to
    /// the proven bound of the module docs) when a frame finds more.
    pub fn candidate_capacity(&self) -> usize {
        self.io.candidate_capacity
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        self.io.gpu.name()
    }

    /// Detects and describes the keypoints of one frame.
    pub fn detect(&mut self, image: &GrayImage<'_>) -> Result<DetectOutput, OpenClError> {
        run_frame(self, image)
    }

    fn set_frame_args(&self, image: &Buffer<u8>, w: i32, h: i32) -> Result<(), OpenClError> {
        self.k_integral.set_frame(image, w, h)?;
        // Argument positions of the frame width and height in each kernel (surf.cl).
        for k in [&self.k_hessian, &self.k_nms, &self.k_descriptor] {
            k.set_arg(1, w)
                .and_then(|_| k.set_arg(2, h))
                .map_err(OpenClError::runtime("set kernel arguments"))?;
        }
        Ok(())
    }

    /// Grows the candidate buffers so that `found` candidates fit (never beyond the proven
    /// bound for the maximum frame) and points the kernels at the new buffers.
    fn grow_candidates(&mut self, found: usize) -> Result<(), OpenClError> {
        let bound = Grids::new(
            self.config.max_width,
            self.config.max_height,
            &self.config.surf,
        )
        .max_candidates()
        .max(1);
        let cap = (found + found / 4)
            .max(2 * self.io.candidate_capacity)
            .min(bound);
        if cap <= self.io.candidate_capacity {
            return Err(OpenClError::CandidateOverflow {
                found,
                capacity: self.io.candidate_capacity,
            });
        }
        let gpu = &self.io.gpu;
        let rw = MemFlags::new().read_write();
        let cand = gpu.buffer::<u32>("candidates", cap * KP_WORDS, rw)?;
        let keys = gpu.buffer::<u64>("candidate keys", cap, rw)?;
        let nms_at = if self.config.surf.precision == Precision::Packed8 {
            8
        } else {
            7
        };
        let c = cap as u32;
        self.k_nms
            .set_arg(nms_at, &cand)
            .and_then(|_| self.k_nms.set_arg(nms_at + 1, &keys))
            .and_then(|_| self.k_nms.set_arg(nms_at + 2, c))
            .and_then(|_| self.k_descriptor.set_arg(3, c))
            .map_err(OpenClError::runtime("set kernel arguments"))?;
        self.select.point_at(gpu, &cand, &keys, cap)?;
        self.cand = cand;
        self.keys = keys;
        self.io.candidate_capacity = cap;
        for m in &mut self.memory {
            if m.0 == CANDIDATE_MEMORY {
                m.1 = (CANDIDATE_BYTES * cap) as u64;
            }
        }
        self.io.device_bytes = self.memory.iter().map(|(_, b)| b).sum();
        Ok(())
    }

    /// The integral image of the last frame (an extra readback; for tests and debugging).
    pub fn read_integral(&self) -> Result<Vec<u32>, OpenClError> {
        let (w, h) = self.io.last_size;
        read_whole(&self.integral, (w + 1) * (h + 1), "read integral image")
    }

    /// The packed response words of the last frame, one `Vec` per octave (`gw * gh` words,
    /// row-major); packed pipelines only.
    pub fn read_packed(&self) -> Result<Vec<Vec<u32>>, OpenClError> {
        let buf = self
            .packed
            .as_ref()
            .ok_or_else(|| OpenClError::Unsupported("not a packed pipeline".into()))?;
        let grids = self.last_grids();
        let all = read_whole(buf, grids.total, "read packed responses")?;
        let mut out = Vec::new();
        let mut off = 0;
        for o in 0..usize::from(self.config.surf.octaves) {
            let n = grids.gw[o] * grids.gh[o];
            out.push(all[off..off + n].to_vec());
            off += n;
        }
        Ok(out)
    }

    /// The `f32` responses of the last frame, per octave and interval (`gw * gh` each,
    /// row-major); `f32` pipelines only.
    pub fn read_responses(&self) -> Result<Vec<[Vec<f32>; 4]>, OpenClError> {
        let buf = self
            .responses
            .as_ref()
            .ok_or_else(|| OpenClError::Unsupported("not an f32 pipeline".into()))?;
        let grids = self.last_grids();
        let all = read_whole(buf, 4 * grids.total, "read responses")?;
        let mut out = Vec::new();
        let mut off = 0;
        for o in 0..usize::from(self.config.surf.octaves) {
            let n = grids.gw[o] * grids.gh[o];
            let plane = |i: usize| all[off + i * n..off + (i + 1) * n].to_vec();
            out.push([plane(0), plane(1), plane(2), plane(3)]);
            off += 4 * n;
        }
        Ok(out)
    }

    fn last_grids(&self) -> Grids {
        let (w, h) = self.io.last_size;
        Grids::new(w, h, &self.config.surf)
    }
}

impl DetectorKernels for SurfPipeline {
    fn io(&self) -> &FrameIo {
        &self.io
    }

    fn enqueue(&mut self, frame: Launch<'_>, events: &mut Events) -> Result<(), OpenClError> {
        let (w, h) = (frame.width, frame.height);
        let surf = self.config.surf;
        let grids = Grids::new(w, h, &surf);
        self.set_frame_args(frame.input.unwrap_or(&self.io.image), w as i32, h as i32)?;
        self.io.split_done = None;
        self.k_integral.enqueue(w, h, frame.wait, events)?;
        if grids.total == 0 {
            return Ok(());
        }
        let l = self.local;
        let (hn, nn) = if surf.precision == Precision::Packed8 {
            ("hessian_packed", "nms_packed")
        } else {
            ("hessian_f32", "nms_f32")
        };
        launch(events, hn, &self.k_hessian, grids.total, l.hessian)?;
        launch(events, nn, &self.k_nms, 2 * grids.total, l.nms)?;
        let cand_bound = grids.max_candidates().min(self.io.candidate_capacity);
        let expected = self.io.last_candidates;
        self.select.enqueue(cand_bound, expected, events)?;
        self.io
            .describe(&self.k_descriptor, l.descriptor, frame.split, events)?;
        Ok(())
    }

    fn accept(&mut self, header: Header<'_>) -> Result<bool, OpenClError> {
        if let Some(found) = self.io.candidates_overflow(header) {
            self.grow_candidates(found)?;
            return Ok(false);
        }
        Ok(true)
    }

    fn io_mut(&mut self) -> &mut FrameIo {
        &mut self.io
    }
}

/// The constant tables of the response kernels: the response norm of every octave and interval,
/// and the packed format's code table for `surf.threshold`.
fn response_tables(
    gpu: &Gpu,
    surf: &SurfConfig,
) -> Result<(Buffer<f32>, Buffer<f32>), OpenClError> {
    let norms_host: Vec<f32> = (0..MAX_OCTAVES * 4)
        .map(|k| response_norm(filter_size((k / 4) as u32, (k % 4) as u32)))
        .collect();
    let norms = gpu.constant("norms", &norms_host)?;
    // table[k] = T[k] for k in 1..=127 (the kernel indexes from 1; entry 0 is unused).
    let mut table_host = [0f32; 128];
    table_host[1..].copy_from_slice(PackedCodeTable::new(surf.threshold).as_slice());
    let table = gpu.constant("code table", &table_host)?;
    Ok((norms, table))
}

/// Builds the Hessian and NMS kernels of the response format whose buffer is given: `f32` planes
/// (`responses.0`) or packed codes (`responses.1`); `tables` are the norms and the code table
/// of [`response_tables`].
fn response_kernels(
    gpu: &Gpu,
    program: &Program,
    config: &SurfPipelineConfig,
    integral: &Buffer<u32>,
    responses: (Option<&Buffer<f32>>, Option<&Buffer<u32>>),
    (norms, table): (&Buffer<f32>, &Buffer<f32>),
    out: &CandidateArgs<'_>,
) -> Result<(Kernel, Kernel), OpenClError> {
    let surf = config.surf;
    let build = |name: &'static str| gpu.kernel(program, name);
    let err = OpenClError::runtime;
    let (w0, h0) = (config.max_width as i32, config.max_height as i32);
    let octaves = i32::from(surf.octaves);
    let step0 = i32::from(surf.init_sample_step);
    // Both Hessian and NMS kernels start with the integral image, the frame size and the
    // octave layout; what follows depends on the response format.
    let octave_kernel = |name: &'static str| {
        let mut b = build(name);
        b.arg(integral).arg(w0).arg(h0).arg(octaves).arg(step0);
        b
    };
    match responses {
        (Some(resp), _) => Ok((
            octave_kernel("hessian_f32")
                .arg(norms)
                .arg(resp)
                .build()
                .map_err(err("kernel hessian_f32"))?,
            out.append(octave_kernel("nms_f32").arg(surf.threshold).arg(resp))
                .build()
                .map_err(err("kernel nms_f32"))?,
        )),
        (None, Some(pk)) => Ok((
            octave_kernel("hessian_packed")
                .arg(norms)
                .arg(table)
                .arg(pk)
                .build()
                .map_err(err("kernel hessian_packed"))?,
            out.append(
                octave_kernel("nms_packed")
                    .arg(surf.threshold)
                    .arg(norms)
                    .arg(pk),
            )
            .build()
            .map_err(err("kernel nms_packed"))?,
        )),
        (None, None) => Err(OpenClError::Unsupported("no response buffer".into())),
    }
}

/// The last arguments of both NMS kernels: where candidates go.
struct CandidateArgs<'b> {
    cand: &'b Buffer<u32>,
    keys: &'b Buffer<u64>,
    capacity: u32,
    result: &'b Buffer<u32>,
}

impl<'b> CandidateArgs<'b> {
    fn append<'k>(&self, kernel: &'k mut KernelBuilder<'b>) -> &'k mut KernelBuilder<'b> {
        kernel
            .arg(self.cand)
            .arg(self.keys)
            .arg(self.capacity)
            .arg(self.result)
    }
}

/// Enqueues `kernel` over `global` work-items (in groups of `local`) and records it as `name`.
fn launch(
    events: &mut Events,
    name: &'static str,
    kernel: &Kernel,
    global: usize,
    local: usize,
) -> Result<(), OpenClError> {
    let mut ev = Event::empty();
    launch_after(kernel, global, local, &[], &mut ev)?;
    events.push((name, ev));
    Ok(())
}

/// The first `len` elements of a device buffer (an extra blocking readback; for tests).
fn read_whole<T: ocl::OclPrm>(
    buf: &Buffer<T>,
    len: usize,
    what: &'static str,
) -> Result<Vec<T>, OpenClError> {
    let mut v = vec![T::default(); len];
    if !v.is_empty() {
        buf.read(&mut v).enq().map_err(OpenClError::runtime(what))?;
    }
    Ok(v)
}

/// The candidate buffer's first size: 4 per kept keypoint, at least 4096, at most the proven
/// bound (module docs). A frame with more candidates grows it (and runs again), so the result
/// never depends on this choice; it only keeps the usual frame's memory proportional to the
/// keypoint capacity instead of the image area.
fn initial_candidate_capacity(grids: &Grids, max_keypoints: usize) -> usize {
    (4 * max_keypoints)
        .max(4096)
        .min(grids.max_candidates())
        .max(1)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use surfcl_core::integral::integral_len;
    use surfcl_core::surf::{self, SurfConfig};
    use surfcl_core::{GrayImage, IntegralImage, Keypoint, KeypointBuffer, KeypointSink};

    use super::*;
    use crate::opencl::strongest::SelectLayout;
    use crate::opencl::strongest::tests::{FORCED_LAYOUT, MERGE_FRAMES, RANK_FRAMES};

    /// Forces a layout on this thread until dropped (also when the test fails).
    struct Forced;

    impl Forced {
        fn layout(layout: SelectLayout) -> Self {
            FORCED_LAYOUT.with(|f| f.set(Some(layout)));
            Forced
        }
    }

    impl Drop for Forced {
        fn drop(&mut self) {
            FORCED_LAYOUT.with(|f| f.set(None));
        }
    }

    /// Every layout keeps the core's keypoints in the core's order: the GPU's (512-key runs,
    /// 32 lanes per key), the CPU device's, and odd ones (one key per sort work-item, 4
    /// lanes), with work-group sizes that make from 5 to about 140 runs (the merge sort above
    /// 32; the test checks that both ways ran), capped and uncapped, and after a frame without
    /// candidates (ranked by searches across up to 140 runs, several per lane). Fails (rather
    /// than passing vacuously) without an OpenCL device.
    #[test]
    fn every_select_layout_keeps_the_cores_keypoints() {
        let boat = crate::opencl::test_images::boat();
        let (w, h) = (boat.width, boat.height);
        let image = GrayImage::new(&boat.pixels, w, h).unwrap();
        // Upright: the reference is detection alone (orientation is compared elsewhere).
        let surf = SurfConfig {
            upright: true,
            ..SurfConfig::default()
        };
        let mut table = vec![0u32; integral_len(w, h).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        let mut scratch = vec![0u32; surf::scratch_len(&surf, w, h).unwrap()];
        let mut storage = vec![Keypoint::default(); 20_000];
        let mut sink = KeypointBuffer::new(&mut storage);
        let stats = surf::detect(&ii, &surf, &mut scratch, &mut sink).unwrap();
        sink.sort();
        let all = sink.points();
        assert!(all.len() > 2000, "{} keypoints", all.len());

        let layouts = [(2, 32), (4, 1), (1, 4)];
        for (run_per_item, rank_lanes) in layouts {
            let layout = SelectLayout {
                run_per_item,
                rank_lanes,
            };
            let _forced = Forced::layout(layout);
            let ways = |n: &'static std::thread::LocalKey<Cell<usize>>| n.with(Cell::get);
            let (rank_before, merge_before) = (ways(&RANK_FRAMES), ways(&MERGE_FRAMES));
            for local_size in [None, Some(64), Some(32)] {
                for max_keypoints in [500, all.len()] {
                    let mut gpu = SurfPipeline::open(
                        None,
                        SurfPipelineConfig {
                            max_width: w,
                            max_height: h,
                            surf,
                            max_keypoints,
                            local_size,
                        },
                    )
                    .unwrap_or_else(|e| {
                        panic!("this test needs an OpenCL device (CI: pocl-opencl-icd): {e}")
                    });
                    // Twice: the second frame picks its way by the first one's count. Then
                    // after a frame without candidates, which makes the next frame rank by
                    // binary searches however many runs it has (every lane searching several).
                    for frame in 0..3 {
                        if frame == 2 {
                            let blank = vec![40u8; w * h];
                            let calm = gpu.detect(&GrayImage::new(&blank, w, h).unwrap());
                            assert_eq!(calm.unwrap().candidates, 0);
                        }
                        let out = gpu.detect(&image).unwrap();
                        let what = format!(
                            "{layout:?}, local size {local_size:?}, {max_keypoints} kept, \
                             frame {frame}"
                        );
                        let wrong: Vec<usize> = (0..max_keypoints.min(out.keypoints.len()))
                            .filter(|&i| out.keypoints[i] != all[i])
                            .take(8)
                            .collect();
                        assert!(
                            wrong.is_empty() && out.keypoints.len() == max_keypoints,
                            "{what}: {} kept; records {wrong:?} wrong, the first of them is \
                             the core's keypoint {:?}",
                            out.keypoints.len(),
                            wrong
                                .first()
                                .map(|&i| all.iter().position(|k| *k == out.keypoints[i]))
                        );
                        assert_eq!(
                            out.dropped,
                            stats.dropped + all.len() - max_keypoints,
                            "{what}"
                        );
                    }
                }
            }
            assert!(
                ways(&RANK_FRAMES) > rank_before && ways(&MERGE_FRAMES) > merge_before,
                "{layout:?}: both ways of ranking must run"
            );
        }
    }
}
