//! `surfcl bench`: per-stage and end-to-end timings of the OpenCL pipeline against the CPU
//! backend on real frames, and of the matcher on random descriptors.
//!
//! Frames: the Oxford "boat" image 1 (850x680) resized to fill each requested size (upscaled for
//! 1920x1080) and centre-cropped. The image is `$SURFCL_BENCH_IMAGE` when set, else the
//! checkout's `data/oxford-boat/img1.pgm`; when there is no such file (an installed binary run
//! outside the checkout) or `SURFCL_BENCH_IMAGE=synthetic`, a built-in synthetic frame of the
//! same size is used ([`synthetic_frame`]) and the output says so (`"image": "synthetic"` in the
//! JSON). Per size, after one warm-up frame (kernel compilation and
//! first-touch of buffers), `frames` frames are timed; reported are the medians of every stage's
//! device time (OpenCL profiling events, Sommer's Tables 7.2-7.6 style) and of their sum, from a
//! pipeline with a profiling queue, and of the host wall time of a whole frame (upload, kernels
//! and readback) from a second pipeline without one, as applications run it
//! ([`surfcl_gpu::opencl::set_profiling`]: profiling itself costs time on NVIDIA's OpenCL). The CPU
//! backend runs the same frames in the same process (at most 5 of them beside an OpenCL device;
//! all `frames` without one, as with `--backend cpu`); the ratio is CPU wall / OpenCL wall.
//!
//! Matcher: random unit 64-d descriptors, `n x n` for n in 1024, 4096, 16384 up to the keypoint
//! count the requested sizes call for ([`matcher_sizes`]: n <= the largest frame's pixels / 64,
//! 1024 always); device time of the 2-NN kernel from its event and the wall time of the whole
//! call (uploads, kernel, readback and the host-side decisions); the CPU matcher of the core (one
//! thread) for n <= 4096.
//!
//! Device memory: the SURF pipeline's buffers for each requested size, `f32` and 8-bit packed.
//!
//! Only the sizes asked for run: `--sizes 320x240` measures 320x240 frames, a 320x240 memory
//! table and a 1024 x 1024 matcher.

use std::path::{Path, PathBuf};
#[cfg(feature = "opencl")]
use std::time::Duration;
use std::time::Instant;

use super::output::{JsonOutput, persist_all, stderr_line, stdout_line};

use serde_json::{Value, json};
use surfcl_core::GrayImage;
use surfcl_core::matcher::MatchConfig;
#[cfg(feature = "opencl")]
use surfcl_core::matcher::{Match, TrainBest, match_f32};
#[cfg(feature = "opencl")]
use surfcl_core::surf::{Precision, SurfConfig};
#[cfg(feature = "opencl")]
use surfcl_core::{Descriptor, Keypoint};

use super::{BenchArgs, ImageSize};
use crate::report::json_f32;
use surfcl_core::config::Named;
use surfcl_gpu::Error;
#[cfg(feature = "opencl")]
use surfcl_gpu::backend::DetectorKind;
use surfcl_gpu::backend::{Backend, BackendChoice, DescriptorKind, DetectParams, StageTiming};
use surfcl_gpu::open_backend;
use surfcl_gpu::opencl::OpenClError;
#[cfg(feature = "opencl")]
use surfcl_gpu::opencl::{
    Detector, DetectorConfig, GpuMatcher, StreamPipeline, SurfPipeline, SurfPipelineConfig,
};

/// Where the benchmark frame is looked for: `$SURFCL_BENCH_IMAGE` when set (the value
/// `synthetic` asks for the built-in frame), else the checkout's `data/`, relative to the working
/// directory and to this crate. `None`: use the synthetic frame.
fn bench_image_path() -> Result<Option<PathBuf>, Error> {
    if let Some(p) = std::env::var_os("SURFCL_BENCH_IMAGE") {
        if p == "synthetic" {
            return Ok(None);
        }
        // Asked for by name: a missing file is an error, not a silent substitute.
        let path = PathBuf::from(p);
        crate::io::require_regular_file(&path)?;
        return Ok(Some(path));
    }
    Ok([
        PathBuf::from("data/oxford-boat/img1.pgm"),
        PathBuf::from("img1.pgm"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat/img1.pgm"),
    ]
    .into_iter()
    .find(|p| p.is_file()))
}

/// Size of the built-in synthetic frame (that of the boat image).
pub const SYNTHETIC_SIZE: (u32, u32) = (850, 680);

/// A deterministic synthetic frame of `width x height`: a smooth gradient with a few hundred
/// discs and squares of random size and contrast (xorshift, fixed seed), so that SURF and Harris
/// find blobs and corners at several scales, as in a real picture.
pub fn synthetic_frame(width: u32, height: u32) -> image::GrayImage {
    let mut img = image::GrayImage::from_fn(width, height, |x, y| {
        image::Luma([(64 + (x * 64 / width.max(1)) + (y * 64 / height.max(1))) as u8])
    });
    let mut rng = XorShift(0x5eed_f00d);
    let mut uniform = |lo: f32, hi: f32| lo + (rng.next_f32() * 0.5 + 0.5) * (hi - lo);
    let shapes = (u64::from(width) * u64::from(height) / 1500).max(1);
    for k in 0..shapes {
        let (cx, cy) = (uniform(0.0, width as f32), uniform(0.0, height as f32));
        let r = uniform(2.0, 24.0);
        let value = uniform(0.0, 255.0) as u8;
        let square = k % 3 == 0;
        let (x0, x1) = ((cx - r).max(0.0) as u32, ((cx + r) as u32).min(width));
        let (y0, y1) = ((cy - r).max(0.0) as u32, ((cy + r) as u32).min(height));
        for y in y0..y1 {
            for x in x0..x1 {
                let (dx, dy) = (x as f32 - cx, y as f32 - cy);
                if square || dx * dx + dy * dy <= r * r {
                    img.put_pixel(x, y, image::Luma([value]));
                }
            }
        }
    }
    img
}

/// The benchmark's source frame and its description (a path, or `"synthetic"`).
fn bench_source() -> Result<(image::GrayImage, String), Error> {
    match bench_image_path()? {
        Some(path) => {
            let gray = crate::io::load_gray(&path)?;
            let (w, h) = (gray.width as u32, gray.height as u32);
            let img = image::GrayImage::from_raw(w, h, gray.pixels).ok_or_else(|| {
                Error::Internal(format!("{}: pixel count is not {w}x{h}", path.display()))
            })?;
            Ok((img, path.display().to_string()))
        }
        None => Ok((
            synthetic_frame(SYNTHETIC_SIZE.0, SYNTHETIC_SIZE.1),
            "synthetic".to_string(),
        )),
    }
}

/// The matrix sizes of the matcher benchmark for frames of at most `largest_pixels` pixels
/// (module docs).
pub fn matcher_sizes(largest_pixels: usize) -> Vec<usize> {
    [1024usize, 4096, 16384]
        .into_iter()
        .filter(|&n| n == 1024 || n <= largest_pixels / 64)
        .collect()
}

/// The boat frame resized to fill `width x height` and centre-cropped.
fn frame(source: &image::GrayImage, width: usize, height: usize) -> Vec<u8> {
    let (sw, sh) = (source.width() as f64, source.height() as f64);
    let scale = (width as f64 / sw).max(height as f64 / sh);
    let (rw, rh) = (
        ((sw * scale).ceil() as u32).max(width as u32),
        ((sh * scale).ceil() as u32).max(height as u32),
    );
    let resized = image::imageops::resize(source, rw, rh, image::imageops::FilterType::Triangle);
    let (x0, y0) = ((rw as usize - width) / 2, (rh as usize - height) / 2);
    let mut out = Vec::with_capacity(width * height);
    for y in 0..height {
        for x in 0..width {
            out.push(resized.get_pixel((x0 + x) as u32, (y0 + y) as u32)[0]);
        }
    }
    out
}

/// The median time of every stage over `frames` (each frame's `timings`), as JSON
/// `{"stage", "ms"}` in execution order: an array, not a map, so the order stays. A stage that
/// runs several times in a frame (an OpenCL kernel per octave) counts with the sum of its runs.
fn stage_medians(frames: &[Vec<StageTiming>]) -> Vec<Value> {
    // Every stage of any frame, in the order first seen: some run in a few frames only (the
    // CPU backend's Haar maps while it times them); a frame without a stage counts 0 for it.
    let mut names: Vec<&str> = Vec::new();
    for t in frames.iter().flatten() {
        if !names.contains(&t.name.as_str()) {
            names.push(&t.name);
        }
    }
    names
        .iter()
        .map(|name| {
            let mut per_frame: Vec<f64> = frames
                .iter()
                .map(|timings| {
                    let runs = timings.iter().filter(|t| t.name == *name);
                    runs.map(|t| t.ms).sum()
                })
                .collect();
            json!({"stage": name, "ms": median(&mut per_frame)})
        })
        .collect()
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    }
}

/// A small deterministic generator (xorshift64*), so the benchmark needs no `rand` at run time.
struct XorShift(u64);
impl XorShift {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((v >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

#[cfg(feature = "opencl")]
fn random_unit_descriptors(n: usize, seed: u64) -> Vec<Descriptor> {
    let mut rng = XorShift(seed | 1);
    (0..n)
        .map(|_| {
            let mut d = [0f32; 64];
            for v in d.iter_mut() {
                *v = rng.next_f32();
            }
            let len = d.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            d.iter_mut().for_each(|v| *v /= len);
            d
        })
        .collect()
}

/// Runs `surfcl bench`: prints a table and, with `--json`, writes the numbers.
///
/// `choice` and `device` come from the detection options: with [`BackendChoice::Cpu`] only the
/// CPU rows are measured; with `Auto` a machine without OpenCL also measures only the CPU (and
/// says so); with `OpenCl`, a missing device is an error.
pub fn run(args: &BenchArgs, choice: BackendChoice, device: Option<&str>) -> Result<(), Error> {
    let params = args.detect.params(DescriptorKind::F32)?;
    if args.frames == 0 {
        return Err(Error::InvalidArgument("--frames must be at least 1".into()));
    }
    // Checked (and reserved) before the measurements.
    let json_out = JsonOutput::prepare(args.json.as_deref())?;
    // With the JSON on stdout, the tables go to stderr.
    let json_on_stdout = JsonOutput::is_stdout(json_out.as_ref());
    let say = |text: &str| -> Result<(), Error> {
        if json_on_stdout {
            stderr_line(text);
            Ok(())
        } else {
            stdout_line(text)
        }
    };
    let (source, source_name) = bench_source()?;
    if source_name == "synthetic" {
        say(&format!(
            "note: using a built-in synthetic {}x{} frame (no benchmark image: set SURFCL_BENCH_IMAGE or run from the checkout, data/oxford-boat/img1.pgm)",
            SYNTHETIC_SIZE.0, SYNTHETIC_SIZE.1
        ))?;
    }
    let mut cpu = open_backend(BackendChoice::Cpu, None)?;
    say(&format!(
        "surfcl bench: {} frames per size (+1 warm-up), threshold {}, {} octaves, precision {}, upright {}, image {source_name}",
        args.frames,
        params.surf.threshold,
        params.surf.octaves,
        params.surf.precision.name(),
        params.surf.upright
    ))?;
    let sizes = bench_sizes(&say, args, &source, &params, cpu.as_mut(), choice, device)?;
    // Streams run as applications run them, without profiling, unless `--profile` asks for
    // their device stages.
    surfcl_gpu::opencl::set_profiling(args.detect.profile);
    let tables = if sizes.gpu_available {
        bench_device_tables(&say, args, &source, &params, device)?
    } else {
        DeviceTables::default()
    };
    let report = json!({
        "format_version": crate::report::FORMAT_VERSION,
        "image": source_name,
        "params": crate::report::ParamsJson::new(&params, Some((&MatchConfig::default(), DescriptorKind::F32))),
        "device": sizes.device_name,
        "frames": args.frames,
        "threshold": json_f32::value(params.surf.threshold),
        "octaves": params.surf.octaves,
        "precision": params.surf.precision.name(),
        "upright": params.surf.upright,
        "max_keypoints": params.max_keypoints,
        "sizes": sizes.rows,
        "matcher": tables.matcher,
        "memory": tables.memory,
        "stream": tables.stream,
    });
    if let Some(out) = json_out {
        persist_all(out.write(&report, true)?)?;
    }
    Ok(())
}

/// The per-size rows of the report and what measuring them found out about the device.
struct SizeResults {
    /// One JSON row per requested size: the OpenCL pipeline's and the CPU backend's numbers.
    rows: Vec<Value>,
    /// The OpenCL device's name, `-` when none was measured.
    device_name: String,
    /// Whether an OpenCL device was there to measure (`Auto` falls back to the CPU without one).
    gpu_available: bool,
}

/// Measures every requested size on the OpenCL pipeline (unless `choice` is the CPU) and on the
/// CPU backend `cpu`, printing one table row per size.
fn bench_sizes(
    say: &Say<'_>,
    args: &BenchArgs,
    source: &image::GrayImage,
    params: &DetectParams,
    cpu: &mut dyn Backend,
    choice: BackendChoice,
    device: Option<&str>,
) -> Result<SizeResults, Error> {
    let mut results = SizeResults {
        rows: Vec::new(),
        device_name: String::from("-"),
        gpu_available: choice != BackendChoice::Cpu,
    };
    for size in &args.sizes {
        let (w, h) = (size.width, size.height);
        let pixels = frame(source, w, h);
        let image = GrayImage::new(&pixels, w, h)?;
        let mut row = serde_json::Map::new();
        row.insert("width".into(), json!(w));
        row.insert("height".into(), json!(h));
        let mut gpu_wall = f64::NAN;
        if results.gpu_available {
            match bench_gpu(&image, params, device, args.frames) {
                Ok((name, stats)) => {
                    results.device_name = name;
                    gpu_wall = stats["wall_ms"].as_f64().unwrap_or(f64::NAN);
                    row.insert("opencl".into(), stats);
                }
                Err(e @ (OpenClError::NoPlatform | OpenClError::NotBuilt))
                    if choice == BackendChoice::Auto =>
                {
                    stderr_line(&format!("note: {e}; measuring the CPU backend only"));
                    results.gpu_available = false;
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Beside an OpenCL device the CPU is the reference, and at most 5 frames of it keep
        // the run short (still a median); without one (`--backend cpu`, or `auto` on a machine
        // without OpenCL) it is what is measured, and gets every frame asked for.
        let cpu_frames = if results.gpu_available {
            args.frames.clamp(1, CPU_REFERENCE_FRAMES)
        } else {
            args.frames
        };
        let (cpu_wall, cpu_stats) = bench_cpu(cpu, &image, params, cpu_frames)?;
        row.insert("cpu".into(), cpu_stats);
        row.insert("cpu_over_opencl".into(), json!(cpu_wall / gpu_wall));
        print_size_row(say, w, h, &row, cpu_wall, gpu_wall)?;
        results.rows.push(Value::Object(row));
    }
    Ok(results)
}

/// Most frames timed of the CPU backend when it is the reference of an OpenCL device.
const CPU_REFERENCE_FRAMES: usize = 5;

/// Times `frames` frames of the CPU backend after one warm-up: the median wall time in ms, and
/// the report's `cpu` entry (device, frames, wall, keypoints, median stage times).
fn bench_cpu(
    cpu: &mut dyn Backend,
    image: &GrayImage<'_>,
    params: &DetectParams,
    frames: usize,
) -> Result<(f64, Value), Error> {
    // Frame after frame into the same arrays, as a stream detects.
    let mut f = cpu.detect(image, params)?; // warm-up (buffers)
    let mut walls = Vec::with_capacity(frames);
    let mut kps = 0;
    let mut frame_timings = Vec::with_capacity(frames);
    for _ in 0..frames {
        let t = Instant::now();
        cpu.detect_into(image, params, &mut f)?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
        kps = f.keypoints.len();
        frame_timings.push(f.timings.clone());
    }
    let cpu_wall = median(&mut walls);
    let stages = stage_medians(&frame_timings);
    let stats = json!({"device": cpu.device(), "frames": frames, "wall_ms": cpu_wall,
                       "keypoints": kps, "stages_ms": stages});
    Ok((cpu_wall, stats))
}

/// The report's device-only tables; empty where no OpenCL device was measured.
#[derive(Default)]
struct DeviceTables {
    /// Detect + describe + match streams per size (`--stream` only).
    stream: Vec<Value>,
    /// The SURF pipeline's device memory per size.
    memory: Vec<Value>,
    /// The GPU matcher against the core's CPU matcher per descriptor count.
    matcher: Vec<Value>,
}

/// Measures the streams (with `--stream`), the pipeline's device memory and the matcher, each
/// printing its table.
fn bench_device_tables(
    say: &Say<'_>,
    args: &BenchArgs,
    source: &image::GrayImage,
    params: &DetectParams,
    device: Option<&str>,
) -> Result<DeviceTables, Error> {
    let stream = if args.stream {
        say(
            "\nstream (detect + describe + match to the previous frame on the device, f32 descriptors)",
        )?;
        bench_streams(
            say,
            source,
            &args.sizes,
            params,
            device,
            args.frames.max(100),
        )?
    } else {
        Vec::new()
    };
    let memory = bench_memory(say, &args.sizes, params, device)?;
    let largest = args
        .sizes
        .iter()
        .map(|s| s.width * s.height)
        .max()
        .unwrap_or(0);
    let matcher = bench_matcher(say, &matcher_sizes(largest), device)?;
    Ok(DeviceTables {
        stream,
        memory,
        matcher,
    })
}

/// Where the tables go: stdout, or stderr when stdout carries the JSON.
type Say<'a> = dyn Fn(&str) -> Result<(), Error> + 'a;

fn print_size_row(
    say: &Say<'_>,
    w: usize,
    h: usize,
    row: &serde_json::Map<String, Value>,
    cpu: f64,
    gpu: f64,
) -> Result<(), Error> {
    say(&format!("\n{w}x{h}"))?;
    if let Some(g) = row.get("opencl") {
        say(&format!(
            "  OpenCL {}: {} keypoints, {:.1} MiB device memory",
            g["device"].as_str().unwrap_or("-"),
            g["keypoints"],
            g["device_bytes"].as_f64().unwrap_or(0.0) / (1024.0 * 1024.0)
        ))?;
        if let Some(stages) = g["stages_ms"].as_array() {
            for s in stages {
                let name = s["stage"].as_str().unwrap_or("-");
                say(&format!(
                    "    {name:<16} {:>9.3} ms",
                    s["ms"].as_f64().unwrap_or(f64::NAN)
                ))?;
            }
        }
        say(&format!(
            "    {:<16} {:>9.3} ms (sum of device stages)",
            "device total",
            g["device_total_ms"].as_f64().unwrap_or(f64::NAN)
        ))?;
        say(&format!(
            "    {:<16} {gpu:>9.3} ms (host wall: upload + kernels + readback)",
            "end to end"
        ))?;
        say(&format!(
            "    {:<16} {:>9.3} ms (the same, the frame in the detector's pinned input area)",
            "pinned input",
            g["wall_pinned_input_ms"].as_f64().unwrap_or(f64::NAN)
        ))?;
    }
    say(&format!("  CPU backend:          {cpu:>9.3} ms"))?;
    if let Some(stages) = row.get("cpu").and_then(|c| c["stages_ms"].as_array()) {
        for s in stages {
            say(&format!(
                "    {:<16} {:>9.3} ms",
                s["stage"].as_str().unwrap_or("-"),
                s["ms"].as_f64().unwrap_or(f64::NAN)
            ))?;
        }
    }
    if gpu.is_finite() {
        say(&format!("  CPU / OpenCL:         {:>9.2}x", cpu / gpu))?;
    }
    Ok(())
}

/// Runs the pipeline on one frame size; returns the device name and the medians as JSON.
#[cfg(feature = "opencl")]
fn bench_gpu(
    image: &GrayImage<'_>,
    params: &DetectParams,
    device: Option<&str>,
    frames: usize,
) -> Result<(String, Value), OpenClError> {
    let config = DetectorConfig::for_params(params, image.width(), image.height());
    // Two passes: the device stages from a profiling queue, then the end-to-end time from a
    // pipeline without profiling, as applications run it (`opencl::set_profiling`).
    let restore = surfcl_gpu::opencl::profiling();
    surfcl_gpu::opencl::set_profiling(true);
    let profiled = Detector::open(device, config);
    surfcl_gpu::opencl::set_profiling(false);
    let plain = Detector::open(device, config);
    surfcl_gpu::opencl::set_profiling(restore);
    let (mut profiled, mut pipeline) = (profiled?, plain?);
    let warm = profiled.detect(image)?;
    let mut frame_timings = Vec::with_capacity(frames);
    let mut totals = Vec::with_capacity(frames);
    for _ in 0..frames {
        let out = profiled.detect(image)?;
        totals.push(out.timings.iter().map(|t| t.ms).sum());
        frame_timings.push(out.timings);
    }
    drop(profiled);
    let mut walls = Vec::with_capacity(frames);
    let mut keypoints = pipeline.detect(image)?.keypoints.len();
    for _ in 0..frames {
        let out = pipeline.detect(image)?;
        keypoints = out.keypoints.len();
        walls.push(out.wall_ms);
    }
    // The same frames written into the detector's pinned input area (as a camera driver that
    // decodes into it would): the upload is then a DMA instead of the driver's copy of
    // pageable memory. The copy into the area is the caller's, not timed.
    pipeline
        .input_buffer(image.width(), image.height())?
        .copy_from_slice(image.pixels());
    pipeline.detect_input(image.width(), image.height())?;
    let mut walls_pinned = Vec::with_capacity(frames);
    for _ in 0..frames {
        walls_pinned.push(
            pipeline
                .detect_input(image.width(), image.height())?
                .wall_ms,
        );
    }
    let stages = stage_medians(&frame_timings);
    let name = pipeline.device_name();
    Ok((
        name.clone(),
        json!({
            "device": name,
            "keypoints": keypoints,
            "candidates": warm.candidates,
            "device_bytes": pipeline.device_bytes(),
            "stages_ms": stages,
            "device_total_ms": median(&mut totals),
            "wall_ms": median(&mut walls),
            "wall_pinned_input_ms": median(&mut walls_pinned),
        }),
    ))
}

/// The matcher benchmark (module docs).
#[cfg(feature = "opencl")]
fn bench_matcher(
    say: &Say<'_>,
    sizes: &[usize],
    device: Option<&str>,
) -> Result<Vec<Value>, Error> {
    // The matcher's device time comes from its events.
    surfcl_gpu::opencl::set_profiling(true);
    let mut matcher = GpuMatcher::open(device)?;
    let config = MatchConfig::default();
    let mut rows = Vec::new();
    say("\nmatcher (random unit 64-d descriptors, f32, ratio 0.8, sign test on)")?;
    for &n in sizes {
        let query = random_unit_descriptors(n, 1 + n as u64);
        let train = random_unit_descriptors(n, 7 + n as u64);
        let kps: Vec<Keypoint> = (0..n)
            .map(|i| Keypoint {
                laplacian: if i % 2 == 0 { 1 } else { -1 },
                ..Keypoint::default()
            })
            .collect();
        let runs = if n >= 16384 { 3 } else { 5 };
        let mut kernel = Vec::new();
        let mut walls = Vec::new();
        let mut count = 0;
        for _ in 0..=runs {
            let mut t = surfcl_gpu::opencl::MatchTimings::default();
            let m = matcher.match_f32(&kps, &query, &kps, &train, &config, &mut t)?;
            count = m.len();
            kernel.push(
                t.stages
                    .iter()
                    .filter(|s| s.name.starts_with("match"))
                    .map(|s| s.ms)
                    .sum::<f64>(),
            );
            walls.push(t.wall_ms);
        }
        // The first call allocates buffers and warms up: drop it.
        let (kernel_ms, wall_ms) = (median(&mut kernel[1..]), median(&mut walls[1..]));
        let cpu_ms = if n <= 4096 {
            let mut best = vec![TrainBest::EMPTY; 0];
            let mut out = vec![Match::default(); n];
            let t = Instant::now();
            match_f32(&kps, &query, &kps, &train, &config, &mut best, &mut out)?;
            Some(t.elapsed().as_secs_f64() * 1e3)
        } else {
            None
        };
        say(&format!(
            "  {n:>5} x {n:<5} device {kernel_ms:>9.3} ms, end to end {wall_ms:>9.3} ms, CPU (1 thread) {}, {count} matches",
            cpu_ms.map_or("-".to_string(), |c| format!("{c:.3} ms"))
        ))?;
        rows.push(json!({"n": n, "device_ms": kernel_ms, "wall_ms": wall_ms, "cpu_ms": cpu_ms, "matches": count}));
    }
    Ok(rows)
}

/// A percentile (nearest rank) of `values`, which it sorts.
#[cfg(feature = "opencl")]
fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// `surfcl bench --stream`: `frames` distinct frames (the boat frame shifted by a few pixels per
/// frame, so consecutive frames really match) through a [`StreamPipeline`]; frames per second
/// over the whole run and the per-frame latency percentiles (from the start of a frame's upload
/// to its matches), after a warm-up of at least 5 frames and 300 ms.
#[cfg(feature = "opencl")]
fn bench_stream(
    say: &Say<'_>,
    source: &image::GrayImage,
    (w, h): (usize, usize),
    detector: DetectorConfig,
    device: Option<&str>,
    frames: usize,
) -> Result<Value, Error> {
    let label = match detector {
        DetectorConfig::Surf(_) => "surf",
        DetectorConfig::Harris(_) => "harris",
    };
    const SHIFT: usize = 16;
    let big = frame(source, w + SHIFT, h + SHIFT);
    let crops: Vec<Vec<u8>> = (0..SHIFT)
        .map(|k| {
            let (dx, dy) = (k, (k * 7) % SHIFT);
            let mut out = Vec::with_capacity(w * h);
            for y in 0..h {
                let row = (y + dy) * (w + SHIFT) + dx;
                out.extend_from_slice(&big[row..row + w]);
            }
            out
        })
        .collect();
    let images: Vec<GrayImage<'_>> = crops
        .iter()
        .map(|c| GrayImage::new(c, w, h))
        .collect::<Result<_, _>>()?;
    let mut stream = StreamPipeline::open_detector(device, detector, MatchConfig::default())?;
    let profiled = surfcl_gpu::opencl::profiling();
    // Warm-up: at least 5 frames and 300 ms of streaming. A GPU that was idle raises its clocks
    // over the first tens of milliseconds of work, and frames timed before that inflate the
    // tail latencies of the first run of a process (docs/BENCHMARKS.md has the figures).
    const WARM_FRAMES: usize = 5;
    const WARM_TIME: Duration = Duration::from_millis(300);
    let sequence = (0..).map(|k| images[k % images.len()]);
    let mut latencies = Vec::with_capacity(frames);
    let mut matches = Vec::with_capacity(frames);
    let mut keypoints = Vec::with_capacity(frames);
    let mut stages: Vec<(String, Vec<f64>)> = Vec::new();
    let mut error: Option<OpenClError> = None;
    let started = Instant::now();
    let mut warm_until: Option<usize> = None;
    let mut t0 = Instant::now();
    stream.run(sequence, |i, r| match r {
        Ok(f) => {
            let Some(warm) = warm_until else {
                if i + 1 >= WARM_FRAMES && started.elapsed() >= WARM_TIME {
                    warm_until = Some(i + 1);
                    t0 = Instant::now();
                }
                return true;
            };
            if i >= warm {
                latencies.push(f.latency_ms);
                for t in &f.timings {
                    match stages.iter_mut().find(|(n, _)| *n == t.name) {
                        Some((_, v)) => v.push(t.ms),
                        None => stages.push((t.name.clone(), vec![t.ms])),
                    }
                }
                matches.push(f.matches.len() as f64);
                keypoints.push(f.keypoints.len() as f64);
            }
            latencies.len() < frames
        }
        Err(e) => {
            error = Some(e);
            false
        }
    });
    if let Some(e) = error {
        return Err(e.into());
    }
    let total = t0.elapsed().as_secs_f64();
    let fps = latencies.len() as f64 / total;
    let (p50, p99) = (
        percentile(&mut latencies, 50.0),
        percentile(&mut latencies, 99.0),
    );
    let (kps, m) = (median(&mut keypoints), median(&mut matches));
    say(&format!(
        "  {label:<6} {w}x{h}: {fps:>8.1} frames/s, latency p50 {p50:.3} ms, p99 {p99:.3} ms ({frames} frames, median {kps} keypoints, {m} matches to the previous frame), {:.1} MiB device memory",
        stream.device_bytes() as f64 / (1024.0 * 1024.0)
    ))?;
    let stage_ms: Vec<Value> = stages
        .iter_mut()
        .map(|(name, v)| json!({"stage": name, "ms": median(v)}))
        .collect();
    let stage_list = if profiled {
        stage_ms
            .iter()
            .map(|v| {
                format!(
                    "{} {:.3}",
                    v["stage"].as_str().unwrap_or("-"),
                    v["ms"].as_f64().unwrap_or(f64::NAN)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        "not recorded (`surfcl bench --profile`; profiling slows streams down)".to_string()
    };
    say(&format!("    device stages (median ms): {stage_list}"))?;
    Ok(json!({
        "detector": label, "width": w, "height": h, "frames": frames, "fps": fps, "stages_ms": stage_ms,
        "latency_p50_ms": p50, "latency_p99_ms": p99,
        "keypoints_median": kps, "matches_median": m,
        "device_bytes": stream.device_bytes(),
    }))
}

/// Device memory of the pipeline per buffer, for each requested size, `f32` and 8-bit packed
/// responses, 4096 keypoints (the other parameters as given).
#[cfg(feature = "opencl")]
fn bench_memory(
    say: &Say<'_>,
    sizes: &[ImageSize],
    params: &DetectParams,
    device: Option<&str>,
) -> Result<Vec<Value>, Error> {
    say(&format!(
        "\ndevice memory (SURF pipeline, 4096 keypoints, {} octaves)",
        params.surf.octaves
    ))?;
    let mut rows = Vec::new();
    for (w, h) in sizes.iter().map(|s| (s.width, s.height)) {
        for precision in [Precision::F32, Precision::Packed8] {
            let pipeline = SurfPipeline::open(
                device,
                SurfPipelineConfig {
                    max_width: w,
                    max_height: h,
                    surf: SurfConfig {
                        precision,
                        ..params.surf
                    },
                    max_keypoints: 4096,
                    local_size: None,
                },
            )?;
            let total = pipeline.device_bytes();
            let parts = pipeline.device_memory();
            let detail: Vec<String> = parts
                .iter()
                .map(|(what, b)| format!("{what} {:.2}", *b as f64 / (1024.0 * 1024.0)))
                .collect();
            say(&format!(
                "  {w}x{h} {}: {:.2} MiB ({})",
                precision.name(),
                total as f64 / (1024.0 * 1024.0),
                detail.join(", ")
            ))?;
            rows.push(json!({
                "width": w, "height": h, "precision": precision.name(),
                "device_bytes": total,
                "buffers": parts.iter().map(|(what, b)| json!({"buffer": what, "bytes": b})).collect::<Vec<_>>(),
            }));
        }
    }
    Ok(rows)
}

/// [`bench_stream`] for SURF and Harris at every size.
#[cfg(feature = "opencl")]
fn bench_streams(
    say: &Say<'_>,
    source: &image::GrayImage,
    sizes: &[ImageSize],
    params: &DetectParams,
    device: Option<&str>,
    frames: usize,
) -> Result<Vec<Value>, Error> {
    let mut rows = Vec::new();
    for kind in [DetectorKind::Surf, DetectorKind::Harris] {
        for size in sizes {
            let (w, h) = (size.width, size.height);
            let detector = DetectorConfig::for_params(
                &DetectParams {
                    detector: kind,
                    ..*params
                },
                w,
                h,
            );
            rows.push(bench_stream(say, source, (w, h), detector, device, frames)?);
        }
    }
    Ok(rows)
}

/// The OpenCL measurements of a build without the OpenCL backend: each answers the runtime's
/// error that says so (`run` measures the CPU alone then, or fails for `--backend opencl`).
#[cfg(not(feature = "opencl"))]
fn bench_gpu(
    _image: &GrayImage<'_>,
    _params: &DetectParams,
    _device: Option<&str>,
    _frames: usize,
) -> Result<(String, Value), OpenClError> {
    Err(OpenClError::NotBuilt)
}

/// See the other `bench_gpu` stub.
#[cfg(not(feature = "opencl"))]
fn bench_streams(
    _say: &Say<'_>,
    _source: &image::GrayImage,
    _sizes: &[ImageSize],
    _params: &DetectParams,
    _device: Option<&str>,
    _frames: usize,
) -> Result<Vec<Value>, Error> {
    Err(OpenClError::NotBuilt.into())
}

/// See the `bench_gpu` stub.
#[cfg(not(feature = "opencl"))]
fn bench_memory(
    _say: &Say<'_>,
    _sizes: &[ImageSize],
    _params: &DetectParams,
    _device: Option<&str>,
) -> Result<Vec<Value>, Error> {
    Err(OpenClError::NotBuilt.into())
}

/// See the `bench_gpu` stub.
#[cfg(not(feature = "opencl"))]
fn bench_matcher(
    _say: &Say<'_>,
    _sizes: &[usize],
    _device: Option<&str>,
) -> Result<Vec<Value>, Error> {
    Err(OpenClError::NotBuilt.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matcher_sizes_follow_the_largest_frame() {
        assert_eq!(matcher_sizes(320 * 240), vec![1024]);
        assert_eq!(matcher_sizes(640 * 480), vec![1024, 4096]);
        assert_eq!(matcher_sizes(1920 * 1080), vec![1024, 4096, 16384]);
        assert_eq!(matcher_sizes(0), vec![1024]);
    }

    #[test]
    fn synthetic_frame_is_deterministic_and_has_keypoints() {
        let (w, h) = SYNTHETIC_SIZE;
        let a = synthetic_frame(w, h);
        assert_eq!(a, synthetic_frame(w, h));
        assert_eq!(a.dimensions(), (w, h));
        let params = DetectParams {
            detector: surfcl_gpu::backend::DetectorKind::Surf,
            surf: surfcl_core::surf::SurfConfig::default(),
            harris: surfcl_core::harris::HarrisConfig::default(),
            max_keypoints: 10_000,
            descriptor: DescriptorKind::F32,
        };
        let image = GrayImage::new(a.as_raw(), w as usize, h as usize).unwrap();
        let mut cpu = open_backend(BackendChoice::Cpu, None).unwrap();
        let n = cpu.detect(&image, &params).unwrap().keypoints.len();
        // The boat frame gives about 2200 at these settings.
        assert!(n > 300, "{n} keypoints on the synthetic frame");
    }
}
