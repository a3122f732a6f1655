//! `surfcl stream DIR|FRAMES... [--max-size WxH] [--json FILE|-] [detect/match options]`:
//! SURF or Harris (`--detector`) on a sequence of frames with the OpenCL [`StreamPipeline`],
//! each frame matched against the previous good one on the device. One line (and one JSON object) per frame; a frame that
//! cannot be read or processed (unreadable, larger than the pipeline) is reported and skipped,
//! and the stream goes on.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};

use super::args::{DetectOptions, ImageSize, JsonTarget, MatchOptions};
use surfcl_core::GrayImage;

use crate::backend::DescriptorKind;
use crate::error::Error;
use crate::io::{OwnedGray, load_gray};
use crate::opencl::{OpenClError, StreamDetector, StreamFrame, StreamInput, StreamPipeline};

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
    /// Detection options (SURF or Harris; the OpenCL device).
    #[command(flatten)]
    pub detect: DetectOptions,
    /// Matching options (f32 descriptors).
    #[command(flatten)]
    pub matching: MatchOptions,
    /// Write the per-frame results as JSON to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The frame files: a single directory expands to its image files sorted by name.
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

impl StreamInput for OwnedGray {
    fn frame(&self) -> Result<GrayImage<'_>, OpenClError> {
        self.view()
            .map_err(|e| OpenClError::BadFrame(e.to_string()))
    }
}

/// One line and one JSON object for a processed or skipped frame.
fn frame_row(
    index: usize,
    path: &Path,
    result: Result<StreamFrame, OpenClError>,
    previous_input: Option<usize>,
) -> (String, Value, bool) {
    match result {
        Ok(f) => {
            let prev = previous_input.map_or("-".to_string(), |p| format!("frame {p}"));
            let line = format!(
                "frame {index} {}: {} keypoints, {} matches to {prev}, {:.3} ms",
                name(path),
                f.keypoints.len(),
                f.matches.len(),
                f.latency_ms
            );
            let row = json!({
                "index": index,
                "path": name(path),
                "keypoints": f.keypoints.iter().map(|k| json!([k.x, k.y, k.scale, k.orientation, k.response, k.laplacian])).collect::<Vec<_>>(),
                "previous": previous_input,
                "matches": f.matches.iter().map(|m| json!([m.query, m.train, m.distance])).collect::<Vec<_>>(),
                "latency_ms": f.latency_ms,
            });
            (line, row, true)
        }
        Err(e) => (
            format!("frame {index} {}: skipped: {e}", name(path)),
            json!({"index": index, "path": name(path), "error": e.to_string()}),
            false,
        ),
    }
}

/// Runs `surfcl stream`: frames are read one ahead of the device (the read and upload of frame
/// `k + 1` overlap the kernels of frame `k`).
pub(crate) fn stream(args: &StreamArgs) -> Result<ExitCode, Error> {
    let params = args.detect.params(DescriptorKind::F32)?;
    let matching = args.matching.config()?;
    let json = JsonTarget::from_arg(&args.json);
    // With JSON on stdout the per-frame lines go to stderr.
    let say = |line: String| {
        if matches!(json, Some(JsonTarget::Stdout)) {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let paths = frame_paths(&args.inputs)?;
    if paths.is_empty() {
        return Err(Error::InvalidArgument("no frames given".into()));
    }
    let mut rows: Vec<Value> = Vec::with_capacity(paths.len());
    let mut good = 0usize;
    // The stream is made for the size of the first readable frame (or --max-size); frames
    // before it that cannot be read are reported here.
    let mut first = None;
    for (index, path) in paths.iter().enumerate() {
        match load_gray(path) {
            Ok(g) => {
                first = Some((index, g));
                break;
            }
            Err(e) => {
                say(format!("frame {index} {}: skipped: {e}", name(path)));
                rows.push(json!({"index": index, "path": name(path), "error": e.to_string()}));
            }
        }
    }
    let mut device = None;
    if let Some((offset, first_frame)) = first {
        let (max_width, max_height) = args
            .max_size
            .map_or((first_frame.width, first_frame.height), |s| {
                (s.width, s.height)
            });
        let detector = StreamDetector::for_params(&params, max_width, max_height);
        let mut stream =
            StreamPipeline::open_detector(args.detect.device.as_deref(), detector, matching)?;
        device = Some(stream.device_name());
        let rest = paths[offset + 1..].iter().map(|p| load_gray(p));
        let frames = std::iter::once(Ok(first_frame)).chain(rest);
        let mut failures: Option<Error> = None;
        stream.run(frames, |k, result| {
            let index = offset + k;
            let Some(path) = paths.get(index) else {
                failures = Some(Error::InvalidArgument(format!(
                    "frame {index} out of range"
                )));
                return false;
            };
            let previous = result
                .as_ref()
                .ok()
                .and_then(|f| f.previous)
                .map(|p| offset + p);
            let (line, row, ok) = frame_row(index, path, result, previous);
            good += usize::from(ok);
            say(line);
            rows.push(row);
            true
        });
        if let Some(e) = failures {
            return Err(e);
        }
    }
    if let Some(target) = &json {
        let text = serde_json::to_string_pretty(&json!({
            "device": device,
            "detector": format!("{:?}", params.detector).to_lowercase(),
            "frames": rows,
        }))?;
        match target {
            JsonTarget::Stdout => println!("{text}"),
            JsonTarget::File(p) => std::fs::write(p, text).map_err(|e| Error::io(p, e))?,
        }
    }
    if good == 0 {
        return Err(Error::InvalidArgument("no frame could be processed".into()));
    }
    Ok(ExitCode::SUCCESS)
}
