//! A board without libOpenCL.so.1 (no ICD loader installed) runs the CPU path of a build without
//! the `opencl` feature, while the default build, which links libOpenCL when it loads, cannot
//! start there at all.
//!
//! The program under test is this test's own executable, which links the runtime with the
//! features under test: run again with [`CHILD_ENV`] set, its test [`child`] opens `auto` (or the
//! backend the variable names) and detects a synthetic frame. Both checks run in either build and
//! expect the opposite outcome in each, so each can fail:
//! - the dynamic section (`readelf -d`) names libOpenCL as NEEDED exactly when the `opencl`
//!   feature is on;
//! - in a private mount namespace where the loader's libOpenCL.so.1 is covered by an empty file
//!   (`unshare -m`; a user namespace too where the test does not run as root), `auto` detects on the CPU backend without the feature, and the
//!   program does not start with it.
//!
//! Run the CPU-only half with `cargo test -p surfcl-gpu --no-default-features --test
//! without_libopencl`; `cargo test` runs the default half.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use surfcl_core::GrayImage;
use surfcl_gpu::{BackendChoice, DetectParams, open_backend};

/// Whether this build has the OpenCL backend.
const OPENCL: bool = cfg!(feature = "opencl");

/// Set for the child run: the backend to open (`auto`, `cpu` or `opencl`).
const CHILD_ENV: &str = "SURFCL_TEST_WITHOUT_LIBOPENCL_BACKEND";

/// The child half: without [`CHILD_ENV`] it does nothing. With it, opens that backend, detects a
/// dark frame with two bright squares and prints `backend=NAME keypoints=N` (a failure to open
/// or detect fails the child).
#[test]
fn child() {
    let Ok(choice) = std::env::var(CHILD_ENV) else {
        return;
    };
    let choice = match choice.as_str() {
        "cpu" => BackendChoice::Cpu,
        "opencl" => BackendChoice::OpenCl,
        _ => BackendChoice::Auto,
    };
    let (w, h) = (160usize, 120usize);
    let pixels: Vec<u8> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let big = (30..70).contains(&x) && (30..70).contains(&y);
            let small = (100..116).contains(&x) && (50..66).contains(&y);
            if big || small { 220 } else { 30 }
        })
        .collect();
    let image = GrayImage::new(&pixels, w, h).unwrap();
    let mut backend = open_backend(choice, None).unwrap_or_else(|e| panic!("open: {e}"));
    let features = backend.detect(&image, &DetectParams::default()).unwrap();
    println!(
        "backend={} keypoints={}",
        backend.name(),
        features.keypoints.len()
    );
}

/// This test executable: the program under test.
fn program() -> PathBuf {
    std::env::current_exe().unwrap()
}

/// Arguments that make the test executable run [`child`] alone.
const CHILD_ARGS: [&str; 4] = ["--exact", "child", "--nocapture", "--test-threads=1"];

/// The `backend=... keypoints=...` result of a child's output, if any (the test harness may
/// print it after the test's name on the same line).
fn child_line(out: &Output) -> Option<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout.find("backend=")?;
    stdout[start..].lines().next().map(|l| l.trim().to_string())
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The shared libraries the program's dynamic section names as NEEDED.
fn needed_libraries() -> Vec<String> {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(program())
        .output()
        .expect("readelf (binutils) runs");
    assert!(out.status.success(), "readelf: {}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split('[').nth(1)?.trim_end_matches(']').to_string()))
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn libopencl_is_needed_exactly_when_the_opencl_feature_is_on() {
    let needed = needed_libraries();
    assert!(
        needed.iter().any(|l| l.starts_with("libc.so")),
        "{needed:?}"
    );
    let links_opencl = needed.iter().any(|l| l.starts_with("libOpenCL"));
    assert_eq!(links_opencl, OPENCL, "NEEDED: {needed:?}");
}

/// Where the dynamic loader finds libOpenCL.so.1 on this machine (`ldconfig -p`), if anywhere.
fn installed_libopencl() -> Option<PathBuf> {
    let out = Command::new("ldconfig").arg("-p").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("libOpenCL.so.1 "))
        .find_map(|l| l.split("=>").nth(1).map(|p| PathBuf::from(p.trim())))
        .and_then(|p| p.canonicalize().ok())
}

/// Whether this process runs as root (mount namespaces need CAP_SYS_ADMIN; others get it in a
/// user namespace of their own).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs [`child`] with `backend` in a private mount namespace where `library` (the real file)
/// is covered by an empty one, so the loader cannot load it.
fn run_with_library_hidden(library: &Path, backend: &str) -> Output {
    let script = r#"mount --bind /dev/null "$1" && shift && exec "$@""#;
    let user_namespace: &[&str] = if is_root() { &[] } else { &["--map-root-user"] };
    Command::new("unshare")
        .args(user_namespace)
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(library)
        .arg(program())
        .args(CHILD_ARGS)
        .env(CHILD_ENV, backend)
        .env_remove("OCL_ICD_VENDORS")
        .env_remove("OCL_ICD_FILENAMES")
        .output()
        .expect("unshare runs")
}

#[test]
#[cfg(target_os = "linux")]
fn the_cpu_only_build_detects_where_libopencl_cannot_be_loaded() {
    let Some(library) = installed_libopencl() else {
        // Nothing to hide: the machine itself is the board without libOpenCL.
        let out = Command::new(program())
            .args(CHILD_ARGS)
            .env(CHILD_ENV, "auto")
            .output()
            .unwrap();
        assert_eq!(out.status.success(), !OPENCL, "{}", text(&out));
        return;
    };
    let out = run_with_library_hidden(&library, "auto");
    if OPENCL {
        assert!(
            !out.status.success(),
            "started without libOpenCL: {}",
            text(&out)
        );
        assert!(text(&out).contains("libOpenCL"), "{}", text(&out));
    } else {
        assert!(out.status.success(), "{}", text(&out));
        let line = child_line(&out).unwrap_or_else(|| panic!("no result line: {}", text(&out)));
        assert!(line.starts_with("backend=cpu keypoints="), "{line}");
        let keypoints: usize = line.trim().rsplit('=').next().unwrap().parse().unwrap();
        assert!(keypoints > 0, "{line}");
        // Asked for OpenCL, the CPU-only build says why it cannot.
        let out = run_with_library_hidden(&library, "opencl");
        assert!(!out.status.success());
        assert!(text(&out).contains("no OpenCL backend"), "{}", text(&out));
    }
}
