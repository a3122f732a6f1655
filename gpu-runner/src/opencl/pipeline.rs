//! The per-frame SURF pipeline on one OpenCL device.
//!
//! A [`Pipeline`] is made once for a device, a maximum frame size, the SURF parameters and a
//! keypoint capacity, and reused for every frame: every device buffer is allocated at creation,
//! so a frame costs one upload, nine kernels on one in-order queue (no host synchronisation in
//! between) and normally one readback of the header, keypoints and descriptors together.
//!
//! Stages (all octaves per launch):
//! 1. `integral_rows`, `integral_cols`: the exact `u32` integral image (row 0 clears the result
//!    header, so no separate fill is needed);
//! 2. `hessian_f32` or `hessian_packed`: the box-filter responses of the 4 intervals of every
//!    sample, as 4 `f32` planes or one `u32` word of 4 log-companded bytes;
//! 3. `nms_f32` or `nms_packed`: threshold, 3x3x3 NMS (packed: screening on the codes, then an
//!    exact recompute of the 27 responses), the sub-pixel fit, and an atomic append into the
//!    candidate buffer;
//! 4. `select_strongest`, `select_scatter`: each candidate's rank in the total order of
//!    `Keypoint::rank_cmp` (count of smaller 64-bit keys, split over slices of the keys and
//!    added atomically); the strongest `max_keypoints` land at their rank, sorted;
//! 5. `orientation` (unless upright) and `descriptor`: one work-group per keypoint.
//!
//! Candidates per frame are at most `sum over octaves of ceil(gw/2) * ceil(gh/2)`: two strict
//! 3x3x3 maxima of one octave can never be neighbours (each would have to exceed the other), so
//! their grid positions are pairwise at least 2 apart. The candidate buffer starts smaller (4 per
//! kept keypoint, at least 4096) so that memory follows the keypoint capacity; a frame that finds
//! more is detected by the counter (which counts every append, also those that did not fit),
//! the buffer grows up to that bound and the frame's kernels run again. The result is therefore
//! complete and independent of the order in which work-items append.

use std::time::Instant;

use ocl::enums::{KernelWorkGroupInfo, KernelWorkGroupInfoResult, ProfilingInfo};
use ocl::flags::{CommandQueueProperties, MemFlags};
use ocl::{Buffer, Context, Event, Kernel, MemMap, OclPrm, Program, Queue};
use surfcl_core::surf::{PackedCodeTable, Precision, SurfConfig, response_norm};
use surfcl_core::{DESCRIPTOR_LEN, Descriptor, GrayImage, Keypoint};

use super::enqueue::{launch_after, map_staging};
use super::inject::{self, FaultPoint};
use super::{OpenClError, Selected};
use crate::backend::StageTiming;

const SURF_CL: &str = include_str!("../../kernels/surf.cl");

/// Words of the result header (must match `HEADER_WORDS` in surf.cl and harris.cl).
pub(crate) const HEADER_WORDS: usize = 16;
/// Words of one keypoint record (`KP_WORDS`).
pub(crate) const KP_WORDS: usize = 8;
/// Words of a keypoint record plus its descriptor (`RECORD_WORDS`).
pub(crate) const RECORD_WORDS: usize = KP_WORDS + DESCRIPTOR_LEN;
/// Octaves the kernels support (`MAX_OCTAVES`).
pub(crate) const MAX_OCTAVES: usize = 6;
/// Samples of the orientation window (`ORI_SAMPLES`).
const ORI_SAMPLES: usize = 109;

/// What a [`Pipeline`] is made for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PipelineConfig {
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

/// The result of one frame.
#[derive(Debug, Clone, Default)]
pub struct DetectOutput {
    /// Keypoints, strongest first.
    pub keypoints: Vec<Keypoint>,
    /// Unit-length descriptors, same order.
    pub descriptors: Vec<Descriptor>,
    /// Candidates found (after NMS and interpolation), before the strongest-N selection.
    pub candidates: usize,
    /// Candidates not kept because of `max_keypoints`.
    pub dropped: usize,
    /// Device time per stage from profiling events (ms), in execution order.
    pub timings: Vec<StageTiming>,
    /// Host wall time of the whole frame: upload, kernels and readback (ms).
    pub wall_ms: f64,
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

/// Filter size `L(o, i)` (ARCHITECTURE.md).
pub(crate) fn filter_size(octave: usize, interval: usize) -> usize {
    3 * ((interval + 1) * (2 << octave) + 1)
}

/// Whether the device rounds `f32` division and square root correctly on request
/// (`-cl-fp32-correctly-rounded-divide-sqrt` is only valid then).
fn fp32_correctly_rounded(selected: &Selected) -> bool {
    matches!(
        selected.device.info(ocl::enums::DeviceInfo::SingleFpConfig),
        Ok(ocl::enums::DeviceInfoResult::SingleFpConfig(c))
            if c.contains(ocl::flags::DeviceFpConfig::CORRECTLY_ROUNDED_DIVIDE_SQRT)
    )
}

/// The 109 orientation sample offsets `(i, j, 0, 0)` in OpenSURF's order (`i` outer). The
/// kernel computes each sample's Gaussian weight itself with the core's `expf`, so the weights
/// are the CPU's bit for bit (`docs/ARCHITECTURE.md`, orientation).
fn orientation_table() -> Vec<f32> {
    let mut t = Vec::with_capacity(ORI_SAMPLES * 4);
    for i in -6i32..=6 {
        for j in -6i32..=6 {
            if i * i + j * j < 36 {
                t.extend_from_slice(&[i as f32, j as f32, 0.0, 0.0]);
            }
        }
    }
    t
}

/// A context and an in-order, profiling queue on one device.
#[derive(Debug, Clone)]
pub(crate) struct Gpu {
    pub context: Context,
    pub queue: Queue,
    pub selected: Selected,
    pub max_alloc: u64,
}

impl Gpu {
    pub(crate) fn new(selected: Selected) -> Result<Self, OpenClError> {
        let _guard = super::SETUP_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let context = Context::builder()
            .platform(selected.platform)
            .devices(selected.device)
            .build()
            .map_err(OpenClError::runtime("create context"))?;
        let queue = Queue::new(
            &context,
            selected.device,
            Some(CommandQueueProperties::new().profiling()),
        )
        .map_err(OpenClError::runtime("create queue"))?;
        let max_alloc = match selected
            .device
            .info(ocl::enums::DeviceInfo::MaxMemAllocSize)
        {
            Ok(ocl::enums::DeviceInfoResult::MaxMemAllocSize(v)) => v,
            _ => u64::MAX,
        };
        Ok(Self {
            context,
            queue,
            selected,
            max_alloc,
        })
    }

    /// The same context and device with a second in-order, profiling queue (commands that may
    /// overlap this one's: the stream's matching).
    pub(crate) fn with_second_queue(&self, what: &'static str) -> Result<Self, OpenClError> {
        let queue = Queue::new(
            &self.context,
            self.selected.device,
            Some(CommandQueueProperties::new().profiling()),
        )
        .map_err(OpenClError::runtime(what))?;
        Ok(Self {
            queue,
            ..self.clone()
        })
    }

    /// Builds one kernel file, surfacing the compiler log on failure.
    pub(crate) fn program(&self, file: &'static str, src: &str) -> Result<Program, OpenClError> {
        // Building programs from several threads at once crashes PoCL 5 (seen as SIGSEGV when
        // the tests run in parallel): builds are serialised process-wide. They happen once per
        // pipeline, so this costs nothing per frame.
        if let Some(log) = inject::check(FaultPoint::Build) {
            return Err(OpenClError::Build {
                file,
                device: self.selected.info.name.clone(),
                log,
            });
        }
        let _guard = super::SETUP_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Program::builder()
            .src(src)
            .devices(self.selected.device)
            // Correctly rounded f32 division and sqrt where the device has them: the Newton step,
            // atan2 and the descriptor's normalisation then round as on the CPU.
            .cmplr_opt(if fp32_correctly_rounded(&self.selected) {
                "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
            } else {
                "-cl-std=CL1.2"
            })
            .build(&self.context)
            .map_err(|e| OpenClError::Build {
                file,
                device: self.selected.info.name.clone(),
                log: e.to_string(),
            })
    }

    /// A device buffer of `len` elements (at least 1), with a typed error when it cannot be had.
    pub(crate) fn buffer<T: OclPrm>(
        &self,
        what: &'static str,
        len: usize,
        flags: MemFlags,
    ) -> Result<Buffer<T>, OpenClError> {
        let len = len.max(1);
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        let fail = |message: String| OpenClError::Allocation {
            what,
            bytes,
            message,
        };
        if let Some(message) = inject::check(FaultPoint::Allocate) {
            return Err(fail(message));
        }
        if bytes > self.max_alloc {
            return Err(fail(format!(
                "larger than the device's largest allocation ({} bytes)",
                self.max_alloc
            )));
        }
        Buffer::<T>::builder()
            .queue(self.queue.clone())
            .flags(flags)
            .len(len)
            .build()
            .map_err(|e| fail(e.to_string()))
    }

    /// The work-group size to use for `kernel`: `wanted` clamped to the device's and the
    /// kernel's limits.
    pub(crate) fn local_size(&self, kernel: &Kernel, wanted: usize) -> usize {
        let kernel_max =
            match kernel.wg_info(self.selected.device, KernelWorkGroupInfo::WorkGroupSize) {
                Ok(KernelWorkGroupInfoResult::WorkGroupSize(n)) if n > 0 => n,
                _ => 1,
            };
        wanted
            .min(kernel_max)
            .min(self.selected.info.max_work_group_size.max(1))
            .max(1)
    }
}

/// Adds up per-stage profiling times.
pub(crate) fn event_ms(event: &Event) -> Result<f64, OpenClError> {
    // Profiling info exists only once the command is complete; a command on another queue
    // (the stream's uploads) may be reported complete a little later than the work after it.
    event
        .wait_for()
        .map_err(|e| OpenClError::runtime("wait for event")(e.into()))?;
    let get = |what| {
        event
            .profiling_info(what)
            .and_then(|r| r.time().map_err(ocl::Error::from))
            .map_err(OpenClError::runtime("read profiling info"))
    };
    let start = get(ProfilingInfo::Start)?;
    let end = get(ProfilingInfo::End)?;
    Ok(end.saturating_sub(start) as f64 / 1e6)
}

/// Local work sizes chosen per kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalSizes {
    rows: usize,
    cols: usize,
    /// Columns per work-group of the column pass (the rest of the group splits the rows).
    col_width: usize,
    hessian: usize,
    nms: usize,
    select: usize,
    orientation: usize,
    descriptor: usize,
}

/// The SURF pipeline for one device, frame size limit, configuration and capacity.
#[derive(Debug)]
pub struct Pipeline {
    gpu: Gpu,
    config: PipelineConfig,
    cand_capacity: usize,
    cand: Buffer<u32>,
    keys: Buffer<u64>,
    groups: usize,
    local: LocalSizes,
    image: Buffer<u8>,
    integral: Buffer<u32>,
    responses: Option<Buffer<f32>>,
    packed: Option<Buffer<u32>>,
    result: Buffer<u32>,
    /// Pinned staging for uploads (`CL_MEM_ALLOC_HOST_PTR`, mapped once for the pipeline's
    /// life): the copy into it is a plain memcpy and the transfer runs at DMA speed.
    stage_in: MemMap<u8>,
    /// Pinned staging for the result readback.
    stage_out: MemMap<u32>,
    k_rows: Kernel,
    k_cols: Kernel,
    k_hessian: Kernel,
    k_nms: Kernel,
    k_select: Kernel,
    k_scatter: Kernel,
    rank: Buffer<u32>,
    /// Candidates of the last frame (sizes the select kernel's slices).
    last_found: usize,
    k_orientation: Kernel,
    k_descriptor: Kernel,
    read_hint: usize,
    memory: Vec<(&'static str, u64)>,
    last_size: (usize, usize),
}

impl Pipeline {
    /// Makes a pipeline on the device chosen by `spec` (see [`super::open`]).
    pub fn open(spec: Option<&str>, config: PipelineConfig) -> Result<Self, OpenClError> {
        Self::new(Gpu::new(super::select(spec)?)?, config)
    }

    /// Makes a pipeline on an existing context/queue.
    pub(crate) fn new(gpu: Gpu, config: PipelineConfig) -> Result<Self, OpenClError> {
        let surf = config.surf;
        surf.validate()
            .map_err(|e| OpenClError::Unsupported(format!("SURF configuration: {e}")))?;
        surf_core_check(&config).map_err(OpenClError::Unsupported)?;
        let packed_mode = surf.precision == Precision::Packed8;
        let grids = Grids::new(config.max_width, config.max_height, &surf);
        let n = config.max_keypoints;
        let cand_capacity = initial_candidate_capacity(&grids, n);
        let rw = MemFlags::new().read_write();
        let ro = MemFlags::new().read_only();
        let image = gpu.buffer::<u8>("image", config.max_width * config.max_height, ro)?;
        let integral = gpu.buffer::<u32>(
            "integral image",
            (config.max_width + 1) * (config.max_height + 1),
            rw,
        )?;
        let (responses, packed) = if packed_mode {
            (
                None,
                Some(gpu.buffer::<u32>("packed responses", grids.total, rw)?),
            )
        } else {
            (
                Some(gpu.buffer::<f32>("f32 responses", 4 * grids.total, rw)?),
                None,
            )
        };
        let norms_host: Vec<f32> = (0..MAX_OCTAVES * 4)
            .map(|k| response_norm(filter_size(k / 4, k % 4) as u32))
            .collect();
        let norms = gpu.buffer::<f32>("norms", norms_host.len(), ro)?;
        norms
            .write(&norms_host)
            .enq()
            .map_err(OpenClError::runtime("upload norms"))?;
        let table = gpu.buffer::<f32>("code table", 128, ro)?;
        // table[k] = T[k] for k in 1..=127 (the kernel indexes from 1; entry 0 is unused).
        let mut table_host = [0f32; 128];
        table_host[1..].copy_from_slice(PackedCodeTable::new(surf.threshold).as_slice());
        table
            .write(&table_host[..])
            .enq()
            .map_err(OpenClError::runtime("upload code table"))?;
        let ori_host = orientation_table();
        let ori = gpu.buffer::<f32>("orientation table", ori_host.len(), ro)?;
        ori.write(&ori_host)
            .enq()
            .map_err(OpenClError::runtime("upload orientation table"))?;
        let cand = gpu.buffer::<u32>("candidates", cand_capacity * KP_WORDS, rw)?;
        let keys = gpu.buffer::<u64>("candidate keys", cand_capacity, rw)?;
        let result_len = HEADER_WORDS + n * RECORD_WORDS;
        let result = gpu.buffer::<u32>("result", result_len, rw)?;

        let program = gpu.program("surf.cl", SURF_CL)?;
        let q = gpu.queue.clone();
        let build = |name: &'static str| {
            let mut b = Kernel::builder();
            b.program(&program).name(name).queue(q.clone());
            b
        };
        let err = |what: &'static str| OpenClError::runtime(what);
        let (w0, h0) = (config.max_width as i32, config.max_height as i32);
        let octaves = i32::from(surf.octaves);
        let step0 = i32::from(surf.init_sample_step);
        let cap = cand_capacity as u32;
        let nk = n as u32;
        let defaults = config.local_size.is_none();
        let wanted = config.local_size.unwrap_or(64).max(1);
        let local_mem = gpu.selected.info.local_mem_bytes;
        // The scans keep 2 (rows) or 1 (columns) words per work-item in local memory: a kernel
        // whose work-group size the device or the kernel lowers is rebuilt with the smaller
        // local buffer.
        let fit_local = |want: usize, words: usize| {
            if local_mem > 0 {
                want.min((local_mem as usize / 2) / (4 * words)).max(1)
            } else {
                want
            }
        };
        let build_rows = |lsz: usize| {
            build("integral_rows")
                .arg(&image)
                .arg(&integral)
                .arg(w0)
                .arg(h0)
                .arg(&result)
                .arg_local::<u32>(2 * lsz)
                .build()
                .map_err(err("kernel integral_rows"))
        };
        let build_cols = |lsz: usize, cw: usize| {
            build("integral_cols")
                .arg(&integral)
                .arg(w0)
                .arg(h0)
                .arg(cw as i32)
                .arg_local::<u32>(lsz)
                .build()
                .map_err(err("kernel integral_cols"))
        };
        let rows_want = fit_local(if defaults { 256 } else { wanted }, 2);
        let mut k_rows = build_rows(rows_want)?;
        let rows_size = gpu.local_size(&k_rows, rows_want);
        if rows_size != rows_want {
            k_rows = build_rows(rows_size)?;
        }
        let cols_want = fit_local(if defaults { 512 } else { wanted }, 1);
        // Columns per group: 32 (128-byte rows) unless that leaves compute units idle; never
        // below 8 (one 32-byte sector).
        let cus = gpu.selected.info.compute_units.max(1) as usize;
        let col_width_for = |lsz: usize| {
            let mut cw = 32usize.min(lsz);
            while cw > 8 && config.max_width.div_ceil(cw) < cus {
                cw /= 2;
            }
            cw.min(lsz).max(1)
        };
        let mut k_cols = build_cols(cols_want, col_width_for(cols_want))?;
        let cols_size = gpu.local_size(&k_cols, cols_want);
        if cols_size != cols_want {
            k_cols = build_cols(cols_size, col_width_for(cols_size))?;
        }
        let col_width = col_width_for(cols_size);
        let (k_hessian, k_nms) = match (&responses, &packed) {
            (Some(resp), _) => (
                build("hessian_f32")
                    .arg(&integral)
                    .arg(w0)
                    .arg(h0)
                    .arg(octaves)
                    .arg(step0)
                    .arg(&norms)
                    .arg(resp)
                    .build()
                    .map_err(err("kernel hessian_f32"))?,
                build("nms_f32")
                    .arg(&integral)
                    .arg(w0)
                    .arg(h0)
                    .arg(octaves)
                    .arg(step0)
                    .arg(surf.threshold)
                    .arg(resp)
                    .arg(&cand)
                    .arg(&keys)
                    .arg(cap)
                    .arg(&result)
                    .build()
                    .map_err(err("kernel nms_f32"))?,
            ),
            (None, Some(pk)) => (
                build("hessian_packed")
                    .arg(&integral)
                    .arg(w0)
                    .arg(h0)
                    .arg(octaves)
                    .arg(step0)
                    .arg(&norms)
                    .arg(&table)
                    .arg(pk)
                    .build()
                    .map_err(err("kernel hessian_packed"))?,
                build("nms_packed")
                    .arg(&integral)
                    .arg(w0)
                    .arg(h0)
                    .arg(octaves)
                    .arg(step0)
                    .arg(surf.threshold)
                    .arg(&norms)
                    .arg(pk)
                    .arg(&cand)
                    .arg(&keys)
                    .arg(cap)
                    .arg(&result)
                    .build()
                    .map_err(err("kernel nms_packed"))?,
            ),
            (None, None) => {
                return Err(OpenClError::Unsupported("no response buffer".into()));
            }
        };
        // The select kernel keeps one tile of 64-bit keys in local memory.
        let select_local = if local_mem > 0 {
            wanted.min((local_mem as usize / 2) / 8).max(1)
        } else {
            wanted
        };
        let rank = zeroed_u32(&gpu, "candidate ranks", cand_capacity)?;
        let build_select = |tile: usize| {
            build("select_strongest")
                .arg(&cand)
                .arg(&keys)
                .arg(cap)
                .arg(nk)
                .arg(&result)
                .arg(&rank)
                .arg(8u32)
                .arg_local::<u64>(tile)
                .build()
                .map_err(err("kernel select_strongest"))
        };
        let mut k_select = build_select(select_local)?;
        // The select kernel's tile is as large as its work-group: rebuild when the kernel allows
        // fewer work-items than wanted.
        let select_size = gpu.local_size(&k_select, select_local);
        if select_size != select_local {
            k_select = build_select(select_size)?;
        }
        let k_scatter = build("select_scatter")
            .arg(&cand)
            .arg(cap)
            .arg(nk)
            .arg(&result)
            .arg(&rank)
            .build()
            .map_err(err("kernel select_scatter"))?;
        let k_orientation = build("orientation")
            .arg(&integral)
            .arg(w0)
            .arg(h0)
            .arg(cap)
            .arg(nk)
            .arg(&ori)
            .arg(&result)
            .build()
            .map_err(err("kernel orientation"))?;
        let k_descriptor = build("descriptor")
            .arg(&integral)
            .arg(w0)
            .arg(h0)
            .arg(cap)
            .arg(nk)
            .arg(i32::from(surf.upright))
            .arg(&result)
            .build()
            .map_err(err("kernel descriptor"))?;
        // The descriptor keeps 1296 float2 + 81 floats in local memory (10.6 KB): fits the 16 KB
        // of ION-class boards.
        const DESCRIPTOR_LOCAL: u64 = 1296 * 8 + 81 * 4;
        if local_mem > 0 && local_mem < DESCRIPTOR_LOCAL {
            return Err(OpenClError::Unsupported(format!(
                "the descriptor kernel needs {DESCRIPTOR_LOCAL} bytes of local memory, the device has {local_mem}"
            )));
        }
        // Per-keypoint kernels: 128 work-items (109 orientation samples, 1296 descriptor samples
        // in ~10 steps) unless the caller fixed a size.
        let per_kp = if defaults { 128 } else { wanted };
        let local = LocalSizes {
            rows: rows_size,
            cols: cols_size,
            col_width,
            hessian: gpu.local_size(&k_hessian, if defaults { 128 } else { wanted }),
            nms: gpu.local_size(&k_nms, if defaults { 128 } else { wanted }),
            select: select_size,
            orientation: gpu.local_size(&k_orientation, per_kp),
            descriptor: gpu.local_size(&k_descriptor, per_kp),
        };
        // Groups of the per-keypoint kernels loop over keypoints: up to one group per keypoint
        // (groups past the frame's count leave at once), at most 32 per compute unit.
        let groups = (cus * 32).clamp(1, n.max(1));
        let memory = vec![
            ("image (u8)", (config.max_width * config.max_height) as u64),
            (
                "integral image (u32)",
                4 * ((config.max_width + 1) * (config.max_height + 1)) as u64,
            ),
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
            ("tables", (4 * 24 + 4 * 128 + 4 * ori_host.len()) as u64),
            (
                "candidates + keys + ranks",
                ((4 * KP_WORDS + 8 + 4) * cand_capacity) as u64,
            ),
            ("keypoints + descriptors", 4 * result_len as u64),
        ];
        let stage_in_buf = gpu.buffer::<u8>(
            "pinned upload staging",
            config.max_width * config.max_height,
            MemFlags::new().alloc_host_ptr().read_write(),
        )?;
        let stage_out_buf = gpu.buffer::<u32>(
            "pinned readback staging",
            result_len,
            MemFlags::new().alloc_host_ptr().read_write(),
        )?;
        let stage_in = map_staging(&stage_in_buf)?;
        let stage_out = map_staging(&stage_out_buf)?;
        Ok(Self {
            gpu,
            config,
            cand_capacity,
            cand,
            keys,
            groups,
            local,
            image,
            integral,
            responses,
            packed,
            result,
            k_rows,
            k_cols,
            k_hessian,
            k_nms,
            k_select,
            k_scatter,
            rank,
            last_found: 0,
            k_orientation,
            k_descriptor,
            stage_in,
            stage_out,
            read_hint: 256,
            memory,
            last_size: (0, 0),
        })
    }

    /// Device memory held by the pipeline's buffers, bytes (the pinned host staging buffers
    /// are not counted: they live in host memory).
    pub fn device_bytes(&self) -> u64 {
        self.memory.iter().map(|(_, b)| b).sum()
    }

    /// Device memory per buffer: (what, bytes).
    pub fn device_memory(&self) -> Vec<(&'static str, u64)> {
        self.memory.clone()
    }

    /// What the pipeline was made for.
    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// Size of the candidate buffer: sized from `max_keypoints` at creation and grown (up to
    /// the proven bound of the module docs) when a frame finds more.
    pub fn candidate_capacity(&self) -> usize {
        self.cand_capacity
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        format!(
            "{} / {}",
            self.gpu.selected.info.platform, self.gpu.selected.info.name
        )
    }

    fn set_frame_args(&self, w: i32, h: i32) -> Result<(), OpenClError> {
        // Argument positions of the frame width and height in each kernel (surf.cl).
        let slots: [(&Kernel, u32); 6] = [
            (&self.k_rows, 2),
            (&self.k_cols, 1),
            (&self.k_hessian, 1),
            (&self.k_nms, 1),
            (&self.k_orientation, 1),
            (&self.k_descriptor, 1),
        ];
        for (k, at) in slots {
            k.set_arg(at as usize, w)
                .and_then(|_| k.set_arg(at as usize + 1, h))
                .map_err(OpenClError::runtime("set kernel arguments"))?;
        }
        Ok(())
    }

    /// Checks a frame against the pipeline's maximum size.
    pub(crate) fn check_size(&self, w: usize, h: usize) -> Result<(), OpenClError> {
        if w > self.config.max_width || h > self.config.max_height {
            return Err(OpenClError::ImageTooLarge {
                width: w,
                height: h,
                max_width: self.config.max_width,
                max_height: self.config.max_height,
            });
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
        let cap = (found + found / 4).max(2 * self.cand_capacity).min(bound);
        if cap <= self.cand_capacity {
            return Err(OpenClError::CandidateOverflow {
                found,
                capacity: self.cand_capacity,
            });
        }
        let rw = MemFlags::new().read_write();
        let cand = self.gpu.buffer::<u32>("candidates", cap * KP_WORDS, rw)?;
        let keys = self.gpu.buffer::<u64>("candidate keys", cap, rw)?;
        let rank = zeroed_u32(&self.gpu, "candidate ranks", cap)?;
        let nms_at = if self.config.surf.precision == Precision::Packed8 {
            8
        } else {
            7
        };
        let c = cap as u32;
        let set = |k: &Kernel, at: usize| {
            k.set_arg(at, &cand)
                .and_then(|_| k.set_arg(at + 1, &keys))
                .and_then(|_| k.set_arg(at + 2, c))
        };
        set(&self.k_nms, nms_at)
            .and_then(|_| set(&self.k_select, 0))
            .and_then(|_| self.k_select.set_arg(5, &rank))
            .and_then(|_| self.k_scatter.set_arg(0, &cand))
            .and_then(|_| self.k_scatter.set_arg(1, c))
            .and_then(|_| self.k_scatter.set_arg(4, &rank))
            .and_then(|_| self.k_orientation.set_arg(3, c))
            .and_then(|_| self.k_descriptor.set_arg(3, c))
            .map_err(OpenClError::runtime("set kernel arguments"))?;
        self.cand = cand;
        self.keys = keys;
        self.rank = rank;
        self.cand_capacity = cap;
        for m in &mut self.memory {
            if m.0 == "candidates + keys + ranks" {
                m.1 = ((4 * KP_WORDS + 8 + 4) * cap) as u64;
            }
        }
        Ok(())
    }

    /// Copies `image` into the pinned staging buffer (the caller checked the size).
    pub(crate) fn stage(&mut self, image: &GrayImage<'_>) {
        let n = image.pixels().len();
        self.stage_in[..n].copy_from_slice(image.pixels());
    }

    /// Enqueues the kernels of one `w x h` frame whose pixels are in `input` (the pipeline's
    /// own image buffer when `None`); the first kernel waits for the events of `wait`.
    pub(crate) fn enqueue_kernels(
        &mut self,
        input: Option<&Buffer<u8>>,
        w: usize,
        h: usize,
        wait: &[Event],
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        let surf = self.config.surf;
        let grids = Grids::new(w, h, &surf);
        self.set_frame_args(w as i32, h as i32)?;
        self.k_rows
            .set_arg(0, input.unwrap_or(&self.image))
            .map_err(OpenClError::runtime("set kernel arguments"))?;
        let mut run =
            |name: &'static str, kernel: &Kernel, global: usize, local: usize, wait: &[Event]| {
                let mut ev = Event::empty();
                launch_after(kernel, global, local, wait, &mut ev)?;
                events.push((name, ev));
                Ok::<(), OpenClError>(())
            };
        let l = self.local;
        run("integral_rows", &self.k_rows, h * l.rows, l.rows, wait)?;
        run(
            "integral_cols",
            &self.k_cols,
            w.div_ceil(l.col_width) * l.cols,
            l.cols,
            &[],
        )?;
        if grids.total > 0 {
            let (hn, nn) = if surf.precision == Precision::Packed8 {
                ("hessian_packed", "nms_packed")
            } else {
                ("hessian_f32", "nms_f32")
            };
            run(hn, &self.k_hessian, grids.total, l.hessian, &[])?;
            run(nn, &self.k_nms, 2 * grids.total, l.nms, &[])?;
            let cand_bound = grids.max_candidates().min(self.cand_capacity);
            // Slices per candidate block: enough groups for ~4 per compute unit at the last
            // frame's candidate count (the result does not depend on it).
            let cus = self.gpu.selected.info.compute_units.max(1) as usize;
            let blocks = self.last_found.div_ceil(l.select).max(1);
            let slices = (4 * cus).div_ceil(blocks).clamp(1, 64);
            self.k_select
                .set_arg(6, slices as u32)
                .map_err(OpenClError::runtime("set kernel arguments"))?;
            run(
                "select",
                &self.k_select,
                cand_bound.div_ceil(l.select) * slices * l.select,
                l.select,
                &[],
            )?;
            run("select", &self.k_scatter, cand_bound, l.select, &[])?;
            if !surf.upright {
                run(
                    "orientation",
                    &self.k_orientation,
                    self.groups * l.orientation,
                    l.orientation,
                    &[],
                )?;
            }
            run(
                "descriptor",
                &self.k_descriptor,
                self.groups * l.descriptor,
                l.descriptor,
                &[],
            )?;
        }
        Ok(())
    }

    /// Reads back the header and the kept records (blocking) into the pinned staging buffer;
    /// returns the candidates found, or `None` when they did not fit the candidate buffer
    /// (which is then grown: the caller re-enqueues the kernels).
    pub(crate) fn read_results(
        &mut self,
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<Option<usize>, OpenClError> {
        // One readback of the header and as many records as the last frame had (plus margin);
        // a second read only when this frame has more.
        let n_max = self.config.max_keypoints;
        let guess = self.read_hint.min(n_max);
        read_records(&self.result, &mut self.stage_out, 0, guess, events)?;
        let found = self.stage_out[0] as usize;
        let overflow = self.stage_out[1] as usize;
        if overflow > 0 || found > self.cand_capacity {
            self.grow_candidates(found)?;
            return Ok(None);
        }
        let kept = found.min(n_max);
        if kept > guess {
            read_records(&self.result, &mut self.stage_out, guess, kept, events)?;
        }
        self.read_hint = readback_hint(kept, n_max);
        self.last_found = found;
        Ok(Some(found))
    }

    /// The device buffer of the last frame's results (header, then kept records).
    pub(crate) fn result_buffer(&self) -> &Buffer<u32> {
        &self.result
    }

    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Builds the frame's output from the staged readback.
    pub(crate) fn output(
        &self,
        found: usize,
        events: &[(&'static str, Event)],
        wall_ms: f64,
    ) -> Result<DetectOutput, OpenClError> {
        self.output_from(&self.stage_out, found, events, wall_ms)
    }

    /// Records the candidate count of a frame whose results were read by the caller (the
    /// stream), for the next frame's launch sizes.
    pub(crate) fn note_found(&mut self, found: usize) {
        self.last_found = found;
    }

    /// Builds a frame's output from a readback of its result buffer (`stage`: the header and
    /// at least the kept records).
    pub(crate) fn output_from(
        &self,
        stage: &[u32],
        found: usize,
        events: &[(&'static str, Event)],
        wall_ms: f64,
    ) -> Result<DetectOutput, OpenClError> {
        records_output(
            stage,
            found,
            self.config.max_keypoints,
            true,
            events,
            wall_ms,
        )
    }

    /// Detects and describes the keypoints of one frame.
    pub fn detect(&mut self, image: &GrayImage<'_>) -> Result<DetectOutput, OpenClError> {
        let (w, h) = (image.width(), image.height());
        self.check_size(w, h)?;
        let t0 = Instant::now();
        let mut events: Vec<(&'static str, Event)> = Vec::with_capacity(12);
        self.stage(image);
        inject::runtime(FaultPoint::Upload, "upload image")?;
        let mut ev = Event::empty();
        self.image
            .write(&self.stage_in[..w * h])
            .enew(&mut ev)
            .enq()
            .map_err(OpenClError::runtime("upload image"))?;
        events.push(("upload", ev));
        let found = loop {
            self.enqueue_kernels(None, w, h, &[], &mut events)?;
            if let Some(found) = self.read_results(&mut events)? {
                break found;
            }
        };
        self.last_size = (w, h);
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        self.output(found, &events, wall_ms)
    }

    /// Records the size of the last frame (for the debugging readbacks).
    pub(crate) fn set_last_size(&mut self, w: usize, h: usize) {
        self.last_size = (w, h);
    }

    /// The integral image of the last frame (an extra readback; for tests and debugging).
    pub fn read_integral(&self) -> Result<Vec<u32>, OpenClError> {
        let (w, h) = self.last_size;
        let mut v = vec![0u32; (w + 1) * (h + 1)];
        if !v.is_empty() {
            self.integral
                .read(&mut v)
                .enq()
                .map_err(OpenClError::runtime("read integral image"))?;
        }
        Ok(v)
    }

    /// The packed response words of the last frame, one `Vec` per octave (`gw * gh` words,
    /// row-major); packed pipelines only.
    pub fn read_packed(&self) -> Result<Vec<Vec<u32>>, OpenClError> {
        let buf = self
            .packed
            .as_ref()
            .ok_or_else(|| OpenClError::Unsupported("not a packed pipeline".into()))?;
        let grids = Grids::new(self.last_size.0, self.last_size.1, &self.config.surf);
        let mut all = vec![0u32; grids.total];
        if !all.is_empty() {
            buf.read(&mut all)
                .enq()
                .map_err(OpenClError::runtime("read packed responses"))?;
        }
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
        let grids = Grids::new(self.last_size.0, self.last_size.1, &self.config.surf);
        let mut all = vec![0f32; 4 * grids.total];
        if !all.is_empty() {
            buf.read(&mut all)
                .enq()
                .map_err(OpenClError::runtime("read responses"))?;
        }
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
}

/// A `u32` device buffer of `len` zeros.
fn zeroed_u32(gpu: &Gpu, what: &'static str, len: usize) -> Result<Buffer<u32>, OpenClError> {
    let buf = gpu.buffer::<u32>(what, len, MemFlags::new().read_write())?;
    buf.cmd()
        .fill(0u32, None)
        .enq()
        .map_err(OpenClError::runtime("clear buffer"))?;
    Ok(buf)
}

/// Sums profiling times per stage, merging consecutive events of one stage.
/// Reads back (blocking) into `stage` the words of `result` that hold records `from..to`, and
/// the header too when `from` is 0.
pub(crate) fn read_records(
    result: &Buffer<u32>,
    stage: &mut [u32],
    from: usize,
    to: usize,
    events: &mut Vec<(&'static str, Event)>,
) -> Result<(), OpenClError> {
    inject::runtime(FaultPoint::Readback, "read back results")?;
    let start = if from == 0 {
        0
    } else {
        HEADER_WORDS + from * RECORD_WORDS
    };
    let end = HEADER_WORDS + to * RECORD_WORDS;
    let mut ev = Event::empty();
    result
        .read(&mut stage[start..end])
        .offset(start)
        .enew(&mut ev)
        .enq()
        .map_err(OpenClError::runtime("read back results"))?;
    events.push(("readback", ev));
    Ok(())
}

/// Records the next readback takes after a frame that kept `kept`: a quarter more and 64, so
/// that a second read is rare when the count grows.
pub(crate) fn readback_hint(kept: usize, max_keypoints: usize) -> usize {
    (kept + kept / 4 + 64).min(max_keypoints)
}

/// A frame's output from a readback of a result buffer (surf.cl and harris.cl share the
/// layout: `HEADER_WORDS`, then per kept keypoint `KP_WORDS` of keypoint and the descriptor):
/// the first `min(found, max_keypoints)` records, with their descriptors when `describe`.
pub(crate) fn records_output(
    stage: &[u32],
    found: usize,
    max_keypoints: usize,
    describe: bool,
    events: &[(&'static str, Event)],
    wall_ms: f64,
) -> Result<DetectOutput, OpenClError> {
    let kept = found.min(max_keypoints);
    if stage.len() < HEADER_WORDS + kept * RECORD_WORDS {
        return Err(OpenClError::Unsupported(format!(
            "{kept} records in a {}-word readback",
            stage.len()
        )));
    }
    let mut keypoints = Vec::with_capacity(kept);
    let mut descriptors = Vec::with_capacity(if describe { kept } else { 0 });
    for rec in stage[HEADER_WORDS..].chunks_exact(RECORD_WORDS).take(kept) {
        let meta = rec[5];
        keypoints.push(Keypoint {
            x: f32::from_bits(rec[0]),
            y: f32::from_bits(rec[1]),
            scale: f32::from_bits(rec[2]),
            orientation: f32::from_bits(rec[3]),
            response: f32::from_bits(rec[4]),
            laplacian: ((meta >> 16) & 0xff) as u8 as i8,
            octave: (meta & 0xff) as u8,
            interval: ((meta >> 8) & 0xff) as u8,
            sample_x: rec[6],
            sample_y: rec[7],
        });
        if describe {
            let mut d = [0.0f32; DESCRIPTOR_LEN];
            for (v, &bits) in d.iter_mut().zip(&rec[KP_WORDS..]) {
                *v = f32::from_bits(bits);
            }
            descriptors.push(d);
        }
    }
    Ok(DetectOutput {
        keypoints,
        descriptors,
        candidates: found,
        dropped: found - kept,
        timings: stage_timings(events)?,
        wall_ms,
    })
}

pub(crate) fn stage_timings(
    events: &[(&'static str, Event)],
) -> Result<Vec<StageTiming>, OpenClError> {
    let mut timings: Vec<StageTiming> = Vec::with_capacity(events.len());
    for (name, ev) in events {
        let ms = event_ms(ev)?;
        match timings.last_mut() {
            Some(t) if t.name == *name => t.ms += ms,
            _ => timings.push(StageTiming {
                name: (*name).to_string(),
                ms,
            }),
        }
    }
    Ok(timings)
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

/// Checks what the kernels rely on; returns a message on failure.
fn surf_core_check(config: &PipelineConfig) -> Result<(), String> {
    surfcl_core::image::check_dimensions(config.max_width, config.max_height)
        .map_err(|e| e.to_string())?;
    if config.max_keypoints == 0 || config.max_keypoints > crate::backend::MAX_KEYPOINTS_LIMIT {
        return Err(format!(
            "max_keypoints must be in 1..={}, got {}",
            crate::backend::MAX_KEYPOINTS_LIMIT,
            config.max_keypoints
        ));
    }
    Ok(())
}
