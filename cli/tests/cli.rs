//! End-to-end tests of the `surfcl` binary: JSON contract, `--draw`, error handling (exit codes,
//! messages, no panics), matching with ground truth, and `eval` on the Oxford boat sequence.
//!
//! Everything runs on `--backend cpu` so that the results do not depend on the machine's OpenCL.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;

use common::{boat, path_str, scratch_dir, stderr, surfcl};

/// A scratch path unique to one test.
fn scratch(name: &str) -> PathBuf {
    scratch_dir("surfcl-cli-tests").join(name)
}

/// Image size as read by the `image` crate (independently of the tool's loader).
fn image_size(path: &Path) -> (u32, u32) {
    image::image_dimensions(path).unwrap()
}

/// Side of the centre crops used to keep the debug-build tests fast.
const CROP: (u32, u32) = (400, 320);

/// A 400x320 centre crop of the boat sequence as PNG files, with the homographies rewritten for
/// the crops (`H' = T(-o) H T(o)`, `o` the crop offset), built once per test process. Also
/// exercises the PNG path of the loader.
fn small_boat() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("small-boat");
        std::fs::create_dir_all(&dir).unwrap();
        let (w, h) = image_size(&boat().join("img1.pgm"));
        let (ox, oy) = ((w - CROP.0) / 2, (h - CROP.1) / 2);
        for k in 1..=6 {
            let img = image::open(boat().join(format!("img{k}.pgm")))
                .unwrap()
                .to_luma8();
            let crop = image::imageops::crop_imm(&img, ox, oy, CROP.0, CROP.1).to_image();
            crop.save(dir.join(format!("img{k}.png"))).unwrap();
            if k > 1 {
                let text = std::fs::read_to_string(boat().join(format!("H1to{k}p"))).unwrap();
                let m: Vec<f64> = text
                    .split_whitespace()
                    .map(|v| v.parse().unwrap())
                    .collect();
                assert_eq!(m.len(), 9);
                let t = |dx: f64, dy: f64| [1.0, 0.0, dx, 0.0, 1.0, dy, 0.0, 0.0, 1.0];
                let mul = |a: &[f64], b: &[f64]| {
                    let mut c = [0.0; 9];
                    for r in 0..3 {
                        for col in 0..3 {
                            c[r * 3 + col] = (0..3).map(|i| a[r * 3 + i] * b[i * 3 + col]).sum();
                        }
                    }
                    c
                };
                let (ox, oy) = (f64::from(ox), f64::from(oy));
                let hc = mul(&mul(&t(-ox, -oy), &m), &t(ox, oy));
                let mut out = String::new();
                for r in 0..3 {
                    out.push_str(&format!(
                        "{:e} {:e} {:e}\n",
                        hc[r * 3],
                        hc[r * 3 + 1],
                        hc[r * 3 + 2]
                    ));
                }
                std::fs::write(dir.join(format!("H1to{k}p")), out).unwrap();
            }
        }
        dir
    })
}

/// Asserts a clean runtime failure: exit status 1, an `error:` line naming `needle`, no panic.
fn assert_clean_failure(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.starts_with("error: "), "stderr: {err}");
    assert!(
        err.contains(needle),
        "stderr should mention {needle}: {err}"
    );
    assert!(!err.contains("panicked"), "stderr: {err}");
    assert!(out.stdout.is_empty(), "stdout: {:?}", out.stdout);
}

#[test]
fn detect_json_on_stdout_is_the_contract() {
    let img = boat().join("img1.pgm");
    let out = surfcl(&["detect", path_str(&img), "--backend", "cpu", "--json", "-"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    // Stdout holds exactly one JSON document: the human summary went to stderr.
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (w, h) = image_size(&img);
    assert_eq!(v["width"].as_u64(), Some(u64::from(w)));
    assert_eq!(v["height"].as_u64(), Some(u64::from(h)));
    assert_eq!(v["detector"], "surf");
    assert_eq!(v["backend"], "cpu");
    assert!(v["device"].is_string());
    assert!(v["dropped"].is_u64());
    assert!(v["timings_ms"].as_object().is_some_and(|t| !t.is_empty()));
    let kps = v["keypoints"].as_array().unwrap();
    let descs = v["descriptors"].as_array().unwrap();
    assert!(kps.len() > 500, "{} keypoints", kps.len());
    assert_eq!(kps.len(), descs.len());
    for kp in kps {
        let x = kp["x"].as_f64().unwrap();
        let y = kp["y"].as_f64().unwrap();
        assert!((0.0..f64::from(w)).contains(&x) && (0.0..f64::from(h)).contains(&y));
        assert!(kp["scale"].as_f64().unwrap() > 1.0);
        let o = kp["orientation"].as_f64().unwrap();
        assert!((0.0..std::f64::consts::TAU + 1e-6).contains(&o));
        assert!(kp["response"].as_f64().unwrap() >= 0.0004 * 0.999);
        assert!(matches!(kp["laplacian"].as_i64(), Some(-1 | 1)));
    }
    // Strongest first.
    let responses: Vec<f64> = kps
        .iter()
        .map(|k| k["response"].as_f64().unwrap())
        .collect();
    assert!(responses.windows(2).all(|p| p[0] >= p[1]));
    for d in descs {
        let d = d.as_array().unwrap();
        assert_eq!(d.len(), 64);
        let norm: f64 = d
            .iter()
            .map(|x| x.as_f64().unwrap().powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "norm {norm}");
    }
}

#[test]
fn detect_max_keypoints_drops_the_weakest_and_draw_writes_a_png() {
    let img = small_boat().join("img1.png");
    let png = scratch("detect-draw.png");
    let json = scratch("detect-draw.json");
    let _ = std::fs::remove_file(&png);
    let out = surfcl(&[
        "detect",
        path_str(&img),
        "--backend",
        "cpu",
        "--upright",
        "--max-keypoints",
        "100",
        "--draw",
        path_str(&png),
        "--json",
        path_str(&json),
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    // The human summary is on stdout when the JSON goes to a file.
    assert!(String::from_utf8_lossy(&out.stdout).contains("100 keypoints"));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["keypoints"].as_array().unwrap().len(), 100);
    assert!(v["dropped"].as_u64().unwrap() > 0);
    assert!(
        v["keypoints"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["orientation"] == 0.0)
    );
    let drawn = image::open(&png).unwrap().to_rgb8();
    assert_eq!(drawn.dimensions(), image_size(&img));
    // Keypoints were drawn in colour on a grey picture.
    assert!(drawn.pixels().any(|p| p[0] != p[1] || p[1] != p[2]));
}

#[test]
fn bad_input_files_fail_cleanly() {
    // Missing file.
    let missing = scratch("does-not-exist.png");
    let out = surfcl(&["detect", path_str(&missing), "--backend", "cpu"]);
    assert_clean_failure(&out, "does-not-exist.png");

    // Empty file.
    let empty = scratch("empty.png");
    std::fs::write(&empty, b"").unwrap();
    let out = surfcl(&["detect", path_str(&empty), "--backend", "cpu"]);
    assert_clean_failure(&out, "empty");

    // Text file.
    let text = scratch("notes.png");
    std::fs::write(&text, b"this is not an image\n").unwrap();
    let out = surfcl(&["detect", path_str(&text), "--backend", "cpu"]);
    assert_clean_failure(&out, "notes.png");

    // Truncated PNG: a valid 64x64 PNG cut in the middle.
    let mut pixels = image::GrayImage::new(64, 64);
    for (x, y, p) in pixels.enumerate_pixels_mut() {
        p[0] = ((x * 7 + y * 13) % 256) as u8;
    }
    let full = scratch("full.png");
    pixels.save(&full).unwrap();
    let bytes = std::fs::read(&full).unwrap();
    let truncated = scratch("truncated.png");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = surfcl(&["detect", path_str(&truncated), "--backend", "cpu"]);
    assert_clean_failure(&out, "truncated.png");
    // The intact file is fine (so the failure above is due to the truncation).
    let out = surfcl(&["detect", path_str(&full), "--backend", "cpu"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
}

#[test]
fn usage_errors_exit_2() {
    let img = boat().join("img1.pgm");
    for args in [
        vec!["detect"],
        vec!["detect", path_str(&img), "--detector", "sift"],
        vec![
            "detect",
            path_str(&img),
            "--threshold",
            "-1",
            "--backend",
            "cpu",
        ],
        vec![
            "detect",
            path_str(&img),
            "--octaves",
            "9",
            "--backend",
            "cpu",
        ],
        vec![
            "detect",
            path_str(&img),
            "--max-keypoints",
            "0",
            "--backend",
            "cpu",
        ],
        vec!["frobnicate"],
    ] {
        let out = surfcl(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
    }
}

#[test]
fn match_with_homography_reports_correct_and_correct_ratio() {
    let dir = small_boat();
    let png = scratch("match-draw.png");
    let out = surfcl(&[
        "match",
        path_str(&dir.join("img1.png")),
        path_str(&dir.join("img2.png")),
        "--backend",
        "cpu",
        "--homography",
        path_str(&dir.join("H1to2p")),
        "--json",
        "-",
        "--draw",
        path_str(&png),
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n1 = v["keypoints1"].as_array().unwrap().len();
    let n2 = v["keypoints2"].as_array().unwrap().len();
    let matches = v["matches"].as_array().unwrap();
    assert!(n1 > 100 && n2 > 100, "{n1} / {n2} keypoints");
    assert!(matches.len() > 30, "{} matches", matches.len());
    let mut last_query = None;
    for m in matches {
        let q = m["query"].as_u64().unwrap() as usize;
        let t = m["train"].as_u64().unwrap() as usize;
        assert!(q < n1 && t < n2);
        assert!(last_query < Some(q), "one match per query, in query order");
        last_query = Some(q);
        assert!(m["distance"].as_f64().unwrap() >= 0.0);
    }
    let correct = v["correct"].as_u64().unwrap() as usize;
    let correct_ratio = v["correct_ratio"].as_f64().unwrap();
    assert!(correct > 0 && correct <= matches.len());
    assert!((correct_ratio - correct as f64 / matches.len() as f64).abs() < 1e-9);
    // Boat 1-2 is an easy pair: most matches must be right.
    assert!(correct_ratio > 0.5, "correct_ratio {correct_ratio}");
    let drawn = image::open(&png).unwrap();
    assert_eq!(drawn.width(), 2 * CROP.0);
    assert_eq!(drawn.height(), CROP.1);
}

#[test]
fn match_without_homography_has_no_correct_key_and_bad_homography_fails() {
    let img1 = small_boat().join("img1.png");
    let base = [
        "match",
        path_str(&img1),
        path_str(&img1),
        "--backend",
        "cpu",
        "--upright",
    ];
    let out = surfcl(&[&base[..], &["--json", "-"]].concat());
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("correct").is_none() && v.get("correct_ratio").is_none());
    // An image matched with itself: every match is the identity.
    let matches = v["matches"].as_array().unwrap();
    assert!(!matches.is_empty());
    assert!(matches.iter().all(|m| m["query"] == m["train"]));

    let bad = scratch("H-malformed");
    std::fs::write(&bad, "1 0 0\n0 1 zero\n").unwrap();
    let out = surfcl(&[&base[..], &["--homography", path_str(&bad)]].concat());
    assert_clean_failure(&out, "H-malformed");
}

#[test]
fn eval_on_boat_prints_one_row_per_pair() {
    let json = scratch("eval.json");
    let out = surfcl(&[
        "eval",
        path_str(small_boat()),
        "--backend",
        "cpu",
        "--json",
        path_str(&json),
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("1-")).collect();
    assert_eq!(rows.len(), 5, "stdout:\n{stdout}");
    for (k, row) in rows.iter().enumerate() {
        assert!(row.starts_with(&format!("1-{} ", k + 2)), "{row}");
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 5);
    let kp1 = pairs[0]["keypoints1"].as_u64().unwrap();
    assert!(kp1 > 0);
    for p in pairs {
        assert_eq!(p["keypoints1"].as_u64(), Some(kp1), "img1 is detected once");
        let (m, c) = (
            p["matches"].as_u64().unwrap(),
            p["correct"].as_u64().unwrap(),
        );
        assert!(c <= m);
        let r = p["repeatability"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&r));
    }
    // Difficulty grows along the sequence (zoom + rotation): 1-2 beats 1-6.
    let correct_ratio = |i: usize| pairs[i]["correct_ratio"].as_f64().unwrap();
    assert!(correct_ratio(0) > correct_ratio(4), "{pairs:?}");
    assert!(pairs[0]["correct"].as_u64() > pairs[4]["correct"].as_u64());
}

#[test]
fn devices_always_exits_0() {
    let out = surfcl(&["devices"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(!out.stdout.is_empty());
}

#[test]
fn harris_detection_and_q7_matching_work_end_to_end() {
    let dir = small_boat();
    let img1 = dir.join("img1.png");
    let out = surfcl(&[
        "detect",
        path_str(&img1),
        "--backend",
        "cpu",
        "--detector",
        "harris",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["detector"], "harris");
    let kps = v["keypoints"].as_array().unwrap();
    assert!(kps.len() > 50, "{} Harris corners", kps.len());
    // Harris corners carry no Laplacian sign and are described upright.
    assert!(
        kps.iter()
            .all(|k| k["laplacian"] == 0 && k["orientation"] == 0.0)
    );

    let out = surfcl(&[
        "match",
        path_str(&img1),
        path_str(&dir.join("img2.png")),
        "--backend",
        "cpu",
        "--descriptor",
        "q7",
        "--cross-check",
        "--homography",
        path_str(&dir.join("H1to2p")),
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let matches = v["matches"].as_array().unwrap();
    assert!(matches.len() > 30, "{} Q7 matches", matches.len());
    // Cross-checked: no train point is used twice.
    let mut trains: Vec<u64> = matches
        .iter()
        .map(|m| m["train"].as_u64().unwrap())
        .collect();
    trains.sort_unstable();
    trains.dedup();
    assert_eq!(trains.len(), matches.len());
    assert!(
        v["correct_ratio"].as_f64().unwrap() > 0.5,
        "{}",
        v["correct_ratio"]
    );
}
