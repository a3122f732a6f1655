//! `surfcl stream DIR|FRAMES... [--max-size WxH] [--json FILE|-] [detect/match options]`:
//! SURF on a sequence of frames with the OpenCL [`StreamPipeline`], each frame matched against
//! the previous good one on the device. One line (and one JSON object) per frame; a frame that
//! cannot be read or processed (unreadable, larger than the pipeline) is reported and skipped,
//! and the stream goes on.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};

use super::args::{DetectOptions, ImageSize, JsonTarget, MatchOptions};
use crate::backend::{DescriptorKind, DetectorKind};
use crate::error::Error;
use crate::io::load_gray;
use crate::opencl::{PipelineConfig, StreamPipeline};

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
    /// Detection options (SURF only; the OpenCL device).
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

/// Runs `surfcl stream`.
pub(crate) fn stream(args: &StreamArgs) -> Result<ExitCode, Error> {
    let params = args.detect.params(DescriptorKind::F32)?;
    if params.detector != DetectorKind::Surf {
        return Err(Error::InvalidArgument(
            "surfcl stream supports --detector surf only".into(),
        ));
    }
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
    let mut stream: Option<StreamPipeline> = None;
    let mut rows: Vec<Value> = Vec::with_capacity(paths.len());
    let mut good = 0usize;
    // The stream numbers the frames it was given; this maps its numbers to input positions.
    let mut submitted: Vec<usize> = Vec::with_capacity(paths.len());
    for (index, path) in paths.iter().enumerate() {
        let gray = match load_gray(path) {
            Ok(g) => g,
            Err(e) => {
                say(format!("frame {index} {}: skipped: {e}", name(path)));
                rows.push(json!({"index": index, "path": name(path), "error": e.to_string()}));
                continue;
            }
        };
        if stream.is_none() {
            let (max_width, max_height) = args
                .max_size
                .map_or((gray.width, gray.height), |s| (s.width, s.height));
            stream = Some(StreamPipeline::open(
                args.detect.device.as_deref(),
                PipelineConfig {
                    max_width,
                    max_height,
                    surf: params.surf,
                    max_keypoints: params.max_keypoints,
                    local_size: None,
                },
                matching,
            )?);
        }
        let Some(s) = stream.as_mut() else {
            continue;
        };
        submitted.push(index);
        match s.process(&gray.view()?) {
            Ok(f) => {
                good += 1;
                let previous = f.previous.and_then(|p| submitted.get(p).copied());
                let prev = previous.map_or("-".to_string(), |p| format!("frame {p}"));
                say(format!(
                    "frame {index} {}: {} keypoints, {} matches to {prev}, {:.3} ms",
                    name(path),
                    f.keypoints.len(),
                    f.matches.len(),
                    f.latency_ms
                ));
                rows.push(json!({
                    "index": index,
                    "path": name(path),
                    "width": gray.width,
                    "height": gray.height,
                    "keypoints": f.keypoints.iter().map(|k| json!([k.x, k.y, k.scale, k.orientation, k.response, k.laplacian])).collect::<Vec<_>>(),
                    "previous": previous,
                    "matches": f.matches.iter().map(|m| json!([m.query, m.train, m.distance])).collect::<Vec<_>>(),
                    "latency_ms": f.latency_ms,
                }));
            }
            Err(e) => {
                say(format!("frame {index} {}: skipped: {e}", name(path)));
                rows.push(json!({"index": index, "path": name(path), "error": e.to_string()}));
            }
        }
    }
    if let Some(target) = &json {
        let text = serde_json::to_string_pretty(&json!({
            "device": stream.as_ref().map(|s| s.pipeline().device_name()),
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
