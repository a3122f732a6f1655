//! The output formats of the `surfcl` binary (docs/JSON.md): every JSON report carries
//! `format_version` and writes keypoints in the one object shape with `f32` values printed as
//! `f32`; the `--npz` archives, loaded with numpy as a user would, hold exactly the values of the
//! JSON report of the same run (detect, match, stream); an image can come from standard input,
//! and a corrupt one there gives a clear error.
//!
//! numpy comes from the venv of `cli/tests/numpy/setup.sh` (run by `make deps-test`), or the
//! Python named by `$SURFCL_NUMPY_PYTHON`; without numpy the archive tests fail and say so.
//!
//! Everything runs on `--backend cpu` on the 320x240 boat images, so that results do not depend
//! on the machine's OpenCL and the debug build stays fast.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use common::{
    assert_contains, assert_success, command, cpu_match_json, path_str as s, scratch_dir, stderr,
};

/// The format version the reports must carry (docs/JSON.md).
const FORMAT_VERSION: u64 = 2;

fn qvga(k: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../data/boat-qvga/img{k}.pgm"))
}

fn qvga_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/boat-qvga")
}

/// A scratch path unique to one test.
fn scratch(name: &str) -> PathBuf {
    scratch_dir("surfcl-format-tests").join(name)
}

/// Runs `surfcl args`, with `stdin` on its standard input when given.
fn surfcl_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = command(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        // The tool may stop reading early (an error): a broken pipe here is not the test's concern.
        let _ = child.stdin.take().unwrap().write_all(bytes);
    }
    child.wait_with_output().unwrap()
}

fn surfcl(args: &[&str]) -> Output {
    surfcl_with_stdin(args, None)
}

/// The JSON on stdout of a successful run.
fn json_of(args: &[&str]) -> Value {
    let out = surfcl(args);
    assert!(
        out.status.success(),
        "surfcl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Checks one keypoint array: objects with exactly the six fields, numbers everywhere.
fn assert_keypoint_shape(keypoints: &Value, what: &str) {
    let list = keypoints
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not an array"));
    assert!(!list.is_empty(), "{what}: no keypoint to check");
    for k in list {
        let object = k
            .as_object()
            .unwrap_or_else(|| panic!("{what}: keypoint {k} is not an object"));
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["laplacian", "orientation", "response", "scale", "x", "y"],
            "{what}"
        );
        assert!(object.values().all(Value::is_number), "{what}: {k}");
        let laplacian = object["laplacian"].as_i64().unwrap();
        assert!((-1..=1).contains(&laplacian), "{what}: {k}");
    }
}

/// Checks that every number of `value` has at most the 9 significant digits an `f32` needs
/// (`f64` widenings such as `584.2723999023438` have 16 or 17).
fn assert_f32_digits(value: &Value, what: &str) {
    match value {
        Value::Number(n) => {
            let text = n.to_string();
            let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
            let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
            let significant = digits.trim_start_matches('0').len();
            assert!(significant <= 9, "{what}: {text} is not printed as an f32");
        }
        Value::Array(list) => list.iter().for_each(|v| assert_f32_digits(v, what)),
        Value::Object(map) => map.values().for_each(|v| assert_f32_digits(v, what)),
        _ => {}
    }
}

#[test]
fn every_report_has_the_format_version_and_one_keypoint_shape() {
    let img1 = qvga(1);
    let img2 = qvga(2);
    let detect = json_of(&["detect", s(&img1), "--backend", "cpu", "--json", "-"]);
    assert_eq!(detect["format_version"], FORMAT_VERSION);
    assert_keypoint_shape(&detect["keypoints"], "detect");

    let h = qvga_dir().join("H1to2p");
    let matched = json_of(&cpu_match_json(&img1, &img2, &h));
    assert_eq!(matched["format_version"], FORMAT_VERSION);
    assert_keypoint_shape(&matched["keypoints1"], "match keypoints1");
    assert_keypoint_shape(&matched["keypoints2"], "match keypoints2");
    // The share of correct matches has its own name; `precision` is the numeric precision.
    let correct = matched["correct"].as_f64().unwrap();
    let total = matched["matches"].as_array().unwrap().len() as f64;
    assert_eq!(matched["correct_ratio"].as_f64(), Some(correct / total));
    assert!(matched.get("precision").is_none());
    assert_eq!(matched["params"]["surf"]["precision"], "f32");
    let m = &matched["matches"][0];
    assert!(m["query"].is_u64() && m["train"].is_u64() && m["distance"].is_number());

    let stream = json_of(&[
        "stream",
        s(&img1),
        s(&img2),
        s(&qvga(3)),
        "--backend",
        "cpu",
        "--json",
        "-",
    ]);
    assert_eq!(stream["format_version"], FORMAT_VERSION);
    let frames = stream["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 3);
    for (k, frame) in frames.iter().enumerate() {
        assert_keypoint_shape(&frame["keypoints"], &format!("stream frame {k}"));
    }
    let m = &frames[1]["matches"][0];
    assert!(m["query"].is_u64() && m["train"].is_u64() && m["distance"].is_number());
    // The same keypoints as `detect` of the first frame, value for value.
    assert_eq!(frames[0]["keypoints"], detect["keypoints"]);
    for frame in frames {
        assert_f32_digits(&frame["keypoints"], "stream keypoints");
        assert_f32_digits(&frame["matches"], "stream matches");
    }
    assert_f32_digits(&stream["params"], "stream params");
    assert_f32_digits(&detect["keypoints"], "detect keypoints");

    let eval = json_of(&["eval", s(&qvga_dir()), "--backend", "cpu", "--json", "-"]);
    assert_eq!(eval["format_version"], FORMAT_VERSION);
    let pair = &eval["pairs"][0];
    assert!(pair["correct_ratio"].is_number() && pair.get("precision").is_none());

    let bench = json_of(&[
        "bench",
        "--backend",
        "cpu",
        "--sizes",
        "160x120",
        "--frames",
        "7",
        "--precision",
        "u8",
        "--json",
        "-",
    ]);
    assert_eq!(bench["format_version"], FORMAT_VERSION);
    // With `--backend cpu` every frame asked for is timed (beside an OpenCL device the CPU is
    // only the reference, and runs at most 5).
    let cpu = &bench["sizes"][0]["cpu"];
    assert_eq!(cpu["frames"], 7, "{cpu}");
    assert!(cpu["wall_ms"].as_f64().unwrap() > 0.0, "{cpu}");
    // Precisions are spelt as everywhere else, not as Rust names (`Packed8`).
    assert_eq!(bench["precision"], "u8");
    assert_eq!(bench["params"]["surf"]["precision"], "u8");
    assert_eq!(bench["threshold"].to_string(), "0.0004");
}

/// The Python with numpy: `$SURFCL_NUMPY_PYTHON`, else the venv of `cli/tests/numpy/setup.sh`.
fn numpy_python() -> PathBuf {
    let python = std::env::var_os("SURFCL_NUMPY_PYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/numpy/.venv/bin/python"),
        PathBuf::from,
    );
    let ok = Command::new(&python)
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "no numpy at {}: run cli/tests/numpy/setup.sh (make deps-test does) or set \
         SURFCL_NUMPY_PYTHON",
        python.display()
    );
    python
}

/// Runs `compare.py command npz json` and returns what it printed; panics with its message when
/// the archive differs from the report.
fn numpy_compare(command: &str, npz: &Path, json: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/numpy/compare.py");
    let out = Command::new(numpy_python())
        .arg(script)
        .args([command, s(npz), s(json)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{command}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `surfcl args --npz NPZ --json JSON` and compares the two files with numpy.
fn archive_equals_report(name: &str, command: &str, args: &[&str]) -> String {
    let npz = scratch(&format!("{name}.npz"));
    let json = scratch(&format!("{name}.json"));
    let mut all = args.to_vec();
    all.extend(["--backend", "cpu", "--npz", s(&npz), "--json", s(&json)]);
    let out = surfcl(&all);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    numpy_compare(command, &npz, &json)
}

#[test]
fn npz_equals_the_json_of_the_same_run() {
    let (img1, img2, img3) = (qvga(1), qvga(2), qvga(3));
    let said = archive_equals_report("detect", "detect", &["detect", s(&img1)]);
    assert!(said.starts_with("detect:"), "{said}");
    archive_equals_report(
        "detect-harris",
        "detect",
        &["detect", s(&img1), "--detector", "harris"],
    );
    archive_equals_report("match", "match", &["match", s(&img1), s(&img2)]);
    archive_equals_report(
        "match-q7",
        "match",
        &["match", s(&img1), s(&img2), "--descriptor", "q7"],
    );
    // A frame that cannot be read is skipped in both files.
    let missing = scratch("no-such-frame.pgm");
    archive_equals_report(
        "stream",
        "stream",
        &["stream", s(&img1), s(&missing), s(&img2), s(&img3)],
    );
}

#[test]
fn the_comparison_catches_a_difference() {
    // The check itself must be able to fail: an archive of another image differs.
    let (img1, img2) = (qvga(1), qvga(2));
    let npz = scratch("other.npz");
    let json = scratch("other.json");
    let run = |image: &Path, flag: &str, path: &Path| {
        let out = surfcl(&["detect", s(image), "--backend", "cpu", flag, s(path)]);
        assert_success(&out);
    };
    run(&img1, "--json", &json);
    run(&img2, "--npz", &npz);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/numpy/compare.py");
    let out = Command::new(numpy_python())
        .arg(script)
        .args(["detect", s(&npz), s(&json)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_contains(&stderr(&out), "npz != json: keypoints");
}

#[test]
fn an_image_can_come_from_standard_input() {
    let img1 = qvga(1);
    let bytes = std::fs::read(&img1).unwrap();
    let from_file = json_of(&["detect", s(&img1), "--backend", "cpu", "--json", "-"]);
    let out = surfcl_with_stdin(
        &["detect", "-", "--backend", "cpu", "--json", "-"],
        Some(&bytes),
    );
    assert_success(&out);
    let from_stdin: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_stdin["keypoints"], from_file["keypoints"]);
    assert_eq!(from_stdin["descriptors"], from_file["descriptors"]);

    // match: the second image from stdin gives the matches of the two files.
    let img2 = qvga(2);
    let files = json_of(&[
        "match",
        s(&img1),
        s(&img2),
        "--backend",
        "cpu",
        "--json",
        "-",
    ]);
    let out = surfcl_with_stdin(
        &["match", s(&img1), "-", "--backend", "cpu", "--json", "-"],
        Some(&std::fs::read(&img2).unwrap()),
    );
    assert_success(&out);
    let piped: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(piped["matches"], files["matches"]);
    assert!(!files["matches"].as_array().unwrap().is_empty());

    // Both images cannot come from the one standard input.
    let out = surfcl_with_stdin(&["match", "-", "-", "--backend", "cpu"], Some(&bytes));
    assert_eq!(out.status.code(), Some(2));
    assert_contains(&stderr(&out), "standard input");
}

#[test]
fn a_corrupt_image_on_standard_input_gives_a_clear_error() {
    let bytes = std::fs::read(qvga(1)).unwrap();
    let cases: [(&str, &[u8], &str); 3] = [
        ("truncated", &bytes[..bytes.len() / 2], "truncated"),
        (
            "not an image",
            b"hello, I am text\n",
            "not a supported image format",
        ),
        ("empty", b"", "empty"),
    ];
    for (what, input, expected) in cases {
        let out = surfcl_with_stdin(&["detect", "-", "--backend", "cpu"], Some(input));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(
            err.starts_with("error: <stdin>: cannot decode image") && err.contains(expected),
            "{what}: {err}"
        );
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
}

#[test]
fn help_says_what_the_tool_and_bench_do() {
    let out = surfcl(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("interest points") && text.contains("--npz"),
        "{text}"
    );
    let out = surfcl(&["bench", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("boat image") && !text.contains("on synthetic frames"),
        "{text}"
    );
    for command in ["detect", "match", "stream"] {
        let out = surfcl(&[command, "--help"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("--npz <FILE.npz>"),
            "{command}"
        );
    }
}
