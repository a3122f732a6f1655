//! A board without libOpenCL.so.1 (no ICD loader installed) runs the CPU path of a build without
//! the `opencl` feature, while the default build, which links libOpenCL when it loads, cannot
//! start there at all.
//!
//! The program under test is the example `detect_pattern`, which Cargo builds with this test and
//! the same features. Both checks run in either build and expect the opposite outcome in each, so
//! each can fail:
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

/// Whether this build has the OpenCL backend (the example is built with the same features).
const OPENCL: bool = cfg!(feature = "opencl");

/// The `detect_pattern` example next to this test's executable (`target/<profile>/examples`).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("detect_pattern{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: Cargo builds the examples with the tests",
        path.display()
    );
    path
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The shared libraries the example's dynamic section names as NEEDED.
fn needed_libraries() -> Vec<String> {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(example())
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

/// Runs the example with `args` in a private mount namespace where `library` (the real file)
/// is covered by an empty one, so the loader cannot load it.
fn run_with_library_hidden(library: &Path, args: &[&str]) -> Output {
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
        .arg(example())
        .args(args)
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
        let out = Command::new(example()).arg("auto").output().unwrap();
        assert_eq!(out.status.success(), !OPENCL, "{}", text(&out));
        return;
    };
    let out = run_with_library_hidden(&library, &["auto"]);
    if OPENCL {
        assert!(
            !out.status.success(),
            "started without libOpenCL: {}",
            text(&out)
        );
        assert!(text(&out).contains("libOpenCL"), "{}", text(&out));
    } else {
        assert!(out.status.success(), "{}", text(&out));
        let line = String::from_utf8_lossy(&out.stdout);
        assert!(line.starts_with("backend=cpu keypoints="), "{line}");
        let keypoints: usize = line.trim().rsplit('=').next().unwrap().parse().unwrap();
        assert!(keypoints > 0, "{line}");
        // Asked for OpenCL, the CPU-only build says why it cannot.
        let out = run_with_library_hidden(&library, &["opencl"]);
        assert!(!out.status.success());
        assert!(text(&out).contains("no OpenCL backend"), "{}", text(&out));
    }
}
