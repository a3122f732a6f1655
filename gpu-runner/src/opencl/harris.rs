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
//! 4. the strongest-N selection shared with SURF (`strongest.rs`: a merge sort of the 64-bit
//!    `Keypoint::rank_cmp` keys); the strongest `max_keypoints` land in the result, sorted;
//! 5. from `kernels/surf.cl` (built into this pipeline's own program object): `integral_band_sums`,
//!    `integral_bands` (the integral image the descriptor samples, `frame::IntegralKernels`) and
//!    `descriptor` (upright).
//!
//! The upload, readback and output are the shared plumbing of `frame.rs`.
//!
//! Two kept pixels are never within each other's 5x5 window (each would have to beat the other),
//! so kept pixels are at least 3 apart on some axis and a frame has at most
//! `ceil(W/3) * ceil(H/3)` candidates: the candidate buffer holds that many, so the result never
//! depends on the order in which work-items append.

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Kernel};
use surfcl_core::GrayImage;
use surfcl_core::harris::{HarrisConfig, HarrisThreshold, NORM};

use super::descriptor::{DESCRIPTOR_WORK_ITEMS, descriptor_kernel};
use super::device::select;
use super::device_info::DeviceInfo;
use super::enqueue::launch_after;
use super::error::OpenClError;
use super::frame::{
    DetectOutput, DetectorKernels, DetectorSetup, Events, FrameIo, Launch, run_frame,
};
use super::gpu::Gpu;
use super::integral::{INTEGRAL_DEFINES, IntegralKernels};
use super::record::{Header, KP_WORDS};
use super::strongest::{self, StrongestN};

const HARRIS_CL: &str = include_str!("../../kernels/harris.cl");
const SURF_CL: &str = include_str!("../../kernels/surf.cl");

/// Widest output tile (work-items along x of a work-group): 32 `int`s are a 128-byte row, one
/// coalesced transaction on NVIDIA GPUs.
const MAX_TILE_W: usize = 32;

/// Tile `(width, height)` of a work-group of `items` work-items (a power of two).
fn tile_dims(items: usize) -> (usize, usize) {
    let w = items.min(MAX_TILE_W);
    (w, items / w)
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

impl DetectorSetup for HarrisPipelineConfig {
    fn open(&self, gpu: Gpu) -> Result<Box<dyn DetectorKernels>, OpenClError> {
        Ok(Box::new(HarrisPipeline::new(gpu, *self)?))
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

/// surf.cl's kernels that describe the corners: the integral image they sample and the upright
/// descriptor.
#[derive(Debug)]
struct Describe {
    integral: Buffer<u32>,
    kernels: IntegralKernels,
    descriptor: Kernel,
    descriptor_local: usize,
}

impl Describe {
    /// surf.cl's integral and descriptor kernels for `io`'s frames and `cand_capacity`
    /// candidates, in a program object of their own with their own integral image.
    fn new(gpu: &Gpu, io: &FrameIo, cand_capacity: usize) -> Result<Self, OpenClError> {
        let program = gpu.program("surf.cl", SURF_CL, &INTEGRAL_DEFINES)?;
        let integral = gpu.buffer::<u32>(
            "integral image",
            (io.max_width + 1) * (io.max_height + 1),
            MemFlags::new().read_write(),
        )?;
        let kernels = IntegralKernels::new(gpu, &program, io, &integral, None)?;
        let descriptor = descriptor_kernel(gpu, &program, io, &integral, cand_capacity, true)?;
        Ok(Self {
            descriptor_local: gpu.local_size(&descriptor, DESCRIPTOR_WORK_ITEMS),
            integral,
            kernels,
            descriptor,
        })
    }
}

/// Work-items per tile of the tile kernels: a power of two (the max reduction halves), at most
/// what is `wanted` (256 when `None`), the device allows and its local memory holds for a
/// window of radius `r`.
fn tile_items(info: &DeviceInfo, wanted: Option<usize>, r: usize) -> Result<usize, OpenClError> {
    let local_mem = info.local_mem_bytes;
    let wanted = wanted.unwrap_or(256).min(info.max_work_group_size.max(1));
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
    Ok(items)
}

/// The Harris pipeline for one device, frame size limit, configuration and capacity.
#[derive(Debug)]
pub struct HarrisPipeline {
    io: FrameIo,
    config: HarrisPipelineConfig,
    tile_items: usize,
    nms_local: usize,
    response: Buffer<f32>,
    k_gradients: Kernel,
    k_response: Kernel,
    k_nms: Kernel,
    select: StrongestN,
    describe: Option<Describe>,
    last_stats: HarrisFrameStats,
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
    /// Makes a pipeline on the device chosen by `spec` (an index or a name substring, see
    /// `opencl::open`).
    pub fn open(spec: Option<&str>, config: HarrisPipelineConfig) -> Result<Self, OpenClError> {
        Self::new(Gpu::new(select(spec)?)?, config)
    }

    /// Makes a pipeline on an existing context/queue.
    pub(crate) fn new(gpu: Gpu, config: HarrisPipelineConfig) -> Result<Self, OpenClError> {
        let harris = config.harris;
        harris
            .validate()
            .map_err(|e| OpenClError::Unsupported(format!("Harris configuration: {e}")))?;
        let (mw, mh, n) = (config.max_width, config.max_height, config.max_keypoints);
        let mut io = FrameIo::new(gpu.clone(), mw, mh, n, config.describe)?;
        let info = &gpu.selected.info;
        let r = harris.window / 2;
        let mut items = tile_items(info, config.local_size, r)?;

        let pixels = mw * mh;
        let cand_capacity = (mw.div_ceil(3) * mh.div_ceil(3)).max(1);
        let rw = MemFlags::new().read_write();
        let pxx = gpu.buffer::<i32>("Harris products xx", pixels, rw)?;
        let pyy = gpu.buffer::<i32>("Harris products yy", pixels, rw)?;
        let pxy = gpu.buffer::<i32>("Harris products xy", pixels, rw)?;
        let response = gpu.buffer::<f32>("Harris responses", pixels, rw)?;
        let cand = gpu.buffer::<u32>("candidates", cand_capacity * KP_WORDS, rw)?;
        let keys = gpu.buffer::<u64>("candidate keys", cand_capacity, rw)?;
        let err = OpenClError::runtime;
        let (w0, h0) = (mw as i32, mh as i32);
        let cap = cand_capacity as u32;
        let result = &io.result;
        // Rebuild with a smaller tile when a kernel allows fewer work-items than the tile has
        // (the tile size is compiled in: it sizes the local arrays).
        let (program, k_gradients, k_response, tile_items) = loop {
            let (tile_w, tile_h) = tile_dims(items);
            let defines = [("TILE_W", tile_w), ("TILE_H", tile_h), ("WIN_R", r)];
            let program = gpu.program("harris.cl", HARRIS_CL, &defines)?;
            let k_gradients = gpu
                .kernel(&program, "harris_gradients")
                .arg(&io.image)
                .arg(w0)
                .arg(h0)
                .arg(&pxx)
                .arg(&pyy)
                .arg(&pxy)
                .arg(result)
                .build()
                .map_err(err("kernel harris_gradients"))?;
            let k_response = gpu
                .kernel(&program, "harris_response")
                .arg(&pxx)
                .arg(&pyy)
                .arg(&pxy)
                .arg(w0)
                .arg(h0)
                .arg(harris.k)
                .arg(NORM)
                .arg(&response)
                .arg(result)
                .build()
                .map_err(err("kernel harris_response"))?;
            let fits = gpu.local_size(&k_gradients, items) == items
                && gpu.local_size(&k_response, items) == items;
            if fits || items == 1 {
                break (program, k_gradients, k_response, items);
            }
            items /= 2;
        };
        let (mode, thr) = match harris.threshold {
            HarrisThreshold::Absolute(t) => (0i32, t),
            HarrisThreshold::Relative(f) => (1i32, f),
        };
        let k_nms = gpu
            .kernel(&program, "harris_nms")
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
            .arg(result)
            .build()
            .map_err(err("kernel harris_nms"))?;
        let select = StrongestN::new(&gpu, &io, &cand, &keys, cand_capacity, config.local_size)?;
        // surf.cl's kernels, in this pipeline's own program object with its own buffers.
        let describe = if config.describe {
            Some(Describe::new(&gpu, &io, cand_capacity)?)
        } else {
            None
        };
        io.descriptor_groups = (info.compute_units.max(1) as usize * 8).clamp(1, n.max(1));
        let integral_len = describe.as_ref().map_or(1, |d| d.integral.len());
        let band_sum_bytes = describe.as_ref().map_or(0, |d| d.kernels.device_bytes());
        io.device_bytes = [
            pixels,
            16 * pixels,
            4 * integral_len,
            band_sum_bytes as usize,
            (4 * KP_WORDS + 8 + strongest::BYTES_PER_CANDIDATE) * cand_capacity,
            4 * result.len(),
        ]
        .iter()
        .map(|&b| b as u64)
        .sum();
        let nms_local = gpu.local_size(&k_nms, 256);
        io.candidate_capacity = cand_capacity;
        Ok(Self {
            io,
            config,
            tile_items,
            nms_local,
            response,
            k_gradients,
            k_response,
            k_nms,
            select,
            describe,
            last_stats: HarrisFrameStats::default(),
        })
    }

    /// What the pipeline was made for.
    pub fn config(&self) -> &HarrisPipelineConfig {
        &self.config
    }

    /// Device memory held by the pipeline's buffers, bytes.
    pub fn device_bytes(&self) -> u64 {
        self.io.device_bytes
    }

    /// Size of the candidate buffer (the proven upper bound of candidates per frame).
    pub fn candidate_capacity(&self) -> usize {
        self.io.candidate_capacity
    }

    /// Work-items per work-group of the tile kernels (one per pixel of the output tile).
    pub fn tile_work_items(&self) -> usize {
        self.tile_items
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        self.io.gpu.name()
    }

    /// Max response and threshold of the last frame.
    pub fn last_stats(&self) -> HarrisFrameStats {
        self.last_stats
    }

    /// Detects the Harris corners of one frame (strongest first, as the core's `harris::detect`
    /// into a sorted `KeypointBuffer`) and, when configured, their upright SURF-64 descriptors.
    pub fn detect(&mut self, image: &GrayImage<'_>) -> Result<DetectOutput, OpenClError> {
        run_frame(self, image)
    }

    /// The response map `R` of the last frame, row-major (an extra readback; for tests).
    pub fn read_responses(&self) -> Result<Vec<f32>, OpenClError> {
        let (w, h) = self.io.last_size;
        let mut v = vec![0f32; w * h];
        if !v.is_empty() {
            self.response
                .read(&mut v)
                .enq()
                .map_err(OpenClError::runtime("read Harris responses"))?;
        }
        Ok(v)
    }

    fn set_frame_args(&self, image: &Buffer<u8>, w: i32, h: i32) -> Result<(), OpenClError> {
        if let Some(d) = &self.describe {
            d.kernels.set_frame(image, w, h)?;
        }
        self.k_gradients
            .set_arg(0, image)
            .map_err(OpenClError::runtime("set kernel arguments"))?;
        // Argument positions of the frame width (height follows) in each kernel.
        let mut slots: Vec<(&Kernel, usize)> = vec![
            (&self.k_gradients, 1),
            (&self.k_response, 3),
            (&self.k_nms, 1),
        ];
        if let Some(d) = &self.describe {
            slots.push((&d.descriptor, 1));
        }
        for (k, at) in slots {
            k.set_arg(at, w)
                .and_then(|_| k.set_arg(at + 1, h))
                .map_err(OpenClError::runtime("set kernel arguments"))?;
        }
        Ok(())
    }
}

impl DetectorKernels for HarrisPipeline {
    fn io(&self) -> &FrameIo {
        &self.io
    }

    fn enqueue(&mut self, frame: Launch<'_>, events: &mut Events) -> Result<(), OpenClError> {
        let (w, h) = (frame.width, frame.height);
        self.set_frame_args(frame.input.unwrap_or(&self.io.image), w as i32, h as i32)?;
        self.io.split_done = None;
        // Only the first kernel waits (the queue is in order).
        let mut wait = Some(frame.wait);
        if let Some(d) = &self.describe {
            // integral_band_sums also clears the result header; harris_gradients clears it again, so
            // the Harris kernels do not depend on it.
            d.kernels
                .enqueue(w, h, wait.take().unwrap_or(&[]), events)?;
        }
        let mut run = |name: &'static str, kernel: &Kernel, global: usize, local: usize| {
            let mut ev = Event::empty();
            launch_after(kernel, global, local, wait.take().unwrap_or(&[]), &mut ev)?;
            events.push((name, ev));
            Ok::<(), OpenClError>(())
        };
        let tile = self.tile_items;
        let (tile_w, tile_h) = tile_dims(tile);
        let tiles = w.div_ceil(tile_w) * h.div_ceil(tile_h);
        run("harris_gradients", &self.k_gradients, tiles * tile, tile)?;
        run("harris_response", &self.k_response, tiles * tile, tile)?;
        run("harris_nms", &self.k_nms, w * h, self.nms_local)?;
        let bound = (w.div_ceil(3) * h.div_ceil(3)).min(self.io.candidate_capacity);
        let expected = self.io.last_candidates;
        self.select.enqueue(bound, expected, events)?;
        if let Some(d) = &self.describe {
            self.io
                .describe(&d.descriptor, d.descriptor_local, frame.split, events)?;
        }
        Ok(())
    }

    fn accept(&mut self, header: Header<'_>) -> Result<bool, OpenClError> {
        // The candidate buffer holds the proven bound (module docs): an overflow is a bug.
        if let Some(found) = self.io.candidates_overflow(header) {
            return Err(OpenClError::CandidateOverflow {
                found,
                capacity: self.io.candidate_capacity,
            });
        }
        let max_response = header.max_response();
        self.last_stats = HarrisFrameStats {
            max_response,
            threshold: match self.config.harris.threshold {
                HarrisThreshold::Absolute(t) => t,
                HarrisThreshold::Relative(f) => f * max_response,
            },
        };
        Ok(true)
    }

    fn io_mut(&mut self) -> &mut FrameIo {
        &mut self.io
    }
}
