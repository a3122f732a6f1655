//! One stage of the CPU backend, repeated, on one thread: the program whose instructions
//! `scripts/cross/insn-check.sh` counts under QEMU's `insn` plugin, for the aarch64 and the x86-64
//! build alike.
//!
//! Run: `insn_stages STAGE REPEATS IMAGE [IMAGE2]` (the built bench binary; `cargo bench -p
//! surfcl-gpu --bench insn_stages -- STAGE REPEATS IMAGE` runs it too). After loading the images
//! and one warm-up run of the stage (buffers sized, pages touched), the stage runs `REPEATS`
//! times, so that the instructions of one warm run are `(count(R) - count(0)) / R`, start-up and
//! image decoding cancelled. Stages (default oriented SURF, at most 10000 keypoints):
//! - `detect`: integral image and detection, no description (`CpuBackend::detect_keypoints_into`);
//! - `frame`: the whole frame, detection, orientation and description (`Backend::detect_into`);
//!   description is `frame - detect`;
//! - `match`, `match-q7`: the 2-NN matcher (ratio 0.8, sign test) of IMAGE's descriptors against
//!   IMAGE2's, `f32` or Q7, both described once before the warm-up.
//!
//! One line on stdout tells the keypoint counts (the two architectures must agree on them).
//! Single-threaded on purpose: with a pool, idle workers spin, and the count would depend on
//! the scheduling.

use std::path::Path;
use std::process::ExitCode;

use surfcl_core::harris::HarrisConfig;
use surfcl_core::matcher::MatchConfig;
use surfcl_core::surf::SurfConfig;
use surfcl_gpu::Error;
use surfcl_gpu::backend::{Backend, DescriptorKind, DetectParams, DetectorKind, Features};
use surfcl_gpu::cpu::CpuBackend;
#[path = "../tests/support/gray.rs"]
mod gray;
use gray::{OwnedGray, load_gray};

/// The stages this program repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Detect,
    Frame,
    Match(DescriptorKind),
}

impl Stage {
    fn parse(word: &str) -> Option<Self> {
        match word {
            "detect" => Some(Self::Detect),
            "frame" => Some(Self::Frame),
            "match" => Some(Self::Match(DescriptorKind::F32)),
            "match-q7" => Some(Self::Match(DescriptorKind::Q7)),
            _ => None,
        }
    }
}

const USAGE: &str = "usage: insn_stages detect|frame|match|match-q7 REPEATS IMAGE [IMAGE2]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (Some(stage), Some(repeats), Some(first)) = (
        args.first().and_then(|s| Stage::parse(s)),
        args.get(1).and_then(|r| r.parse::<usize>().ok()),
        args.get(2),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let second = args.get(3).unwrap_or(first);
    match run(stage, repeats, Path::new(first), Path::new(second)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("insn_stages: {e}");
            ExitCode::FAILURE
        }
    }
}

fn load(path: &Path) -> Result<OwnedGray, String> {
    load_gray(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `stage` once to warm up and `repeats` more times; returns the report line.
fn run(stage: Stage, repeats: usize, first: &Path, second: &Path) -> Result<String, String> {
    let params = DetectParams {
        detector: DetectorKind::Surf,
        surf: SurfConfig::default(),
        harris: HarrisConfig::default(),
        max_keypoints: 10_000,
        descriptor: DescriptorKind::F32,
    };
    let mut backend = CpuBackend::with_threads(1);
    let image = load(first)?;
    let view = image.view().map_err(|e| e.to_string())?;
    let mut features = Features::default();
    let failed = |e: Error| e.to_string();
    match stage {
        Stage::Detect | Stage::Frame => {
            for _ in 0..=repeats {
                if stage == Stage::Detect {
                    backend.detect_keypoints_into(&view, &params, &mut features)
                } else {
                    backend.detect_into(&view, &params, &mut features)
                }
                .map_err(failed)?;
            }
            Ok(format!("{stage:?}: {} keypoints", features.keypoints.len()))
        }
        Stage::Match(kind) => {
            let other = load(second)?;
            let other_view = other.view().map_err(|e| e.to_string())?;
            backend
                .detect_into(&view, &params, &mut features)
                .map_err(failed)?;
            let train = backend.detect(&other_view, &params).map_err(failed)?;
            let config = MatchConfig::default();
            let mut matches = Vec::new();
            for _ in 0..=repeats {
                matches = backend
                    .match_features(&features, &train, &config, kind)
                    .map_err(failed)?;
            }
            Ok(format!(
                "{stage:?}: {} x {} keypoints, {} matches",
                features.keypoints.len(),
                train.keypoints.len(),
                matches.len()
            ))
        }
    }
}
