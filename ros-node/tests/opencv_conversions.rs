//! The OpenCV conversions of the interface package (`ros-node/msg/python/surfcl_msgs/cv.py`)
//! checked with numpy and cv2 from PyPI: `tests/cv/check_cv.py` builds keypoint and match
//! messages from the JSON of `surfcl detect` and `surfcl match` (run here in-process, CPU
//! backend), converts them, draws them with `cv2.drawKeypoints` and matches them with
//! `cv2.BFMatcher`, and compares every value with the JSON under the documented mapping.
//!
//! The check needs a Python with numpy and opencv-python-headless: `$SURFCL_CV_PYTHON`, or the
//! venv made by `ros-node/tests/peer/setup.sh` (`tests/peer/.venv`, which `make test` sets up),
//! or `<target dir>/venv`. When none is usable the test fails and says how to set it up.
#![cfg(feature = "backend")]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn has_cv(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import cv2, numpy"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn cv_python() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("SURFCL_CV_PYTHON") {
        candidates.push(PathBuf::from(p));
    }
    candidates.push(manifest().join("tests/peer/.venv/bin/python"));
    // CARGO_TARGET_TMPDIR is <target>/tmp.
    if let Some(target) = Path::new(env!("CARGO_TARGET_TMPDIR")).parent() {
        candidates.push(target.join("venv/bin/python"));
    }
    for c in &candidates {
        if c.exists() && has_cv(c) {
            return c.clone();
        }
    }
    panic!(
        "no Python with numpy and cv2 found (tried {candidates:?}); \
         run `ros-node/tests/peer/setup.sh` or set SURFCL_CV_PYTHON"
    );
}

/// Runs the `surfcl` command line in this process; panics unless it succeeds.
fn surfcl(args: &[&str]) {
    let status = surfcl_gpu::cli::main_with_args(std::iter::once("surfcl").chain(args.iter().copied()));
    assert_eq!(status, ExitCode::SUCCESS, "surfcl {args:?}");
}

#[test]
fn opencv_keypoints_descriptors_and_matches_equal_the_cli_json() {
    let python = cv_python();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("opencv_conversions");
    std::fs::create_dir_all(&dir).unwrap();
    let boat = manifest().join("../data/boat-qvga");
    let (img1, img2) = (boat.join("img1.pgm"), boat.join("img2.pgm"));
    let (img1, img2) = (img1.to_str().unwrap(), img2.to_str().unwrap());
    let out = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (d1, d2, m) = (out("detect1.json"), out("detect2.json"), out("match.json"));
    surfcl(&["detect", img1, "--backend", "cpu", "--json", &d1]);
    surfcl(&["detect", img2, "--backend", "cpu", "--json", &d2]);
    surfcl(&["match", img1, img2, "--backend", "cpu", "--json", &m]);
    let output = Command::new(&python)
        .arg(manifest().join("tests/cv/check_cv.py"))
        .args(["--detect1", &d1, "--detect2", &d2, "--match", &m, "--image", img1])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.trim_end().ends_with("PASS"),
        "check_cv.py failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    // Every check ran.
    assert_eq!(stdout.lines().filter(|l| l.starts_with("ok: ")).count(), 6, "{stdout}");
}
