//! Helpers shared by the end-to-end tests of the `surfcl` binary: where the data is, scratch
//! folders, running the binary and reading what it printed.
// Each test binary compiles this module and uses its own subset of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Oxford boat sequence shipped in `data/` (`img1.pgm`..`img6.pgm`, `H1to2p`..`H1to6p`).
pub fn boat() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat")
}

/// A scratch folder of the tests called `name`, created when missing (its contents are kept).
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// `surfcl args`, ready to run; the environment must not pick a device for the tests, so
/// `SURFCL_DEVICE` is removed.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_surfcl"));
    c.args(args).env_remove("SURFCL_DEVICE");
    c
}

/// Runs `surfcl args` to its end.
pub fn surfcl(args: &[&str]) -> Output {
    command(args)
        .output()
        .unwrap_or_else(|e| panic!("running surfcl {args:?}: {e}"))
}

/// What a run printed on standard error.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `p` as a command-line argument (the test paths are UTF-8).
pub fn path_str(p: &Path) -> &str {
    p.to_str()
        .unwrap_or_else(|| panic!("{} is not UTF-8", p.display()))
}

/// Asserts that `text`, something a run printed, contains `needle`; shows all of it when not.
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not in: {text}");
}

/// The arguments of `surfcl match` of `img1` and `img2` on the CPU backend, counting the correct
/// matches with the homography `h`, with the JSON report on standard output.
pub fn cpu_match_json<'a>(img1: &'a Path, img2: &'a Path, h: &'a Path) -> Vec<&'a str> {
    vec![
        "match",
        path_str(img1),
        path_str(img2),
        "--backend",
        "cpu",
        "--homography",
        path_str(h),
        "--json",
        "-",
    ]
}

/// Asserts that the run `out` succeeded; shows its standard error when not.
pub fn assert_success(out: &Output) {
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(out));
}
