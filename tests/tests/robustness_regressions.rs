//! Replays the fuzzers' inputs from a normal `cargo test`: every saved crash input in
//! `fuzz/regressions/<target>/` and every committed seed in `fuzz/corpus/<target>/seed-*`, through
//! the very entry points the fuzz targets call (the file is included, not copied).

use std::path::{Path, PathBuf};

#[path = "../../fuzz/src/entry.rs"]
#[allow(dead_code)]
mod entry;

// `fuzz/src/ros.rs` refers to `crate::convert` and `crate::msg`; here they are the node's own
// (the fuzz crate compiles `ros-node/src/convert.rs` itself, to avoid building ros2-client).
mod convert {
    pub use surfcl_ros::convert::*;
}
mod msg {
    pub use surfcl_ros::msg::Image;
}
#[path = "../../fuzz/src/ros.rs"]
mod ros;

/// A fuzz target: its name and entry point.
type Target = (&'static str, fn(&[u8]));

/// The fuzz targets, all replayed here.
const TARGETS: [Target; 7] = [
    ("surf_detect", entry::surf_detect),
    ("harris_detect", entry::harris_detect),
    ("packed_responses", entry::packed_responses),
    ("matcher", entry::matcher),
    ("image_decode", entry::image_decode),
    ("homography_parse", entry::homography_parse),
    ("ros_image", ros::ros_image),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Files of `dir` (sorted) whose names start with `prefix`; none when `dir` does not exist.
fn inputs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name != "README.md"
        })
        .collect();
    files.sort();
    files
}

fn replay(kind: &str, prefix: &str) -> usize {
    let mut n = 0;
    for (target, run) in TARGETS {
        for file in inputs(&fuzz_dir().join(kind).join(target), prefix) {
            let bytes = std::fs::read(&file).unwrap();
            eprintln!("{target}: {}", file.display());
            run(&bytes);
            n += 1;
        }
    }
    n
}

#[test]
fn saved_crash_inputs_no_longer_fail() {
    let n = replay("regressions", "");
    eprintln!("{n} regression inputs replayed");
}

#[test]
fn seed_corpora_pass() {
    let n = replay("corpus", "seed-");
    // The committed seeds exist for every target: a missing corpus means a broken checkout.
    assert!(
        n >= 20,
        "only {n} seeds found under {}",
        fuzz_dir().display()
    );
}

#[test]
fn edge_inputs_pass() {
    for (_, run) in TARGETS {
        for input in [&[][..], &[0u8], &[0xff; 9], &[0x7f; 64]] {
            run(input);
        }
    }
}
