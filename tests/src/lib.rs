//! Shared helpers of the cross-crate integration tests: where the data is, and loading it.
//!
//! The CLI's own end-to-end tests live in `cli/tests/cli.rs`, where Cargo provides the
//! path of the built `surfcl` binary (`CARGO_BIN_EXE_surfcl`); the tests of this crate use the
//! libraries directly.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};

use surfcl_cli::io::{OwnedGray, load_gray, load_homography};
use surfcl_core::harris::HarrisConfig;
use surfcl_core::homography::Homography;
use surfcl_core::matcher::{Match, MatchConfig, TrainBest, match_f32};
use surfcl_core::surf::SurfConfig;
use surfcl_core::{Descriptor, Keypoint};
use surfcl_gpu::backend::{DescriptorKind, DetectParams, DetectorKind, Features};

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

/// Boat image `k` (1..=6); panics with the reason when it cannot be loaded (test support only).
pub fn boat(k: usize) -> OwnedGray {
    boat_image(k).unwrap_or_else(|e| panic!("boat image {k}: {e}"))
}

/// The pixels of the `w x h` window of `image` at `(x, y)`, row-major. Panics when the window
/// does not fit in the image (test support only).
pub fn crop_pixels(image: &OwnedGray, x: usize, y: usize, w: usize, h: usize) -> Vec<u8> {
    assert!(
        x + w <= image.width && y + h <= image.height,
        "a {w}x{h} window at ({x}, {y}) is outside a {}x{} image",
        image.width,
        image.height
    );
    (y..y + h)
        .flat_map(|row| image.pixels[row * image.width + x..][..w].iter().copied())
        .collect()
}

/// The `w x h` window of boat image `k` at `(x, y)`, as an image of its own.
pub fn boat_crop(k: usize, x: usize, y: usize, w: usize, h: usize) -> OwnedGray {
    OwnedGray {
        width: w,
        height: h,
        pixels: crop_pixels(&boat(k), x, y, w, h),
    }
}

/// The bytes of `image` as a binary PGM file (P5, maxval 255).
pub fn pgm_bytes(image: &OwnedGray) -> Vec<u8> {
    let mut bytes = format!("P5\n{} {}\n255\n", image.width, image.height).into_bytes();
    bytes.extend_from_slice(&image.pixels);
    bytes
}

/// Runs the test `child` of the running test binary alone, in a new process: `image` written
/// as a PGM file whose path is in the environment variable `image_var`, and the environment
/// variable `fault_var` set to `fault` (removed when `None`). The child half of a test that
/// checks how the tool exits reads them; without `image_var` it does nothing.
pub fn run_child_test(
    child: &str,
    image: &OwnedGray,
    image_var: &str,
    (fault_var, fault): (&str, Option<&str>),
) -> Output {
    let dir = std::env::temp_dir().join(format!("surfcl-{child}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let path = dir.join("crop.pgm");
    std::fs::write(&path, pgm_bytes(image)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary: {e}"));
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", child, "--nocapture", "--test-threads=1"])
        .env(image_var, &path)
        .env_remove(fault_var);
    if let Some(f) = fault {
        cmd.env(fault_var, f);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("running the test {child}: {e}"))
}

/// The child half of a [`run_child_test`] test: `surfcl detect` of the image whose path is in
/// the environment variable `image_var`, with `--backend backend`, in-process (the same
/// `main_with_args` as the binary); fails when it does not succeed. Without `image_var` (an
/// ordinary test run) it does nothing.
pub fn detect_in_child(image_var: &str, backend: &str) {
    let Ok(image) = std::env::var(image_var) else {
        return;
    };
    let args = ["surfcl", "detect", image.as_str(), "--backend", backend];
    let code = surfcl_cli::main_with_args(args);
    assert_eq!(code, ExitCode::SUCCESS, "surfcl detect failed");
}

/// Detection with `detector`'s default parameters, keeping at most `max_keypoints`, with `f32`
/// descriptors.
pub fn detect_params(detector: DetectorKind, max_keypoints: usize) -> DetectParams {
    DetectParams {
        detector,
        surf: SurfConfig::default(),
        harris: HarrisConfig::default(),
        max_keypoints,
        descriptor: DescriptorKind::F32,
    }
}

/// `features` without their stage timings (which differ from run to run), to compare results.
pub fn untimed(mut features: Features) -> Features {
    features.timings.clear();
    features
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
