//! `surfcl stream DIR|FRAMES... [--max-size WxH] [--json FILE|-] [detect/match options]`:
//! SURF or Harris (`--detector`) on a sequence of frames, each frame matched against the previous
//! good one (query: this frame, train: the previous good frame; f32 descriptors). One line (and
//! one JSON object) per frame; a frame that cannot be read or processed (unreadable, not a
//! regular file, larger than the stream's maximum size) is reported and skipped, and the stream
//! goes on.
//!
//! Backends (`--backend`): `opencl` runs the [`StreamPipeline`] (the next frame is uploaded and
//! its kernels queued while the host finishes the current one); `cpu` runs the CPU reference
//! backend frame by frame, with the same rows and JSON; `auto` takes OpenCL on a GPU or an
//! accelerator and the CPU backend otherwise (with a note on stderr), as `open_backend` does
//! (`surfcl_gpu::explain_auto`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use indicatif::ProgressBar;

use super::args::{DetectOptions, ImageSize, MatchOptions};
use super::output::{Human, JsonOutput, OutputFile, persist_all, stderr_line};
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{Descriptor, Keypoint};

use crate::io::{OwnedGray, load_gray};
use crate::npz::{self, Npz};
use crate::report::{
    FORMAT_VERSION, KeypointJson, MatchJson, ParamsJson, StreamFrameJson, StreamReport,
};
use surfcl_core::config::Named;
use surfcl_gpu::Error;
use surfcl_gpu::backend::{BackendChoice, DescriptorKind, DetectParams, Features};
#[cfg(feature = "opencl")]
use surfcl_gpu::opencl::{DetectorConfig, StreamPipeline};
use surfcl_gpu::{explain_auto, open_backend};

/// `surfcl stream`.
#[derive(Debug, Clone, Args)]
pub struct StreamArgs {
    /// The frames: image files, or one directory (its PNG/PGM/PPM/JPEG files in name order).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Largest frame size (default: the first readable frame's size); larger frames are
    /// skipped.
    #[arg(long, value_name = "WxH")]
    pub max_size: Option<ImageSize>,
    /// Detection options (SURF or Harris; the backend and OpenCL device).
    #[command(flatten)]
    pub detect: DetectOptions,
    /// Matching options (f32 descriptors).
    #[command(flatten)]
    pub matching: MatchOptions,
    /// Write the per-frame results as JSON to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the per-frame keypoints, descriptors and matches and the parameters as a NumPy
    /// archive (`numpy.load`) to FILE (layout: docs/JSON.md).
    #[arg(long, value_name = "FILE.npz")]
    pub npz: Option<PathBuf>,
}

/// The frame files: a single directory expands to its image files sorted by name. Entries are
/// chosen by name only; a FIFO or a directory named `*.png` is listed, then refused by the
/// loader (before it is opened) and reported as a skipped frame.
fn frame_paths(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    if let [dir] = inputs
        && dir.is_dir()
    {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                    ["png", "pgm", "ppm", "pnm", "jpg", "jpeg"]
                        .contains(&e.to_ascii_lowercase().as_str())
                })
            })
            .collect();
        paths.sort();
        return Ok(paths);
    }
    Ok(inputs.to_vec())
}

fn name(p: &Path) -> String {
    p.display().to_string()
}

/// One processed frame, whichever backend ran it.
struct Processed<'a> {
    keypoints: &'a [Keypoint],
    descriptors: &'a [Descriptor],
    matches: &'a [Match],
    /// Input index of the frame matched against.
    previous: Option<usize>,
    latency_ms: f64,
}

/// The line and JSON row of a processed frame.
fn good_row(index: usize, path: &Path, f: &Processed<'_>) -> (String, StreamFrameJson) {
    let prev = f.previous.map_or("-".to_string(), |p| format!("frame {p}"));
    let line = format!(
        "frame {index} {}: {} keypoints, {} matches to {prev}, {:.3} ms",
        name(path),
        f.keypoints.len(),
        f.matches.len(),
        f.latency_ms
    );
    let row = StreamFrameJson::Processed {
        index,
        path: name(path),
        keypoints: f.keypoints.iter().map(KeypointJson::from).collect(),
        previous: f.previous,
        matches: f.matches.iter().map(MatchJson::from).collect(),
        latency_ms: f.latency_ms,
    };
    (line, row)
}

/// The line and JSON row of a skipped frame.
fn skipped_row(index: usize, path: &Path, error: &str) -> (String, StreamFrameJson) {
    (
        format!("frame {index} {}: skipped: {error}", name(path)),
        StreamFrameJson::Skipped {
            index,
            path: name(path),
            error: error.to_owned(),
        },
    )
}

/// The processed frames' arrays of a `--npz` archive (docs/JSON.md): `keypoints_K`,
/// `descriptors_K` and `matches_K` for the frame of input index K, added as the frames come,
/// and the per-frame columns written at the end.
struct StreamArchive {
    npz: Npz,
    frame_index: Vec<i64>,
    previous: Vec<i64>,
    latency_ms: Vec<f64>,
}

impl StreamArchive {
    fn push(&mut self, index: usize, f: &Processed<'_>) -> Result<(), Error> {
        self.npz
            .keypoints(&format!("keypoints_{index}"), f.keypoints)?;
        self.npz
            .descriptors(&format!("descriptors_{index}"), f.descriptors)?;
        self.npz.matches(&format!("matches_{index}"), f.matches)?;
        self.frame_index.push(index as i64);
        self.previous.push(f.previous.map_or(-1, |p| p as i64));
        self.latency_ms.push(f.latency_ms);
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<u8>, Error> {
        self.npz.ints("frame_index", &self.frame_index)?;
        self.npz.ints("previous", &self.previous)?;
        self.npz.floats("latency_ms", &self.latency_ms)?;
        self.npz.finish()
    }
}

/// Collects the rows and prints the lines of a stream.
struct Rows {
    human: Human,
    rows: Vec<StreamFrameJson>,
    good: usize,
    archive: Option<StreamArchive>,
    /// Progress over the frames (drawn only when stderr is a terminal).
    progress: ProgressBar,
}

impl Rows {
    fn push(&mut self, (line, row): (String, StreamFrameJson), good: bool) -> Result<(), Error> {
        self.good += usize::from(good);
        self.rows.push(row);
        self.progress.inc(1);
        self.progress.suspend(|| self.human.line(&line))
    }

    /// [`Rows::push`] of a processed frame, also into the archive.
    fn push_processed(
        &mut self,
        index: usize,
        path: &Path,
        f: &Processed<'_>,
    ) -> Result<(), Error> {
        if let Some(archive) = &mut self.archive {
            archive.push(index, f)?;
        }
        self.push(good_row(index, path, f), true)
    }
}

/// Runs `surfcl stream`.
pub(crate) fn stream(args: &StreamArgs) -> Result<ExitCode, Error> {
    let params = args.detect.params(DescriptorKind::F32)?;
    let matching = args.matching.config()?;
    let json = JsonOutput::prepare(args.json.as_deref())?;
    let npz_out = args.npz.as_deref().map(OutputFile::prepare).transpose()?;
    let paths = frame_paths(&args.inputs)?;
    if paths.is_empty() {
        return Err(Error::InvalidArgument("no frames given".into()));
    }
    let params_json = ParamsJson::new(&params, Some((&matching, DescriptorKind::F32)));
    let archive = npz_out
        .as_ref()
        .map(|out| {
            Ok::<_, Error>(StreamArchive {
                npz: npz::with_params(out.path(), &params_json)?,
                frame_index: Vec::new(),
                previous: Vec::new(),
                latency_ms: Vec::new(),
            })
        })
        .transpose()?;
    let mut rows = Rows {
        human: Human::new(JsonOutput::is_stdout(json.as_ref())),
        rows: Vec::with_capacity(paths.len()),
        good: 0,
        archive,
        progress: crate::progress::bar("stream", paths.len() as u64),
    };
    let spec = args.detect.device.as_deref();
    let (backend, device) = match opencl_device(args.detect.backend_choice(), spec) {
        None => (
            "cpu",
            stream_cpu(args, &params, &matching, &paths, &mut rows)?,
        ),
        Some(device) => (
            "opencl",
            stream_opencl(
                args,
                device.as_deref(),
                &params,
                &matching,
                &paths,
                &mut rows,
            )?,
        ),
    };
    rows.progress.finish_and_clear();
    let mut written = Vec::new();
    if let (Some(out), Some(archive)) = (npz_out, rows.archive.take()) {
        written.push(out.write(&archive.finish()?)?);
    }
    if let Some(out) = json {
        let report = StreamReport {
            format_version: FORMAT_VERSION,
            backend: backend.into(),
            device,
            detector: params.detector.name().into(),
            params: params_json,
            frames: std::mem::take(&mut rows.rows),
        };
        written.extend(out.write(&report, true)?);
    }
    persist_all(written)?;
    if rows.good == 0 {
        return Err(Error::InvalidArgument("no frame could be processed".into()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the stream runs for `choice` and `--device spec`: `None` for the CPU backend, else the
/// OpenCL device spec (`Some(None)`: OpenCL's own choice). `auto` follows the library's rule
/// ([`explain_auto`]): the OpenCL GPU or accelerator it names, else the CPU with a note; a
/// `--device` that names a device asks for OpenCL on it.
fn opencl_device(choice: BackendChoice, spec: Option<&str>) -> Option<Option<String>> {
    let named = spec.filter(|s| !s.trim().is_empty() && !s.trim().eq_ignore_ascii_case("auto"));
    match choice {
        BackendChoice::Cpu => None,
        BackendChoice::OpenCl => Some(named.map(str::to_string)),
        BackendChoice::Auto if named.is_some() => Some(named.map(str::to_string)),
        BackendChoice::Auto => {
            let auto = explain_auto();
            match auto.device {
                Some(d) => Some(Some(d.index.to_string())),
                None => {
                    // A build without OpenCL has nothing else to offer: no note then.
                    if cfg!(feature = "opencl") {
                        stderr_line(&format!("note: {}; using the CPU backend", auto.reason));
                    }
                    None
                }
            }
        }
    }
}

/// The stream on OpenCL in a build without the OpenCL backend: the runtime's error that says so.
#[cfg(not(feature = "opencl"))]
fn stream_opencl(
    _args: &StreamArgs,
    device: Option<&str>,
    _params: &DetectParams,
    _matching: &MatchConfig,
    _paths: &[PathBuf],
    _rows: &mut Rows,
) -> Result<Option<String>, Error> {
    match surfcl_gpu::opencl::open(device) {
        Ok(_) => Err(Error::Internal(
            "OpenCL opened in a build without it".into(),
        )),
        Err(e) => Err(e.into()),
    }
}

/// The frame size limit: `--max-size`, or the first readable frame's size.
fn max_size(args: &StreamArgs, first: &OwnedGray) -> (usize, usize) {
    args.max_size
        .map_or((first.width, first.height), |s| (s.width, s.height))
}

/// The stream on the CPU backend, frame by frame. Returns the device description.
fn stream_cpu(
    args: &StreamArgs,
    params: &DetectParams,
    matching: &MatchConfig,
    paths: &[PathBuf],
    rows: &mut Rows,
) -> Result<Option<String>, Error> {
    let mut backend = open_backend(BackendChoice::Cpu, None)?;
    let mut limit = None;
    let mut previous: Option<(usize, Features)> = None;
    for (index, path) in paths.iter().enumerate() {
        let frame = load_gray(path).and_then(|gray| {
            let (max_w, max_h) = *limit.get_or_insert_with(|| max_size(args, &gray));
            if gray.width > max_w || gray.height > max_h {
                return Err(Error::InvalidArgument(format!(
                    "image {}x{} exceeds the stream's maximum {max_w}x{max_h}",
                    gray.width, gray.height
                )));
            }
            let start = Instant::now();
            let features = backend.detect(&gray.view()?, params)?;
            let matches = match &previous {
                Some((_, prev)) => {
                    backend.match_features(&features, prev, matching, DescriptorKind::F32)?
                }
                None => Vec::new(),
            };
            Ok((features, matches, start.elapsed().as_secs_f64() * 1e3))
        });
        match frame {
            Ok((features, matches, latency_ms)) => {
                rows.push_processed(
                    index,
                    path,
                    &Processed {
                        keypoints: &features.keypoints,
                        descriptors: &features.descriptors,
                        matches: &matches,
                        previous: previous.as_ref().map(|(p, _)| *p),
                        latency_ms,
                    },
                )?;
                previous = Some((index, features));
            }
            Err(e) => rows.push(skipped_row(index, path, &e.to_string()), false)?,
        }
    }
    Ok(Some(backend.device()))
}

/// The stream on OpenCL: frames are read one ahead of the device (the read and upload of frame
/// `k + 1` overlap the kernels of frame `k`). Returns the device name.
#[cfg(feature = "opencl")]
fn stream_opencl(
    args: &StreamArgs,
    device: Option<&str>,
    params: &DetectParams,
    matching: &MatchConfig,
    paths: &[PathBuf],
    rows: &mut Rows,
) -> Result<Option<String>, Error> {
    // The stream is made for the size of the first readable frame (or --max-size); frames
    // before it that cannot be read are reported here.
    let mut first = None;
    let mut skipped_before = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        match load_gray(path) {
            Ok(g) => {
                first = Some((index, g));
                break;
            }
            Err(e) => skipped_before.push(skipped_row(index, path, &e.to_string())),
        }
    }
    let Some((offset, first_frame)) = first else {
        for row in skipped_before {
            rows.push(row, false)?;
        }
        return Ok(None);
    };
    let (max_width, max_height) = max_size(args, &first_frame);
    let detector = DetectorConfig::for_params(params, max_width, max_height);
    // Opened before anything is printed: a device that fails to open leaves no rows behind.
    let mut stream = StreamPipeline::open_detector(device, detector, *matching)?;
    for row in skipped_before {
        rows.push(row, false)?;
    }
    let device = stream.device_name();
    let rest = paths[offset + 1..].iter().map(|p| load_gray(p));
    let frames = std::iter::once(Ok(first_frame)).chain(rest);
    let mut failure: Option<Error> = None;
    stream.run(frames, |k, result| {
        let index = offset + k;
        let Some(path) = paths.get(index) else {
            failure = Some(Error::Internal(format!("frame {index} out of range")));
            return false;
        };
        let pushed = match result {
            Ok(f) => {
                let processed = Processed {
                    keypoints: &f.keypoints,
                    descriptors: &f.descriptors,
                    matches: &f.matches,
                    previous: f.previous.map(|p| offset + p),
                    latency_ms: f.latency_ms,
                };
                rows.push_processed(index, path, &processed)
            }
            Err(e) => rows.push(skipped_row(index, path, &e.to_string()), false),
        };
        match pushed {
            Ok(()) => true,
            // Standard output closed: stop the stream.
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(Some(device))
}
