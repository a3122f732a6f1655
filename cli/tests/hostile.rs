//! The `surfcl` binary against hostile inputs and environments (issue 16): a closed standard
//! output, absurd option values, FIFOs and directories where files are expected, output paths
//! that cannot be written, a full disk (`RLIMIT_FSIZE`), singular homographies, truncated files,
//! unknown picture formats, no OpenCL at all. Each case must end with a clear message and exit
//! status, never a panic or a hang, and a failed run must leave no output file behind.
//!
//! Also: the parameters recorded in every JSON report, the stream on the CPU backend, the match
//! picture's line limit.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{boat, command, cpu_match_json, path_str as s, stderr, surfcl};

/// A fresh, empty folder for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("surfcl-hostile")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A one-frame 64x64 benchmark on the CPU backend (run with `SURFCL_BENCH_IMAGE=synthetic`):
/// quick enough for a debug build.
const SMALL_CPU_BENCH: [&str; 7] = [
    "bench",
    "--sizes",
    "64x64",
    "--frames",
    "1",
    "--backend",
    "cpu",
];

/// Small crops of the boat sequence (PGM, 160x120, shifted a little from frame to frame) and the
/// matching homography for `a.pgm` -> `b.pgm` (a pure shift), made once.
fn frames() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = fresh_dir("frames");
        let img = image::open(boat().join("img1.pgm")).unwrap().to_luma8();
        for (name, dx, dy) in [
            ("a.pgm", 300, 250),
            ("b.pgm", 304, 252),
            ("c.pgm", 309, 255),
        ] {
            image::imageops::crop_imm(&img, dx, dy, 160, 120)
                .to_image()
                .save(dir.join(name))
                .unwrap();
        }
        // b(x, y) = a(x + 4, y + 2): a point of a maps to (x - 4, y - 2) in b.
        std::fs::write(dir.join("H-ab"), "1 0 -4\n0 1 -2\n0 0 1\n").unwrap();
        dir
    })
}

/// Waits for `child` at most `limit`; a child still running then is killed and the test fails
/// (a hang is the bug being tested for).
fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?} (hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `surfcl args` with a standard output whose reader is already gone: every write to it
/// fails with `EPIPE` (Rust ignores `SIGPIPE`), as in `surfcl ... | head -1` once `head` exits.
fn with_closed_stdout(args: &[&str], env: &[(&str, &str)]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut c = command(args);
    c.envs(env.iter().copied())
        .stdout(writer)
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    drop(c); // the parent's copy of the pipe's write end
    wait_bounded(child, Duration::from_secs(120), &args.join(" "))
}

/// Arguments and environment of one run.
type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>);

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = frames();
    let a = dir.join("a.pgm");
    let oxford = boat();
    let cases: Vec<Case<'_>> = vec![
        (vec!["devices"], vec![]),
        (vec!["stream", s(dir), "--backend", "cpu"], vec![]),
        (
            vec!["stream", s(dir), "--backend", "cpu", "--json", "-"],
            vec![],
        ),
        (
            vec!["detect", s(&a), "--backend", "cpu", "--json", "-"],
            vec![],
        ),
        (vec!["detect", s(&a), "--backend", "cpu"], vec![]),
        (
            SMALL_CPU_BENCH.to_vec(),
            vec![("SURFCL_BENCH_IMAGE", "synthetic")],
        ),
        (
            vec![
                "eval",
                s(&oxford),
                "--backend",
                "cpu",
                "--max-keypoints",
                "50",
            ],
            vec![],
        ),
    ];
    for (args, env) in cases {
        let out = with_closed_stdout(&args, &env);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

/// `surfcl ... 2>&1 | head -1`: standard error is the same closed pipe. Nothing can be read
/// back; a panic would show as status 101.
#[test]
fn closed_stdout_and_stderr_end_quietly_even_on_the_cpu_fallback() {
    let dir = frames();
    let a = dir.join("a.pgm");
    let (key, vendors) = no_opencl_env();
    let vendors = vendors.to_str().unwrap();
    for args in [
        vec!["detect", s(&a)],
        vec!["stream", s(dir)],
        vec!["detect", s(&a), "--json", "-"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut c = command(&args);
        c.env(key, vendors)
            .stdout(writer.try_clone().unwrap())
            .stderr(writer);
        let child = c.spawn().unwrap();
        drop(c);
        let out = wait_bounded(child, Duration::from_secs(120), &args.join(" "));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {:?}", out.status);
    }
}

#[test]
fn bench_frames_is_bounded() {
    for frames in ["18446744073709551615", "1000000000000", "100001", "0", "-1"] {
        let option = format!("--frames={frames}");
        let out = surfcl(&["bench", &option, "--backend", "cpu"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "--frames {frames}: {err}");
        assert!(err.contains("--frames"), "{err}");
        assert!(
            !err.contains("panicked") && !err.contains("capacity"),
            "{err}"
        );
    }
}

#[test]
fn fifos_directories_and_devices_are_refused_without_blocking() {
    let dir = fresh_dir("fifo");
    let src = frames();
    std::fs::copy(src.join("a.pgm"), dir.join("a.pgm")).unwrap();
    std::fs::copy(src.join("c.pgm"), dir.join("c.pgm")).unwrap();
    let fifo = dir.join("b.png");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::create_dir(dir.join("d.pgm")).unwrap();

    // The stream reports the FIFO and the directory and goes on with the real frames.
    let json = dir.join("out.json");
    let child = command(&["stream", s(&dir), "--backend", "cpu", "--json", s(&json)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(child, Duration::from_secs(60), "stream with a FIFO");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v["frames"].as_array().unwrap();
    let paths: Vec<&str> = rows.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(rows.len(), 4, "{paths:?}");
    assert!(
        rows[1]["error"].as_str().unwrap().contains("FIFO"),
        "{}",
        rows[1]
    );
    assert!(
        rows[3]["error"].as_str().unwrap().contains("directory"),
        "{}",
        rows[3]
    );
    assert!(rows[0].get("error").is_none() && rows[2].get("error").is_none());
    assert_eq!(rows[2]["previous"], 0, "c is matched against a");

    // One file at a time: a FIFO, a directory, a device, as an image and as a homography.
    let a = dir.join("a.pgm");
    for (args, needle) in [
        (vec!["detect", s(&fifo)], "FIFO"),
        (vec!["detect", s(&dir)], "directory"),
        (vec!["detect", "/dev/zero"], "device"),
        (
            vec!["match", s(&a), s(&a), "--homography", s(&fifo)],
            "FIFO",
        ),
    ] {
        let child = command(&[&args[..], &["--backend", "cpu"]].concat())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_bounded(child, Duration::from_secs(60), &args.join(" "));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(needle) && err.contains("not a regular file"),
            "{err}"
        );
    }
}

/// Names of the entries of `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn bad_output_paths_fail_before_the_work_and_leave_nothing() {
    let dir = fresh_dir("bad-output");
    let a = frames().join("a.pgm");
    let ok = dir.join("ok.png");
    for (extra, needle) in [
        (vec!["--json", "/nonexistent-surfcl-dir/x.json"], "x.json"),
        (vec!["--json", s(&dir)], "is a directory"),
    ] {
        let args = [
            &["detect", s(&a), "--backend", "cpu", "--draw", s(&ok)][..],
            &extra[..],
        ]
        .concat();
        let out = surfcl(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{err}");
        // Nothing was computed (the summary line comes after detection) and nothing written.
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    }
    // The same for match, eval, stream and bench.
    let bad = "/nonexistent-surfcl-dir/x.json";
    let oxford = boat();
    for args in [
        vec!["match", s(&a), s(&a), "--backend", "cpu", "--json", bad],
        vec!["eval", s(&oxford), "--backend", "cpu", "--json", bad],
        vec!["stream", s(frames()), "--backend", "cpu", "--json", bad],
        vec![
            "bench",
            "--sizes",
            "64x64",
            "--backend",
            "cpu",
            "--json",
            bad,
        ],
        vec![
            "match",
            s(&a),
            s(&a),
            "--backend",
            "cpu",
            "--draw",
            "/nonexistent-surfcl-dir/x.png",
        ],
    ] {
        let start = Instant::now();
        let out = surfcl(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("/nonexistent-surfcl-dir/x."), "{err}");
        assert!(out.stdout.is_empty(), "{args:?}: work was done");
        assert!(start.elapsed() < Duration::from_secs(10), "{args:?}");
    }
}

/// Runs `surfcl args` with the largest file it may write limited to `kib` KiB (`RLIMIT_FSIZE`)
/// and `SIGXFSZ` ignored, so that a write past the limit fails with `EFBIG` as on a full disk.
fn with_file_size_limit(kib: u64, args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {kib} && exec \"$@\""))
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_surfcl"))
        .args(args)
        .env_remove("SURFCL_DEVICE")
        .output()
        .unwrap()
}

#[test]
fn a_full_disk_leaves_no_partial_output_and_names_the_file() {
    let img = frames().join("a.pgm");
    let base = [
        "detect",
        s(&img),
        "--backend",
        "cpu",
        "--max-keypoints",
        "10000",
    ];
    // Sizes of the complete outputs.
    let dir = fresh_dir("disk-full-sizes");
    let (png, json) = (dir.join("ok.png"), dir.join("big.json"));
    let out = surfcl(&[&base[..], &["--draw", s(&png), "--json", s(&json)]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let png_size = std::fs::metadata(&png).unwrap().len();
    let json_size = std::fs::metadata(&json).unwrap().len();
    assert!(
        png_size < json_size,
        "{png_size} {json_size}: the picture must be the smaller"
    );

    // Too small for either.
    for option in ["--json", "--draw"] {
        let dir = fresh_dir(&format!("disk-full{option}"));
        let target = dir.join(if option == "--json" {
            "out.json"
        } else {
            "out.png"
        });
        let out = with_file_size_limit(4, &[&base[..], &[option, s(&target)]].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{option}: {err}");
        assert!(
            err.contains(s(&target)) && err.contains("too large"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(listing(&dir).is_empty(), "{option}: {:?}", listing(&dir));
    }

    // Room for the picture but not for the JSON: the run fails, and its complete picture is
    // not left behind either.
    let dir = fresh_dir("disk-full-both");
    let (png, json) = (dir.join("ok.png"), dir.join("big.json"));
    let kib = (png_size + json_size) / 2 / 1024;
    let out = with_file_size_limit(
        kib,
        &[&base[..], &["--draw", s(&png), "--json", s(&json)]].concat(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("big.json"), "{err}");
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
}

#[test]
fn singular_and_oversized_homographies_are_refused_clearly() {
    let dir = fresh_dir("homography");
    let a = frames().join("a.pgm");
    let cases = [
        ("H-zero", "0 0 0\n0 0 0\n0 0 0\n".to_string(), "singular"),
        ("H-huge", "1e308 1e308 1e308\n".repeat(3), "singular"),
        ("H-rank2", "1 2 3\n4 5 6\n5 7 9\n".to_string(), "singular"),
        (
            "H-nan",
            "1 0 0\n0 nan 0\n0 0 1\n".to_string(),
            "not a finite number",
        ),
        (
            "H-big",
            "1 0 0\n0 1 0\n0 0 1\n".repeat(10_000),
            "larger than",
        ),
    ];
    for (name, text, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let out = surfcl(&[
            "match",
            s(&a),
            s(&a),
            "--backend",
            "cpu",
            "--homography",
            s(&path),
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(name) && err.contains(needle), "{name}: {err}");
        assert!(!err.contains("cannot decode image"), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}: no result may be printed");
    }
}

#[test]
fn truncated_pgm_says_truncated() {
    let dir = fresh_dir("truncated");
    let path = dir.join("short.pgm");
    let mut bytes = b"P5\n64 64\n255\n".to_vec();
    bytes.extend(std::iter::repeat_n(7u8, 1000));
    std::fs::write(&path, bytes).unwrap();
    let out = surfcl(&["detect", s(&path), "--backend", "cpu"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("short.pgm") && err.contains("truncated"),
        "{err}"
    );
    assert!(!err.contains("fill whole buffer"), "{err}");
}

#[test]
fn draw_format_follows_the_extension() {
    let dir = fresh_dir("draw-format");
    let a = frames().join("a.pgm");
    for (name, magic) in [
        ("k.jpg", &b"\xFF\xD8\xFF"[..]),
        ("k.JPEG", &b"\xFF\xD8\xFF"[..]),
        ("k.png", &b"\x89PNG"[..]),
        ("k.ppm", &b"P6"[..]),
    ] {
        let path = dir.join(name);
        let out = surfcl(&["detect", s(&a), "--backend", "cpu", "--draw", s(&path)]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.starts_with(magic), "{name}: {:?}", &bytes[..4]);
        assert_eq!(image::open(&path).unwrap().width(), 160);
    }
    for name in ["k.gif", "k.webp", "k"] {
        let path = dir.join(name);
        let out = surfcl(&["detect", s(&a), "--backend", "cpu", "--draw", s(&path)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(".png, .jpg/.jpeg or .ppm"), "{err}");
        assert!(!path.exists() && out.stdout.is_empty(), "{name}");
    }
}

/// An empty vendor folder hides every OpenCL platform from a process (ocl-icd).
fn no_opencl_env() -> (&'static str, PathBuf) {
    let vendors = Path::new(env!("CARGO_TARGET_TMPDIR")).join("surfcl-hostile-no-icd");
    std::fs::create_dir_all(&vendors).unwrap();
    ("OCL_ICD_VENDORS", vendors)
}

fn stream_json(args: &[&str], env: Option<(&str, &Path)>) -> (Value, String) {
    let mut c = command(args);
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), stderr(&out))
}

/// `surfcl <args> --backend cpu --json -`, which must succeed: its JSON report.
fn cpu_json(args: &[&str]) -> Value {
    let args = [args, &["--backend", "cpu", "--json", "-"]].concat();
    stream_json(&args, None).0
}

#[test]
fn stream_backend_cpu_runs_on_the_cpu_even_without_opencl() {
    let dir = frames();
    let (key, vendors) = no_opencl_env();
    // The environment really hides OpenCL (else this test would prove nothing).
    let mut devices = command(&["devices"]);
    let devices = devices.env(key, &vendors).output().unwrap();
    assert!(
        String::from_utf8_lossy(&devices.stdout).contains("no OpenCL"),
        "{}",
        String::from_utf8_lossy(&devices.stdout)
    );

    // Keypoint counts of frame-by-frame detection on the CPU.
    let counts: Vec<usize> = ["a.pgm", "b.pgm", "c.pgm"]
        .iter()
        .map(|f| {
            let out = surfcl(&["detect", s(&dir.join(f)), "--backend", "cpu", "--json", "-"]);
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            v["keypoints"].as_array().unwrap().len()
        })
        .collect();
    let check = |v: &Value| {
        assert_eq!(v["backend"], "cpu", "{}", v["device"]);
        assert!(
            v["device"].as_str().unwrap().contains("CPU"),
            "{}",
            v["device"]
        );
        let rows = v["frames"].as_array().unwrap();
        assert_eq!(rows.len(), 3);
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(
                row["keypoints"].as_array().unwrap().len(),
                counts[k],
                "frame {k}"
            );
        }
        assert!(rows[0]["previous"].is_null());
        assert_eq!(rows[1]["previous"], 0);
        assert_eq!(rows[2]["previous"], 1);
        // Consecutive crops of one picture match.
        assert!(
            rows[1]["matches"].as_array().unwrap().len() > 10,
            "{}",
            rows[1]["matches"]
        );
        assert_eq!(v["params"]["matching"]["descriptor"], "f32");
    };
    let args = ["stream", s(dir), "--backend", "cpu", "--json", "-"];
    // With OpenCL installed (PoCL here): still the CPU.
    check(&stream_json(&args, None).0);
    // Without any OpenCL.
    check(&stream_json(&args, Some((key, &vendors))).0);
    // `auto` without OpenCL falls back to the CPU and says so.
    let (v, err) = stream_json(&["stream", s(dir), "--json", "-"], Some((key, &vendors)));
    check(&v);
    assert!(err.contains("using the CPU backend"), "{err}");
}

#[test]
fn every_json_report_records_its_parameters() {
    let dir = frames();
    let a = dir.join("a.pgm");
    let b = dir.join("b.pgm");
    let v = cpu_json(&[
        "detect",
        s(&a),
        "--max-keypoints",
        "77",
        "--threshold",
        "0.001",
        "--octaves",
        "3",
        "--upright",
    ]);
    let p = &v["params"];
    assert_eq!(p["detector"], "surf");
    assert_eq!(p["max_keypoints"], 77);
    assert_eq!(p["threshold"].as_f64(), Some(0.001));
    assert_eq!(p["surf"]["octaves"], 3);
    assert_eq!(p["surf"]["upright"], true);
    assert_eq!(p["surf"]["precision"], "f32");
    assert!(p.get("matching").is_none());

    let v = cpu_json(&[
        "match",
        s(&a),
        s(&b),
        "--detector",
        "harris",
        "--ratio",
        "0.7",
        "--cross-check",
        "--descriptor",
        "q7",
    ]);
    let p = &v["params"];
    assert_eq!(p["detector"], "harris");
    assert_eq!(p["threshold_relative"], true);
    assert!(p["harris"]["k"].is_f64() && p.get("surf").is_none());
    assert_eq!(p["matching"]["ratio"].as_f64(), Some(0.7));
    assert_eq!(p["matching"]["cross_check"], true);
    assert_eq!(p["matching"]["descriptor"], "q7");

    // eval on a two-image Oxford layout.
    let oxford = fresh_dir("params-eval");
    std::fs::copy(&a, oxford.join("img1.pgm")).unwrap();
    std::fs::copy(&b, oxford.join("img2.pgm")).unwrap();
    std::fs::copy(dir.join("H-ab"), oxford.join("H1to2p")).unwrap();
    let v = cpu_json(&["eval", s(&oxford), "--ratio", "0.6"]);
    assert_eq!(v["params"]["matching"]["ratio"].as_f64(), Some(0.6));
    assert!(
        v["pairs"][0]["correct"].as_u64().unwrap() > 10,
        "{}",
        v["pairs"]
    );

    let (v, _) = stream_json(
        &[
            "stream",
            s(dir),
            "--backend",
            "cpu",
            "--json",
            "-",
            "--max-keypoints",
            "55",
        ],
        None,
    );
    assert_eq!(v["params"]["max_keypoints"], 55);

    let out = command(&[&SMALL_CPU_BENCH[..], &["--json", "-", "--octaves", "2"]].concat())
        .env("SURFCL_BENCH_IMAGE", "synthetic")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params"]["surf"]["octaves"], 2);
    assert_eq!(v["image"], "synthetic");
    assert!(stderr(&out).contains("synthetic"), "{}", stderr(&out));
}

#[test]
fn bench_runs_only_the_sizes_asked_for() {
    let out = command(&[
        "bench", "--sizes", "160x120", "--frames", "1", "--json", "-",
    ])
    .env("SURFCL_BENCH_IMAGE", "synthetic")
    .output()
    .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1);
    assert_eq!(
        (sizes[0]["width"].as_u64(), sizes[0]["height"].as_u64()),
        (Some(160), Some(120))
    );
    if v["device"] == "-" {
        // No OpenCL on this machine: only the CPU rows exist.
        assert!(v["memory"].as_array().unwrap().is_empty());
        return;
    }
    let memory = v["memory"].as_array().unwrap();
    assert_eq!(memory.len(), 2, "f32 and u8 for the one size: {memory:?}");
    assert!(
        memory
            .iter()
            .all(|m| m["width"] == 160 && m["height"] == 120)
    );
    let matcher: Vec<u64> = v["matcher"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["n"].as_u64().unwrap())
        .collect();
    assert_eq!(matcher, vec![1024]);
    assert!(!err.contains("1920x1080"), "{err}");
}

#[test]
fn match_picture_draws_at_most_200_lines_unless_draw_all() {
    let dir = fresh_dir("draw-all");
    let (img1, img2) = (boat().join("img1.pgm"), boat().join("img2.pgm"));
    let h = boat().join("H1to2p");
    let base = cpu_match_json(&img1, &img2, &h);
    let (some, all) = (dir.join("some.png"), dir.join("all.png"));
    let out = surfcl(&[&base[..], &["--draw", s(&some)]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = v["matches"].as_array().unwrap().len();
    assert!(
        n > 400,
        "{n} matches: too few to tell the two pictures apart"
    );
    let out = surfcl(&[&base[..], &["--draw", s(&all), "--draw-all"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let coloured = |p: &Path| {
        image::open(p)
            .unwrap()
            .to_rgb8()
            .pixels()
            .filter(|p| p[0] != p[1] || p[1] != p[2])
            .count()
    };
    let (c_some, c_all) = (coloured(&some), coloured(&all));
    assert!(
        c_all as f64 > 1.5 * c_some as f64,
        "{c_some} vs {c_all} coloured pixels"
    );
    // --draw-all without --draw is a usage error.
    let out = surfcl(&["match", s(&img1), s(&img2), "--draw-all"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn both_harris_threshold_meanings_are_named_on_the_command_line() {
    let a = frames().join("a.pgm");
    let detect = |extra: &[&str]| {
        let mut args = vec!["detect", s(&a), "--backend", "cpu", "--json", "-"];
        args.extend_from_slice(extra);
        surfcl(&args)
    };
    // The node's meaning (a fraction of the strongest response), spelled out.
    let out = detect(&["--detector", "harris", "--relative-threshold", "0.05"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params"]["threshold"].as_f64(), Some(0.05));
    assert_eq!(v["params"]["threshold_relative"], true);
    // `--threshold` keeps its absolute meaning.
    let out = detect(&["--detector", "harris", "--threshold", "0.0001"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params"]["threshold_relative"], false);
    // SURF has one meaning; both at once is ambiguous: usage errors.
    for extra in [
        &["--relative-threshold", "0.05"][..],
        &[
            "--detector",
            "harris",
            "--threshold",
            "0.1",
            "--relative-threshold",
            "0.05",
        ],
    ] {
        let out = detect(extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
    }
}
