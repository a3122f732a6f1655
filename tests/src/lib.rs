//! Shared helpers of the cross-crate integration tests: where the data is, and loading it.
//!
//! The CLI's own end-to-end tests live in `cli/tests/cli.rs`, where Cargo provides the
//! path of the built `surfcl` binary (`CARGO_BIN_EXE_surfcl`); the tests of this crate use the
//! libraries directly.

use std::path::{Path, PathBuf};

use surfcl_cli::io::{OwnedGray, load_gray, load_homography};
use surfcl_core::homography::Homography;
use surfcl_core::matcher::{Match, MatchConfig, TrainBest, match_f32};
use surfcl_core::{Descriptor, Keypoint};

/// The repository's `data/` folder.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data")
}

/// The Oxford boat sequence (`img1.pgm`..`img6.pgm`, `H1to2p`..`H1to6p`).
pub fn boat_dir() -> PathBuf {
    data_dir().join("oxford-boat")
}

/// Loads boat image `k` (1..=6) as 8-bit luminance.
pub fn boat_image(k: usize) -> Result<OwnedGray, surfcl_gpu::Error> {
    load_gray(&boat_dir().join(format!("img{k}.pgm")))
}

/// Loads the ground-truth homography from boat image 1 to image `k` (2..=6).
pub fn boat_homography(k: usize) -> Result<Homography, surfcl_gpu::Error> {
    load_homography(&boat_dir().join(format!("H1to{k}p")))
}

/// Panics with the packages to install when no OpenCL device is present: the OpenCL tests must
/// fail, not pass vacuously, on a machine without PoCL (CI installs it).
pub fn require_opencl() {
    match surfcl_gpu::opencl::list_devices() {
        Ok(d) if !d.is_empty() => {}
        other => panic!(
            "these tests need an OpenCL device (CI: apt-get install pocl-opencl-icd ocl-icd-opencl-dev); got {other:?}"
        ),
    }
}

/// Loads an image file as 8-bit luminance with the CLI's loader: `(pixels, width, height)`.
/// Panics with the path on failure (test support only).
pub fn load_pgm(path: &str) -> (Vec<u8>, usize, usize) {
    let image = load_gray(Path::new(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    (image.pixels, image.width, image.height)
}

/// The core's `f32` matches of `qd` (query) against `td` (train): the reference the OpenCL
/// matchers and streams are compared with.
pub fn core_matches(
    qk: &[Keypoint],
    qd: &[Descriptor],
    tk: &[Keypoint],
    td: &[Descriptor],
    config: &MatchConfig,
) -> Vec<Match> {
    let mut best = vec![TrainBest::EMPTY; if config.cross_check { td.len() } else { 0 }];
    let mut out = vec![Match::default(); qd.len()];
    match match_f32(qk, qd, tk, td, config, &mut best, &mut out) {
        Ok(n) => out.truncate(n),
        Err(e) => panic!("core matcher: {e}"),
    }
    out
}
