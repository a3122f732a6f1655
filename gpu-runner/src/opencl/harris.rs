//! Harris corners on one OpenCL device, with SURF-64 upright descriptors at the fixed scale.
//!
//! A [`HarrisPipeline`] is made once for a device, a maximum frame size, a [`HarrisConfig`] and a
//! keypoint capacity; every device buffer is allocated at creation. A frame is one upload, the
//! kernels below on one in-order queue (no host synchronisation in between) and normally one
//! readback of the result header, keypoints and descriptors together.
//!
//! Kernels (`kernels/harris.cl`, after Loundagin 2015; the stages of `surfcl_core::harris`):
//! 1. `harris_gradients`: one work-group per output tile loads the image tile with a 2-pixel
//!    apron into local memory and runs the separable 3x3 Gaussian, then the 3x3 Sobel, writing the
//!    exact integer products `Gx^2, Gy^2, Gx Gy` (and clears the result header);
//! 2. `harris_response`: separable window sums over local tiles (column sums in `int`, row sums
//!    in `long`, exact), the response in the core's `f32` operation order (bit-exact), and the
//!    tile's largest response folded into the header by one `atomic_max` per work-group;
//! 3. `harris_nms`: threshold (absolute, or relative to that max), the 5x5 NMS in spiral order
//!    with early exit, the sub-pixel parabola, and an atomic append of candidates;
//! 4. `harris_select`: each candidate's rank in `Keypoint::rank_cmp` order (count of smaller
//!    64-bit keys); the strongest `max_keypoints` land at their rank, sorted;
//! 5. from `kernels/surf.cl` (built into this pipeline's own program object): `integral_rows`,
//!    `integral_cols` (the integral image the descriptor samples) and `descriptor` (upright).
//!
//! Two kept pixels are never within each other's 5x5 window (each would have to beat the other),
//! so kept pixels are at least 3 apart on some axis and a frame has at most
//! `ceil(W/3) * ceil(H/3)` candidates: the candidate buffer holds that many, so the result never
//! depends on the order in which work-items append.

use std::time::Instant;

use ocl::builders::KernelBuilder;
use ocl::enums::{DeviceInfo as ClDeviceInfo, DeviceInfoResult};
use ocl::flags::{DeviceFpConfig, MemFlags};
use ocl::{Buffer, Event, Kernel, MemMap, Program, Queue};
use surfcl_core::GrayImage;
use surfcl_core::harris::{HarrisConfig, HarrisThreshold};

use super::enqueue::{launch_after, map_staging};
use super::inject::{self, FaultPoint};
use super::pipeline::{
    DetectOutput, Gpu, HEADER_WORDS, KP_WORDS, RECORD_WORDS, read_records, readback_hint,
    records_output,
};
use super::{OpenClError, SETUP_LOCK};

const HARRIS_CL: &str = include_str!("../../kernels/harris.cl");
const SURF_CL: &str = include_str!("../../kernels/surf.cl");

/// Header word of the frame's largest response (`H_MAX`, an order-preserving `u32`).
const H_MAX: usize = 2;
/// Widest output tile (work-items along x of a work-group): 32 `int`s are a 128-byte row, one
/// coalesced transaction on NVIDIA GPUs.
const MAX_TILE_W: usize = 32;

/// Tile `(width, height)` of a work-group of `items` work-items (a power of two).
fn tile_dims(items: usize) -> (usize, usize) {
    let w = items.min(MAX_TILE_W);
    (w, items / w)
}
/// Local memory of surf.cl's `descriptor` kernel: 1296 float2 + 64 + 16 + 1 floats.
const DESCRIPTOR_LOCAL: u64 = 1296 * 8 + 81 * 4;

/// `NORM = 1 / 32640^2` computed in `f64`, rounded once to `f32` (the core's constant).
fn norm() -> f32 {
    (1.0f64 / (32640.0f64 * 32640.0f64)) as f32
}

/// What a [`HarrisPipeline`] is made for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HarrisPipelineConfig {
    /// Largest frame width.
    pub max_width: usize,
    /// Largest frame height.
    pub max_height: usize,
    /// Harris parameters (validated with `HarrisConfig::validate` at creation).
    pub harris: HarrisConfig,
    /// Capacity: the strongest `max_keypoints` are kept (`1..=MAX_KEYPOINTS_LIMIT`).
    pub max_keypoints: usize,
    /// Whether to compute the SURF-64 descriptors (integral image and descriptor kernels); when
    /// false, the descriptors of [`DetectOutput`] are empty (detection-only timing).
    pub describe: bool,
    /// Work-items per tile kernel work-group (rounded down to a power of two and clamped to the
    /// device's, the kernels' and local memory's limits; the tile is `min(32, n)` pixels wide),
    /// also the select kernel's group size; `None`: 256. Results do not depend on it.
    pub local_size: Option<usize>,
}

impl HarrisPipelineConfig {
    /// A configuration with descriptors and the default work-group size.
    pub fn new(
        max_width: usize,
        max_height: usize,
        harris: HarrisConfig,
        max_keypoints: usize,
    ) -> Self {
        Self {
            max_width,
            max_height,
            harris,
            max_keypoints,
            describe: true,
            local_size: None,
        }
    }
}

/// Threshold and max of the last frame.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HarrisFrameStats {
    /// Largest response of the frame.
    pub max_response: f32,
    /// Threshold applied (absolute, or the fraction times `max_response`, one `f32` multiply).
    pub threshold: f32,
}

/// surf.cl's kernels that describe the corners: the integral image and the descriptor, with
/// their work-group sizes (set up as `Pipeline` sets them up for the same kernels).
#[derive(Debug)]
struct SurfKernels {
    rows: Kernel,
    cols: Kernel,
    descriptor: Kernel,
    rows_local: usize,
    cols_local: usize,
    col_width: usize,
    descriptor_local: usize,
}

impl SurfKernels {
    #[allow(clippy::too_many_arguments)]
    fn new(
        gpu: &Gpu,
        program: &Program,
        q: &Queue,
        image: &Buffer<u8>,
        integral: &Buffer<u32>,
        result: &Buffer<u32>,
        max_width: usize,
        max_height: usize,
        capacity: u32,
        max_keypoints: u32,
    ) -> Result<Self, OpenClError> {
        let err = |what: &'static str| OpenClError::runtime(what);
        let (w0, h0) = (max_width as i32, max_height as i32);
        let local_mem = gpu.selected.info.local_mem_bytes;
        // The scans keep 2 (rows) or 1 (columns) words per work-item in local memory.
        let fit_local = |want: usize, words: usize| {
            if local_mem > 0 {
                want.min((local_mem as usize / 2) / (4 * words)).max(1)
            } else {
                want
            }
        };
        let build_rows = |lsz: usize| {
            kernel_builder(program, q, "integral_rows")
                .arg(image)
                .arg(integral)
                .arg(w0)
                .arg(h0)
                .arg(result)
                .arg_local::<u32>(2 * lsz)
                .build()
                .map_err(err("kernel integral_rows"))
        };
        let build_cols = |lsz: usize, cw: usize| {
            kernel_builder(program, q, "integral_cols")
                .arg(integral)
                .arg(w0)
                .arg(h0)
                .arg(cw as i32)
                .arg_local::<u32>(lsz)
                .build()
                .map_err(err("kernel integral_cols"))
        };
        let rows_want = fit_local(256, 2);
        let mut rows = build_rows(rows_want)?;
        let rows_local = gpu.local_size(&rows, rows_want);
        if rows_local != rows_want {
            rows = build_rows(rows_local)?;
        }
        let cols_want = fit_local(512, 1);
        // Columns per group: 32 (128-byte rows) unless that leaves compute units idle.
        let cus = gpu.selected.info.compute_units.max(1) as usize;
        let col_width_for = |lsz: usize| {
            let mut cw = 32usize.min(lsz);
            while cw > 8 && max_width.div_ceil(cw) < cus {
                cw /= 2;
            }
            cw.min(lsz).max(1)
        };
        let mut cols = build_cols(cols_want, col_width_for(cols_want))?;
        let cols_local = gpu.local_size(&cols, cols_want);
        if cols_local != cols_want {
            cols = build_cols(cols_local, col_width_for(cols_local))?;
        }
        let descriptor = kernel_builder(program, q, "descriptor")
            .arg(integral)
            .arg(w0)
            .arg(h0)
            .arg(capacity)
            .arg(max_keypoints)
            .arg(1i32)
            .arg(result)
            .build()
            .map_err(err("kernel descriptor"))?;
        Ok(Self {
            descriptor_local: gpu.local_size(&descriptor, 64),
            rows,
            cols,
            descriptor,
            rows_local,
            cols_local,
            col_width: col_width_for(cols_local),
        })
    }
}

/// The Harris pipeline for one device, frame size limit, configuration and capacity.
#[derive(Debug)]
pub struct HarrisPipeline {
    gpu: Gpu,
    config: HarrisPipelineConfig,
    cand_capacity: usize,
    tile_items: usize,
    select_local: usize,
    nms_local: usize,
    groups: usize,
    image: Buffer<u8>,
    response: Buffer<f32>,
    result: Buffer<u32>,
    k_gradients: Kernel,
    k_response: Kernel,
    k_nms: Kernel,
    k_select: Kernel,
    surf: Option<SurfKernels>,
    /// Pinned staging for the upload (`CL_MEM_ALLOC_HOST_PTR`, mapped once for the pipeline's
    /// life): the copy to the device is a DMA from page-locked memory.
    stage_in: MemMap<u8>,
    /// Pinned staging for the result readback.
    stage_out: MemMap<u32>,
    read_hint: usize,
    device_bytes: u64,
    last_size: (usize, usize),
    last_stats: HarrisFrameStats,
}

/// Builds `src` with `defines` prepended and `options`, surfacing the compiler log on failure.
fn build_program(
    gpu: &Gpu,
    file: &'static str,
    src: &str,
    defines: &str,
    options: &str,
) -> Result<Program, OpenClError> {
    // PoCL crashes when programs are built from several threads at once (see `Gpu::program`).
    if let Some(log) = inject::check(FaultPoint::Build) {
        return Err(OpenClError::Build {
            file,
            device: gpu.selected.info.name.clone(),
            log,
        });
    }
    let _guard = SETUP_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Program::builder()
        .src(format!("{defines}{src}"))
        .devices(gpu.selected.device)
        .cmplr_opt(format!("-cl-std=CL1.2 {options}"))
        .build(&gpu.context)
        .map_err(|e| OpenClError::Build {
            file,
            device: gpu.selected.info.name.clone(),
            log: e.to_string(),
        })
}

/// A kernel builder for `name` of `program` on `queue`.
fn kernel_builder<'p>(
    program: &'p Program,
    queue: &Queue,
    name: &'static str,
) -> KernelBuilder<'p> {
    let mut b = Kernel::builder();
    b.program(program).name(name).queue(queue.clone());
    b
}

/// Whether the device advertises correctly rounded `f32` division (`-cl-fp32-correctly-rounded-
/// divide-sqrt` is only valid then).
fn correctly_rounded_divide(gpu: &Gpu) -> bool {
    matches!(
        gpu.selected.device.info(ClDeviceInfo::SingleFpConfig),
        Ok(DeviceInfoResult::SingleFpConfig(c)) if c.contains(DeviceFpConfig::CORRECTLY_ROUNDED_DIVIDE_SQRT)
    )
}

/// Local memory (bytes) of the two tile kernels for a tile height and window radius.
fn tile_local_bytes(items: usize, r: usize) -> u64 {
    let (tile_w, tile_h) = tile_dims(items);
    let (iw, ih, gw, gh) = (tile_w + 4, tile_h + 4, tile_w + 2, tile_h + 2);
    let gradients = 4 * (ih * iw + ih * gw + gh * gw);
    let (sw, sh) = (tile_w + 2 * r, tile_h + 2 * r);
    let response = 4 * (sh * sw + tile_h * sw + items);
    gradients.max(response) as u64
}

impl HarrisPipeline {
    /// Makes a pipeline on the device chosen by `spec` (see [`super::open`]).
    pub fn open(spec: Option<&str>, config: HarrisPipelineConfig) -> Result<Self, OpenClError> {
        Self::new(Gpu::new(super::select(spec)?)?, config)
    }

    /// Makes a pipeline on an existing context/queue.
    pub(crate) fn new(gpu: Gpu, config: HarrisPipelineConfig) -> Result<Self, OpenClError> {
        let harris = config.harris;
        harris
            .validate()
            .map_err(|e| OpenClError::Unsupported(format!("Harris configuration: {e}")))?;
        surfcl_core::image::check_dimensions(config.max_width, config.max_height)
            .map_err(|e| OpenClError::Unsupported(e.to_string()))?;
        let limit = crate::backend::MAX_KEYPOINTS_LIMIT;
        if config.max_keypoints == 0 || config.max_keypoints > limit {
            return Err(OpenClError::Unsupported(format!(
                "max_keypoints must be in 1..={limit}, got {}",
                config.max_keypoints
            )));
        }
        let info = &gpu.selected.info;
        let local_mem = info.local_mem_bytes;
        let r = harris.window / 2;
        // Work-items per tile: a power of two (the max reduction halves), at most what is
        // wanted, the device allows and local memory holds.
        let wanted = config
            .local_size
            .unwrap_or(256)
            .min(info.max_work_group_size.max(1));
        let mut items = 1usize;
        while items * 2 <= wanted {
            items *= 2;
        }
        while items > 1 && local_mem > 0 && tile_local_bytes(items, r) > local_mem {
            items /= 2;
        }
        if local_mem > 0 && tile_local_bytes(items, r) > local_mem {
            return Err(OpenClError::Unsupported(format!(
                "the Harris tile kernels need {} bytes of local memory, the device has {local_mem}",
                tile_local_bytes(items, r)
            )));
        }
        if config.describe && local_mem > 0 && local_mem < DESCRIPTOR_LOCAL {
            return Err(OpenClError::Unsupported(format!(
                "the descriptor kernel needs {DESCRIPTOR_LOCAL} bytes of local memory, the device has {local_mem}"
            )));
        }
        let divide = if correctly_rounded_divide(&gpu) {
            "-cl-fp32-correctly-rounded-divide-sqrt"
        } else {
            ""
        };

        let (mw, mh) = (config.max_width, config.max_height);
        let pixels = mw * mh;
        let cand_capacity = (mw.div_ceil(3) * mh.div_ceil(3)).max(1);
        let n = config.max_keypoints;
        let rw = MemFlags::new().read_write();
        let image = gpu.buffer::<u8>("image", pixels, MemFlags::new().read_only())?;
        let pxx = gpu.buffer::<i32>("Harris products xx", pixels, rw)?;
        let pyy = gpu.buffer::<i32>("Harris products yy", pixels, rw)?;
        let pxy = gpu.buffer::<i32>("Harris products xy", pixels, rw)?;
        let response = gpu.buffer::<f32>("Harris responses", pixels, rw)?;
        let cand = gpu.buffer::<u32>("candidates", cand_capacity * KP_WORDS, rw)?;
        let keys = gpu.buffer::<u64>("candidate keys", cand_capacity, rw)?;
        let result_len = HEADER_WORDS + n * RECORD_WORDS;
        let result = gpu.buffer::<u32>("result", result_len, rw)?;
        let integral_len = if config.describe {
            (mw + 1) * (mh + 1)
        } else {
            1
        };
        let integral = gpu.buffer::<u32>("integral image", integral_len, rw)?;

        let q = gpu.queue.clone();
        let err = |what: &'static str| OpenClError::runtime(what);
        let (w0, h0) = (mw as i32, mh as i32);
        let cap = cand_capacity as u32;
        let nk = n as u32;
        // Rebuild with a smaller tile when a kernel allows fewer work-items than the tile has
        // (the tile size is compiled in: it sizes the local arrays).
        let (program, k_gradients, k_response, tile_items) = loop {
            let (tile_w, tile_h) = tile_dims(items);
            let defines =
                format!("#define TILE_W {tile_w}\n#define TILE_H {tile_h}\n#define WIN_R {r}\n");
            let program = build_program(&gpu, "harris.cl", HARRIS_CL, &defines, divide)?;
            let k_gradients = kernel_builder(&program, &q, "harris_gradients")
                .arg(&image)
                .arg(w0)
                .arg(h0)
                .arg(&pxx)
                .arg(&pyy)
                .arg(&pxy)
                .arg(&result)
                .build()
                .map_err(err("kernel harris_gradients"))?;
            let k_response = kernel_builder(&program, &q, "harris_response")
                .arg(&pxx)
                .arg(&pyy)
                .arg(&pxy)
                .arg(w0)
                .arg(h0)
                .arg(harris.k)
                .arg(norm())
                .arg(&response)
                .arg(&result)
                .build()
                .map_err(err("kernel harris_response"))?;
            let fits = gpu.local_size(&k_gradients, items) == items
                && gpu.local_size(&k_response, items) == items;
            if fits || items == 1 {
                break (program, k_gradients, k_response, items);
            }
            items /= 2;
        };
        let surf_program = if config.describe {
            Some(build_program(&gpu, "surf.cl", SURF_CL, "", "")?)
        } else {
            None
        };
        let (mode, thr) = match harris.threshold {
            HarrisThreshold::Absolute(t) => (0i32, t),
            HarrisThreshold::Relative(f) => (1i32, f),
        };
        let k_nms = kernel_builder(&program, &q, "harris_nms")
            .arg(&response)
            .arg(w0)
            .arg(h0)
            .arg(mode)
            .arg(thr)
            .arg(i32::from(harris.subpixel))
            .arg(harris.descriptor_scale)
            .arg(&cand)
            .arg(&keys)
            .arg(cap)
            .arg(&result)
            .build()
            .map_err(err("kernel harris_nms"))?;
        // The select kernel keeps one tile of 64-bit keys (one per work-item) in local memory.
        let mut select_local = config.local_size.unwrap_or(256).max(1);
        if local_mem > 0 {
            select_local = select_local.min((local_mem as usize / 2) / 8).max(1);
        }
        let build_select = |tile: usize| {
            kernel_builder(&program, &q, "harris_select")
                .arg(&cand)
                .arg(&keys)
                .arg(cap)
                .arg(nk)
                .arg(&result)
                .arg_local::<u64>(tile)
                .build()
                .map_err(err("kernel harris_select"))
        };
        let mut k_select = build_select(select_local)?;
        let select_size = gpu.local_size(&k_select, select_local);
        if select_size != select_local {
            select_local = select_size;
            k_select = build_select(select_local)?;
        }
        // surf.cl's kernels, in this pipeline's own program object with its own buffers.
        let surf = match &surf_program {
            Some(sp) => Some(SurfKernels::new(
                &gpu, sp, &q, &image, &integral, &result, mw, mh, cap, nk,
            )?),
            None => None,
        };
        let groups = (info.compute_units.max(1) as usize * 8).clamp(1, n.max(1));
        let device_bytes = [
            pixels,
            16 * pixels,
            4 * integral_len,
            4 * cand_capacity * KP_WORDS + 8 * cand_capacity,
            4 * result_len,
        ]
        .iter()
        .map(|&b| b as u64)
        .sum();
        let nms_local = gpu.local_size(&k_nms, 256);
        let stage_in = map_staging(&gpu.buffer::<u8>(
            "pinned upload staging",
            pixels,
            MemFlags::new().alloc_host_ptr().read_write(),
        )?)?;
        let stage_out = map_staging(&gpu.buffer::<u32>(
            "pinned readback staging",
            result_len,
            MemFlags::new().alloc_host_ptr().read_write(),
        )?)?;
        Ok(Self {
            gpu,
            config,
            cand_capacity,
            tile_items,
            select_local,
            nms_local,
            groups,
            image,
            response,
            result,
            k_gradients,
            k_response,
            k_nms,
            k_select,
            surf,
            stage_in,
            stage_out,
            read_hint: 256,
            device_bytes,
            last_size: (0, 0),
            last_stats: HarrisFrameStats::default(),
        })
    }

    /// What the pipeline was made for.
    pub fn config(&self) -> &HarrisPipelineConfig {
        &self.config
    }

    /// Device memory held by the pipeline's buffers, bytes.
    pub fn device_bytes(&self) -> u64 {
        self.device_bytes
    }

    /// Size of the candidate buffer (the proven upper bound of candidates per frame).
    pub fn candidate_capacity(&self) -> usize {
        self.cand_capacity
    }

    /// Work-items per work-group of the tile kernels (one per pixel of the output tile).
    pub fn tile_work_items(&self) -> usize {
        self.tile_items
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        format!(
            "{} / {}",
            self.gpu.selected.info.platform, self.gpu.selected.info.name
        )
    }

    /// Max response and threshold of the last frame.
    pub fn last_stats(&self) -> HarrisFrameStats {
        self.last_stats
    }

    fn set_frame_args(&self, w: i32, h: i32) -> Result<(), OpenClError> {
        // Argument positions of the frame width (height follows) in each kernel.
        let mut slots: Vec<(&Kernel, usize)> = vec![
            (&self.k_gradients, 1),
            (&self.k_response, 3),
            (&self.k_nms, 1),
        ];
        if let Some(s) = &self.surf {
            slots.extend([(&s.rows, 2), (&s.cols, 1), (&s.descriptor, 1)]);
        }
        for (k, at) in slots {
            k.set_arg(at, w)
                .and_then(|_| k.set_arg(at + 1, h))
                .map_err(OpenClError::runtime("set kernel arguments"))?;
        }
        Ok(())
    }

    /// Checks a frame size against the pipeline's maximum.
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
        self.set_frame_args(w as i32, h as i32)?;
        let image = input.unwrap_or(&self.image);
        self.k_gradients
            .set_arg(0, image)
            .map_err(OpenClError::runtime("set kernel arguments"))?;
        if let Some(s) = &self.surf {
            s.rows
                .set_arg(0, image)
                .map_err(OpenClError::runtime("set kernel arguments"))?;
        }
        // Only the first kernel waits (the queue is in order).
        let mut wait = Some(wait);
        let mut run = |name: &'static str, kernel: &Kernel, global: usize, local: usize| {
            let mut ev = Event::empty();
            launch_after(kernel, global, local, wait.take().unwrap_or(&[]), &mut ev)?;
            events.push((name, ev));
            Ok::<(), OpenClError>(())
        };
        let tile = self.tile_items;
        let (tile_w, tile_h) = tile_dims(tile);
        let tiles = w.div_ceil(tile_w) * h.div_ceil(tile_h);
        if let Some(s) = &self.surf {
            // integral_rows also clears the result header; harris_gradients clears it again, so
            // the Harris kernels do not depend on it.
            run("integral_rows", &s.rows, h * s.rows_local, s.rows_local)?;
            run(
                "integral_cols",
                &s.cols,
                w.div_ceil(s.col_width) * s.cols_local,
                s.cols_local,
            )?;
        }
        run("harris_gradients", &self.k_gradients, tiles * tile, tile)?;
        run("harris_response", &self.k_response, tiles * tile, tile)?;
        run("harris_nms", &self.k_nms, w * h, self.nms_local)?;
        let bound = (w.div_ceil(3) * h.div_ceil(3)).min(self.cand_capacity);
        run("harris_select", &self.k_select, bound, self.select_local)?;
        if let Some(s) = &self.surf {
            run(
                "descriptor",
                &s.descriptor,
                self.groups * s.descriptor_local,
                s.descriptor_local,
            )?;
        }
        Ok(())
    }

    /// Reads back the header and the kept records (blocking) into the pinned staging buffer and
    /// returns the number of candidates; records the frame's statistics.
    pub(crate) fn read_results(
        &mut self,
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<usize, OpenClError> {
        let n_max = self.config.max_keypoints;
        // One readback of the header and as many records as the last frame had (plus margin);
        // a second one only when this frame has more.
        let guess = self.read_hint.min(n_max);
        read_records(&self.result, &mut self.stage_out, 0, guess, events)?;
        let found = self.stage_out[0] as usize;
        if self.stage_out[1] > 0 || found > self.cand_capacity {
            return Err(OpenClError::CandidateOverflow {
                found,
                capacity: self.cand_capacity,
            });
        }
        let kept = found.min(n_max);
        if kept > guess {
            read_records(&self.result, &mut self.stage_out, guess, kept, events)?;
        }
        self.read_hint = readback_hint(kept, n_max);
        let max_bits = self.stage_out[H_MAX];
        let max_response = f32::from_bits(if max_bits & 0x8000_0000 != 0 {
            max_bits & 0x7fff_ffff
        } else {
            !max_bits
        });
        self.last_stats = HarrisFrameStats {
            max_response,
            threshold: match self.config.harris.threshold {
                HarrisThreshold::Absolute(t) => t,
                HarrisThreshold::Relative(f) => f * max_response,
            },
        };
        Ok(found)
    }

    /// Records the size of the last frame (for [`Self::read_responses`]).
    pub(crate) fn set_last_size(&mut self, w: usize, h: usize) {
        self.last_size = (w, h);
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

    /// Builds a frame's output from a readback of its result buffer (`stage`: the header and
    /// at least the kept records).
    pub(crate) fn output_from(
        &self,
        stage: &[u32],
        found: usize,
        events: &[(&'static str, Event)],
        wall_ms: f64,
    ) -> Result<DetectOutput, OpenClError> {
        // harris.cl writes the record's meta word as 0: octave, interval and Laplacian 0.
        records_output(
            stage,
            found,
            self.config.max_keypoints,
            self.config.describe,
            events,
            wall_ms,
        )
    }

    /// Detects the Harris corners of one frame (strongest first, as the core's `harris::detect`
    /// into a sorted `KeypointBuffer`) and, when configured, their upright SURF-64 descriptors.
    pub fn detect(&mut self, image: &GrayImage<'_>) -> Result<DetectOutput, OpenClError> {
        let (w, h) = (image.width(), image.height());
        self.check_size(w, h)?;
        let t0 = Instant::now();
        let mut events: Vec<(&'static str, Event)> = Vec::with_capacity(10);
        let n = image.pixels().len();
        self.stage_in[..n].copy_from_slice(image.pixels());
        inject::runtime(FaultPoint::Upload, "upload image")?;
        let mut ev = Event::empty();
        self.image
            .write(&self.stage_in[..n])
            .enew(&mut ev)
            .enq()
            .map_err(OpenClError::runtime("upload image"))?;
        events.push(("upload", ev));
        self.enqueue_kernels(None, w, h, &[], &mut events)?;
        let found = self.read_results(&mut events)?;
        self.last_size = (w, h);
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        self.output(found, &events, wall_ms)
    }

    /// The response map `R` of the last frame, row-major (an extra readback; for tests).
    pub fn read_responses(&self) -> Result<Vec<f32>, OpenClError> {
        let (w, h) = self.last_size;
        let mut v = vec![0f32; w * h];
        if !v.is_empty() {
            self.response
                .read(&mut v)
                .enq()
                .map_err(OpenClError::runtime("read Harris responses"))?;
        }
        Ok(v)
    }
}
