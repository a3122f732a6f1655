//! The `surfcl` binary on a machine without any OpenCL platform (an aarch64 board without a
//! driver, every Jetson): `--backend auto` must fall back to the CPU at once, and `devices` /
//! `--backend opencl` must say "no OpenCL platform" at once, instead of waiting 10 s in
//! `ocl-core`'s platform retry loop.
//!
//! The ICD loader (ocl-icd) is pointed at an empty vendor folder (`OCL_ICD_VENDORS`), which hides
//! every installed platform from this process only.

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{assert_contains, command, path_str, stderr};

/// Well under the 10 s of the retry loop, with room for a loaded 2-core CI machine (the work
/// itself, a 96x80 detect, takes milliseconds).
const BOUND: Duration = Duration::from_secs(4);

/// An empty folder for `OCL_ICD_VENDORS` and a small image to detect on, made once per process
/// (the tests run in parallel).
fn fixture() -> (PathBuf, PathBuf) {
    static FIXTURE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FIXTURE.get_or_init(make_fixture).clone()
}

fn make_fixture() -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("surfcl-no-opencl");
    let vendors = dir.join("empty-vendors");
    std::fs::create_dir_all(&vendors).unwrap();
    // A dark image with a bright square: some structure for the detector.
    let (w, h) = (96usize, 80usize);
    let mut pgm = format!("P5\n{w} {h}\n255\n").into_bytes();
    for y in 0..h {
        for x in 0..w {
            let inside = (30..60).contains(&x) && (25..50).contains(&y);
            pgm.push(if inside { 220 } else { 30 });
        }
    }
    let image = dir.join("square.pgm");
    std::fs::write(&image, pgm).unwrap();
    (vendors, image)
}

/// Runs `surfcl args` with every OpenCL platform hidden; returns the output and the wall time.
fn surfcl_without_opencl(args: &[&str]) -> (Output, Duration) {
    let (vendors, _) = fixture();
    let start = Instant::now();
    let out = command(args)
        .env("OCL_ICD_VENDORS", &vendors)
        .env_remove("OCL_ICD_FILENAMES")
        .output()
        .unwrap();
    (out, start.elapsed())
}

/// Standard output and error together.
fn all_output(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(out)
}

#[test]
fn devices_reports_no_platform_at_once() {
    let (out, took) = surfcl_without_opencl(&["devices"]);
    assert!(took < BOUND, "surfcl devices took {took:?} without OpenCL");
    assert_contains(&all_output(&out), "no OpenCL platform");
}

#[test]
fn backend_opencl_fails_at_once_with_a_clear_message() {
    let (_, image) = fixture();
    let (out, took) = surfcl_without_opencl(&["detect", path_str(&image), "--backend", "opencl"]);
    assert!(took < BOUND, "detect --backend opencl took {took:?}");
    assert!(!out.status.success());
    assert_contains(&stderr(&out), "no OpenCL platform");
}

#[test]
fn backend_auto_falls_back_to_the_cpu_at_once() {
    let (_, image) = fixture();
    let (out, took) = surfcl_without_opencl(&[
        "detect",
        path_str(&image),
        "--backend",
        "auto",
        "--json",
        "-",
    ]);
    assert!(took < BOUND, "detect --backend auto took {took:?}");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["backend"], "cpu", "{json}");
}
