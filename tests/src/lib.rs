//! Shared helpers of the cross-crate integration tests: where the data is, and loading it.
//!
//! The CLI's own end-to-end tests live in `gpu-runner/tests/cli.rs`, where Cargo provides the
//! path of the built `surfcl` binary (`CARGO_BIN_EXE_surfcl`); the tests of this crate use the
//! libraries directly.

use std::path::{Path, PathBuf};

use surfcl_core::homography::Homography;
use surfcl_gpu::io::{OwnedGray, load_gray, load_homography};

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
