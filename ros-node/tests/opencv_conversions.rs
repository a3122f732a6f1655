//! The OpenCV conversions of the interface package (`ros-node/msg/python/surfcl_msgs/cv.py`)
//! checked with numpy and cv2 from PyPI: `tests/cv/check_cv.py` builds keypoint and match
//! messages from the JSON of `surfcl detect` and `surfcl match` (run here in-process, CPU
//! backend), converts them, draws them with `cv2.drawKeypoints` and matches them with
//! `cv2.BFMatcher`, and compares every value with the JSON under the documented mapping.
//!
//! The check needs a Python with numpy and opencv-python-headless: `$SURFCL_CV_PYTHON`, or the
//! venv made by `ros-node/tests/peer/setup.sh` (`tests/peer/.venv`, which `make test` sets up),
//! or `<target dir>/venv`. When none is usable the test fails and says how to set it up.
//!
//! The C++ header (`ros-node/msg/include/surfcl_msgs/cv.hpp`) is compiled with OpenCV's core
//! (`libopencv-core-dev`, which `scripts/install-deps.sh --test` installs) into
//! `tests/cv/check_cv.cpp`, which checks it on the node backend's detections of the same pair.
#![cfg(feature = "backend")]

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use common::{factory, read_pgm, test_params};
use surfcl_core::GrayImage;
use surfcl_ros::processor::Detection;

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
    let status = surfcl_cli::main_with_args(std::iter::once("surfcl").chain(args.iter().copied()));
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
        .args([
            "--detect1",
            &d1,
            "--detect2",
            &d2,
            "--match",
            &m,
            "--image",
            img1,
        ])
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
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        6,
        "{stdout}"
    );
}

/// The compiler flags of OpenCV's core: pkg-config's, or Debian's paths of libopencv-core-dev.
fn opencv_flags() -> Vec<String> {
    if let Ok(out) = Command::new("pkg-config")
        .args(["--cflags", "--libs", "opencv4"])
        .output()
        && out.status.success()
    {
        return String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect();
    }
    let include = Path::new("/usr/include/opencv4");
    assert!(
        include.join("opencv2/core.hpp").exists(),
        "OpenCV's core headers not found (pkg-config opencv4, /usr/include/opencv4): \
         install libopencv-core-dev (scripts/install-deps.sh --test)"
    );
    vec![format!("-I{}", include.display()), "-lopencv_core".into()]
}

/// A detection as check_cv.cpp reads it: `K n`, the keypoints, `D`, the descriptors.
fn write_detection(text: &mut String, d: &Detection) {
    writeln!(text, "K {}", d.keypoints.len()).unwrap();
    for k in &d.keypoints {
        // `{:?}` prints the shortest decimal that reads back as the same f32.
        writeln!(
            text,
            "{:?} {:?} {:?} {:?} {:?} {}",
            k.x, k.y, k.scale, k.orientation, k.response, k.laplacian
        )
        .unwrap();
    }
    writeln!(text, "D").unwrap();
    for row in &d.descriptors {
        let values: Vec<String> = row.iter().map(|v| format!("{v:?}")).collect();
        writeln!(text, "{}", values.join(" ")).unwrap();
    }
}

#[test]
fn cpp_header_gives_the_mapping_on_the_backends_detections() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("opencv_conversions_cpp");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("check_cv");
    let status = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(format!("-I{}", manifest().join("msg/include").display()))
        .arg(manifest().join("tests/cv/check_cv.cpp"))
        .arg("-o")
        .arg(&exe)
        .args(opencv_flags())
        .status()
        .expect("no C++ compiler (c++ or $CXX)");
    assert!(status.success(), "check_cv.cpp did not compile: {status}");

    let params = test_params();
    let mut processor = factory().open(&params).unwrap();
    let mut detections = Vec::new();
    for name in ["img1.pgm", "img2.pgm"] {
        let g = read_pgm(&manifest().join("../data/boat-qvga").join(name));
        let image = GrayImage::new(&g.pixels, g.width, g.height).unwrap();
        detections.push(processor.detect(&image, &params).unwrap());
    }
    let (mut first, mut second) = (detections[0].clone(), detections[1].clone());
    let matches = processor
        .match_frames(&mut first, &mut second, &params)
        .unwrap();
    assert!(matches.len() > 50, "{} matches", matches.len());
    let mut text = String::new();
    write_detection(&mut text, &detections[0]);
    write_detection(&mut text, &detections[1]);
    writeln!(text, "M {}", matches.len()).unwrap();
    for m in &matches {
        writeln!(text, "{} {} {:?}", m.query, m.train, m.distance).unwrap();
    }
    let input = dir.join("input.txt");
    std::fs::write(&input, text).unwrap();
    let output = Command::new(&exe).arg(&input).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.trim_end().ends_with("PASS"),
        "check_cv failed ({}):\n{stdout}",
        output.status
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        3,
        "{stdout}"
    );
}
