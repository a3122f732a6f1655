//! surfcl-node against ROS 2 itself: real ROS 2 nodes in Python (rclpy of ROS 2 Kilted and
//! Jazzy, from PyPI, on Fast DDS, the default RMW, with no XML profile and the kernel's default
//! socket buffers), each in a private network and PID namespace with the node
//! (`tests/ros2/run-netns.sh`), or across two network namespaces joined by a veth pair
//! (`tests/ros2/run-veth.sh`).
//!
//! The Python side needs the venvs and the `surfcl_msgs` build that
//! `scripts/ros2/setup-rclpy.sh` makes (`make test` runs it through
//! `scripts/install-deps.sh --test`); without them the tests fail and say so. The tests run
//! one at a time (they time message latency, which parallel runs would distort).
#![cfg(feature = "backend")]

mod child;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use child::{run_with_limit, tail};

/// One test at a time: they share the machine's cores with the node they time.
static SERIAL: Mutex<()> = Mutex::new(());

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn ros2_dir() -> PathBuf {
    manifest().join("tests/ros2")
}

fn photo() -> PathBuf {
    manifest().join("../data/oxford-boat/img1.pgm")
}

/// Panics with the set-up command when the distro's venv or `surfcl_msgs` build is missing.
fn require_distro(distro: &str) {
    let venv = ros2_dir().join(format!(".venv-{distro}/bin/python"));
    let msgs = ros2_dir().join(format!(
        ".colcon-{distro}/install/.surfcl-setup-fingerprint"
    ));
    assert!(
        venv.exists() && msgs.exists(),
        "ROS 2 {distro} for Python is not set up ({} / {} missing): run \
         `scripts/ros2/setup-rclpy.sh {distro}` (PyPI, once)",
        venv.display(),
        msgs.display()
    );
}

/// Runs `args` in a private network, PID and mount namespace (our one child process: ending
/// it ends everything it started); returns (status or None on timeout, stdout, stderr).
fn run_in_namespace(
    args: &[&std::ffi::OsStr],
    envs: &[(&str, &str)],
    limit: Duration,
) -> (Option<ExitStatus>, String, String) {
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--net",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "--",
    ])
    .args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    run_with_limit(cmd, limit)
}

/// `surfcl detect --backend cpu --json` of `image`, from the workspace's command-line binary
/// (built beside the node's when missing).
fn cli_keypoints_json(image: &Path) -> PathBuf {
    let node = Path::new(env!("CARGO_BIN_EXE_surfcl-node"));
    let cli = node.with_file_name("surfcl");
    if !cli.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let profile = node
            .parent()
            .and_then(Path::file_name)
            .and_then(|p| p.to_str())
            .unwrap_or("debug");
        let mut build = Command::new(cargo);
        build.args(["build", "-p", "surfcl-cli", "--bin", "surfcl"]);
        if profile == "release" {
            build.arg("--release");
        }
        let ok = build.status().map(|s| s.success()).unwrap_or(false);
        assert!(ok && cli.exists(), "could not build {}", cli.display());
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ros2-cli-keypoints-{}.json", std::process::id()));
    let status = Command::new(&cli)
        .args(["detect", "--backend", "cpu", "--json"])
        .arg(&out)
        .arg(image)
        .stdout(Stdio::null())
        .status()
        .expect("running surfcl detect");
    assert!(status.success(), "surfcl detect failed: {status}");
    out
}

/// The node's arguments in the rclpy probes: the CPU backend.
const PROBE_NODE_ARGS: &str = "--param backend:=cpu";

/// [`PROBE_NODE_ARGS`] under `use_sim_time`, with which the node reads `/clock` (only then, as
/// rclcpp).
const SIM_TIME_NODE_ARGS: &str = "--param backend:=cpu --param use_sim_time:=true";

/// Runs the rclpy probe `script` (in `tests/ros2`, with `args`) beside the node (started with
/// `node_args`) with `distro`'s ROS 2 in a private namespace (`run-netns.sh`, ROS domain
/// `domain`), within `limit`; panics unless the probe reports `"ok": true` and the node exits
/// with status 0 on the SIGINT that ends the session. Returns the node's and the probe's stderr.
fn rclpy_probe(
    distro: &str,
    domain: &str,
    script: &str,
    args: &[&std::ffi::OsStr],
    node_args: &str,
    limit: Duration,
) -> String {
    let mut command = vec![
        ros2_dir().join("run-netns.sh").into_os_string(),
        distro.into(),
        env!("CARGO_BIN_EXE_surfcl-node").into(),
        ros2_dir().join(script).into_os_string(),
    ];
    command.extend(args.iter().map(|a| a.to_os_string()));
    let command: Vec<&std::ffi::OsStr> = command.iter().map(|a| a.as_os_str()).collect();
    let (status, stdout, stderr) = run_in_namespace(
        &command,
        &[("DOMAIN", domain), ("NODE_ARGS", node_args)],
        limit,
    );
    eprintln!(
        "{distro} {script} stdout:\n{stdout}\nnode/probe stderr (tail):\n{}",
        tail(&stderr, 3000)
    );
    let status = status.unwrap_or_else(|| panic!("{script} timed out after {limit:?}"));
    assert!(
        stderr.contains("surfcl-node exit status after SIGINT: 0"),
        "the node did not exit with status 0 on SIGINT"
    );
    assert!(status.success(), "{script} failed with {status}: {stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.contains("\"ok\": true"), "{last}");
    stderr
}

/// Discovery both ways, the keypoints of a photo equal to `surfcl detect`'s, a 12 MB frame,
/// the standard parameter services (list, get, describe, a refused and an accepted set that
/// applies to the next frame), and exit status 0 on SIGINT, with `distro`'s rclpy.
fn graph_frames_parameters_sigint(distro: &str, domain: &str) {
    require_distro(distro);
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let photo = photo();
    let cli_json = cli_keypoints_json(&photo);
    rclpy_probe(
        distro,
        domain,
        "checks.py",
        &[
            "--image".as_ref(),
            photo.as_os_str(),
            "--cli-json".as_ref(),
            cli_json.as_os_str(),
        ],
        PROBE_NODE_ARGS,
        Duration::from_secs(240),
    );
    let _ = std::fs::remove_file(&cli_json);
}

#[test]
fn rclpy_kilted_graph_frames_parameters_sigint() {
    graph_frames_parameters_sigint("kilted", "161");
}

#[test]
fn rclpy_jazzy_graph_frames_parameters_sigint() {
    graph_frames_parameters_sigint("jazzy", "162");
}

/// Runs the `surfcl` command line in this process; panics unless it succeeds.
fn surfcl(args: &[&str]) {
    let status = surfcl_cli::main_with_args(std::iter::once("surfcl").chain(args.iter().copied()));
    assert_eq!(status, ExitCode::SUCCESS, "surfcl {args:?}");
}

/// The node's outputs in OpenCV, through the interface package as colcon installs it: an rclpy
/// subscriber (Kilted) receives the `keypoints` of two boat frames and the `matches` of the
/// second against the first, converts them with `surfcl_msgs.cv`, runs `cv2.drawKeypoints`
/// and `cv2.BFMatcher` on them (numpy and opencv-python-headless from PyPI, in the rclpy venv),
/// and compares every value with the CLI's JSON of the same images under the mapping of
/// docs/JSON.md ("Mapping to OpenCV"): `tests/ros2/cv_outputs.py`.
#[test]
fn rclpy_kilted_opencv_views_of_keypoints_and_matches_equal_the_cli() {
    require_distro("kilted");
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ros2_cv_outputs");
    std::fs::create_dir_all(&dir).expect("creating the test's folder");
    let boat = manifest().join("../data/oxford-boat");
    let (img1, img2) = (boat.join("img1.pgm"), boat.join("img2.pgm"));
    let (img1, img2) = (
        img1.to_str().expect("UTF-8 path"),
        img2.to_str().expect("UTF-8 path"),
    );
    let out = |name: &str| dir.join(name).to_str().expect("UTF-8 path").to_string();
    let (d1, d2, m) = (out("detect1.json"), out("detect2.json"), out("match.json"));
    surfcl(&["detect", img1, "--backend", "cpu", "--json", &d1]);
    surfcl(&["detect", img2, "--backend", "cpu", "--json", &d2]);
    // The node matches the current frame (query) against the previous one (train).
    surfcl(&["match", img2, img1, "--backend", "cpu", "--json", &m]);
    let (runner, probe) = (
        ros2_dir().join("run-netns.sh"),
        ros2_dir().join("cv_outputs.py"),
    );
    let args: Vec<&std::ffi::OsStr> = [
        runner.as_os_str(),
        "kilted".as_ref(),
        env!("CARGO_BIN_EXE_surfcl-node").as_ref(),
        probe.as_os_str(),
    ]
    .into_iter()
    .chain(
        [
            "--image1",
            img1,
            "--image2",
            img2,
            "--detect1",
            &d1,
            "--detect2",
            &d2,
            "--match",
            &m,
        ]
        .map(std::ffi::OsStr::new),
    )
    .collect();
    let (status, stdout, stderr) = run_in_namespace(
        &args,
        &[("DOMAIN", "166"), ("NODE_ARGS", "--param backend:=cpu")],
        Duration::from_secs(180),
    );
    eprintln!(
        "probe stdout:\n{stdout}\nnode/probe stderr (tail):\n{}",
        tail(&stderr, 3000)
    );
    let status = status.expect("OpenCV probe timed out after 180 s");
    assert!(
        status.success(),
        "OpenCV probe failed with {status}: {stdout}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.contains("\"ok\": true"), "{last}");
    // The module came from colcon's install space, not the source tree.
    assert!(
        last.contains(".colcon-kilted/install/"),
        "surfcl_msgs.cv not imported from the colcon install: {last}"
    );
    // Every check ran.
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        7,
        "{stdout}"
    );
}

/// One `latency <size> <topic> count=.. lost=.. p50_ms=.. max_ms=..` line of latency.py.
#[derive(Debug)]
struct Latency {
    topic: String,
    count: u32,
    lost: u32,
    p50_ms: f64,
    max_ms: f64,
}

fn parse_latency(stdout: &str) -> Vec<Latency> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix("latency ")?.split_whitespace();
            let _size = words.next()?;
            let topic = words.next()?.to_string();
            let mut field =
                |key: &str| -> Option<f64> { words.next()?.strip_prefix(key)?.parse().ok() };
            Some(Latency {
                topic,
                count: field("count=")? as u32,
                lost: field("lost=")? as u32,
                p50_ms: field("p50_ms=")?,
                max_ms: field("max_ms=")?,
            })
        })
        .collect()
}

fn env_ms(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The (p50, max) bounds in ms for one output at a default subscriber. They are for the debug
/// node that `cargo test` runs on a small CI machine loaded by parallel builds: its detection
/// keeps the cores busy for most of each frame, so the few frames it publishes wait for the CPU.
/// The release node's figures, far below these bounds, are in docs/BENCHMARKS.md ("At a default
/// ROS 2 subscriber").
/// `keypoints` and `matches`: `SURFCL_ROS2_P50_MS` (default 300), `SURFCL_ROS2_MAX_MS`
/// (800); `debug_image` (6 MB): `SURFCL_ROS2_IMAGE_P50_MS` (800), `SURFCL_ROS2_IMAGE_MAX_MS`
/// (2000).
fn latency_bounds(topic: &str) -> (f64, f64) {
    if topic == "debug_image" {
        (
            env_ms("SURFCL_ROS2_IMAGE_P50_MS", 800.0),
            env_ms("SURFCL_ROS2_IMAGE_MAX_MS", 2000.0),
        )
    } else {
        (
            env_ms("SURFCL_ROS2_P50_MS", 300.0),
            env_ms("SURFCL_ROS2_MAX_MS", 800.0),
        )
    }
}

/// Asserts that `r` (an output of a `what` subscriber at `size`) arrived complete and within
/// its [`latency_bounds`], after printing its figures.
fn check_latency(what: &str, size: &str, r: &Latency) {
    println!(
        "{what} default subscriber, {size} {}: {} samples, {} lost, p50 {:.1} ms, max {:.1} ms",
        r.topic, r.count, r.lost, r.p50_ms, r.max_ms
    );
    let (p50_bound, max_bound) = latency_bounds(&r.topic);
    assert!(r.count > 0, "{what} {size} {}: nothing received", r.topic);
    assert_eq!(r.lost, 0, "{what} {size} {}: samples lost", r.topic);
    assert!(
        r.p50_ms <= p50_bound,
        "{what} {size} {}: p50 {} ms over {p50_bound}",
        r.topic,
        r.p50_ms
    );
    assert!(
        r.max_ms <= max_bound,
        "{what} {size} {}: max {} ms over {max_bound}",
        r.topic,
        r.max_ms
    );
}

/// Publish (the node's DDS write) to callback of a default rclpy subscriber (raw, so Python's
/// decoding is not counted): `keypoints` (4096 keypoints with descriptors, 1.1 MB) and
/// `debug_image` (6 MB) of 1920x1080 frames, `keypoints` and `matches` of 4000x3000 frames;
/// no sample lost, each output within its [`latency_bounds`]; the figures are printed. Bursts
/// that overflow the subscriber's default 208 KiB socket buffer and slow reliable repair took
/// 2-17 s here (third_party/rustdds/PATCHES.md).
#[test]
fn rclpy_default_subscriber_latency() {
    require_distro("kilted");
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // At 4000x3000 the debug image is 36 MB of rgb8, a debugging aid rather than an output a
    // robot waits for: the outputs timed there are keypoints and matches.
    let runs = [
        ("1920x1080", "12", "2", "keypoints,debug_image", "true"),
        ("4000x3000", "4", "0.5", "keypoints,matches", "false"),
    ];
    for (size, frames, hz, topics, debug_image) in runs {
        let node_args = format!(
            "--param backend:=cpu --param max_keypoints:=4096 --param debug_image:={debug_image}"
        );
        let (status, stdout, stderr) = run_in_namespace(
            &[
                ros2_dir().join("run-netns.sh").as_os_str(),
                "kilted".as_ref(),
                env!("CARGO_BIN_EXE_surfcl-node").as_ref(),
                ros2_dir().join("latency.py").as_os_str(),
                "--image".as_ref(),
                photo().as_os_str(),
                "--size".as_ref(),
                size.as_ref(),
                "--frames".as_ref(),
                frames.as_ref(),
                "--hz".as_ref(),
                hz.as_ref(),
                "--topics".as_ref(),
                topics.as_ref(),
            ],
            &[("DOMAIN", "163"), ("NODE_ARGS", &node_args)],
            Duration::from_secs(120),
        );
        eprintln!(
            "{size} probe stdout:\n{stdout}\nnode/probe stderr (tail):\n{}",
            tail(&stderr, 2000)
        );
        let status = status.expect("latency test timed out after 120 s");
        assert!(status.success(), "latency probe failed with {status}");
        let results = parse_latency(&stdout);
        assert_eq!(results.len(), 2, "{topics} expected");
        for r in &results {
            check_latency("rclpy", size, r);
        }
    }
}

/// The same measurement with a default Eclipse Cyclone DDS subscriber (the peer venv of
/// `tests/interop_cyclone.rs`; its configuration only keeps discovery on loopback), 1920x1080.
#[test]
fn cyclone_default_subscriber_latency() {
    let python = manifest().join("tests/peer/.venv/bin/python");
    assert!(
        python.exists(),
        "no Cyclone DDS peer venv ({}): run ros-node/tests/peer/setup.sh",
        python.display()
    );
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (status, stdout, stderr) = run_in_namespace(
        &[
            ros2_dir().join("run-netns.sh").as_os_str(),
            "cyclone".as_ref(),
            env!("CARGO_BIN_EXE_surfcl-node").as_ref(),
            ros2_dir().join("latency_cyclone.py").as_os_str(),
            "--domain".as_ref(),
            "165".as_ref(),
            "--image".as_ref(),
            photo().as_os_str(),
            "--frames".as_ref(),
            "8".as_ref(),
            "--hz".as_ref(),
            "1".as_ref(),
        ],
        &[
            ("DOMAIN", "165"),
            (
                "NODE_ARGS",
                "--param backend:=cpu --param max_keypoints:=4096 --param debug_image:=true",
            ),
        ],
        Duration::from_secs(120),
    );
    eprintln!(
        "probe stdout:\n{stdout}\nnode/probe stderr (tail):\n{}",
        tail(&stderr, 2000)
    );
    let status = status.expect("Cyclone latency test timed out after 120 s");
    assert!(
        status.success(),
        "Cyclone latency probe failed with {status}"
    );
    let results = parse_latency(&stdout);
    assert_eq!(results.len(), 2, "keypoints and debug_image expected");
    for r in &results {
        check_latency("Cyclone DDS", "1920x1080", r);
    }
}

/// Two machines: the node in one network namespace, an rclpy subscriber in another, joined
/// only by a veth pair. With `ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET` (ROS 2's default) on both
/// sides the subscriber gets keypoints for the frames it publishes; with `LOCALHOST` it sees
/// no publisher at all, unless the node names the subscriber's address in `ROS_STATIC_PEERS`:
/// then the node's unicast announcements (the RustDDS patch's static peers) are the only way
/// the subscriber, which under `LOCALHOST` neither sends nor hears multicast discovery beyond
/// its own host, can find it (a static peer that is another address of the same subnet finds
/// nothing).
#[test]
fn rclpy_across_two_network_namespaces_subnet_localhost_and_static_peers() {
    require_distro("kilted");
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (range, static_peers) in [
        ("SUBNET", ""),
        ("LOCALHOST", ""),
        ("LOCALHOST", "10.213.0.2"),
        // A static peer on the subscriber's subnet but not the subscriber: the node then
        // announces (and multicasts) on the link too, yet is not found.
        ("LOCALHOST", "10.213.0.9"),
    ] {
        let (status, stdout, stderr) = run_in_namespace(
            &[
                ros2_dir().join("run-veth.sh").as_os_str(),
                "kilted".as_ref(),
                env!("CARGO_BIN_EXE_surfcl-node").as_ref(),
                range.as_ref(),
                ros2_dir().join("latency.py").as_os_str(),
                "--image".as_ref(),
                photo().as_os_str(),
                "--size".as_ref(),
                "850x680".as_ref(),
                "--frames".as_ref(),
                "3".as_ref(),
                "--hz".as_ref(),
                "1".as_ref(),
                "--topics".as_ref(),
                "keypoints".as_ref(),
                "--discovery-timeout".as_ref(),
                "20".as_ref(),
            ],
            &[
                ("DOMAIN", "164"),
                ("NODE_ARGS", "--param backend:=cpu"),
                ("NODE_STATIC_PEERS", static_peers),
            ],
            Duration::from_secs(90),
        );
        let case = format!("{range}, static peers {static_peers:?}");
        eprintln!(
            "{case}: probe stdout:\n{stdout}\nnode/probe stderr (tail):\n{}",
            tail(&stderr, 2000)
        );
        let status = status.expect("two-namespace test timed out after 90 s");
        if range == "SUBNET" || static_peers == "10.213.0.2" {
            assert!(
                status.success(),
                "{case}: the subscriber in the other namespace got nothing ({status})"
            );
            let got = parse_latency(&stdout);
            assert!(
                got.iter().any(|r| r.topic == "keypoints" && r.count > 0),
                "{case}: no keypoints: {stdout}"
            );
        } else {
            assert!(
                !status.success() && stdout.contains("discovery timed out"),
                "{case}: the subscriber in the other namespace saw the node: {stdout}"
            );
            assert!(
                stdout.contains("\"publishers\": {\"keypoints\": 0}"),
                "{stdout}"
            );
        }
    }
}

/// The hash rosidl generated for `ros_type` (`package/msg/Type` or `package/srv/Type`) in
/// `distro`'s installation: `share/<package>/<msg|srv>/<Type>.json`, from the ROS 2 wheels in
/// the venv, or for `surfcl_msgs` from its colcon build (of `ros-node/msg`).
fn rosidl_type_hash(distro: &str, ros_type: &str) -> String {
    let mut parts = ros_type.split('/');
    let (Some(package), Some(kind), Some(name), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        panic!("not a ROS type name: {ros_type}");
    };
    let prefix = if package == "surfcl_msgs" {
        ros2_dir().join(format!(".colcon-{distro}/install/surfcl_msgs"))
    } else {
        ros2_dir().join(format!(".venv-{distro}"))
    };
    let path = prefix.join(format!("share/{package}/{kind}/{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let description: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    // The first entry is the type itself, then the types it refers to.
    let own = &description["type_hashes"][0];
    assert_eq!(own["type_name"], ros_type, "{}", path.display());
    own["hash_string"]
        .as_str()
        .unwrap_or_else(|| panic!("no hash_string in {}", path.display()))
        .to_string()
}

/// The type hashes built into the node (its messages, `surfcl_ros::msg::type_hashes`) and into
/// ros2-client (its own topics and parameter services, `ros2_client::type_hash::builtin`)
/// equal those rosidl generated in the Kilted and Jazzy installations.
#[test]
fn type_hash_constants_equal_the_installed_rosidl_descriptions() {
    let embedded = surfcl_ros::msg::type_hashes::ALL
        .iter()
        .chain(ros2_client::type_hash::builtin::ALL);
    for distro in ["kilted", "jazzy"] {
        require_distro(distro);
        for (ros_type, hash) in embedded.clone() {
            assert_eq!(
                hash.as_str(),
                rosidl_type_hash(distro, ros_type),
                "{ros_type} in {distro}"
            );
        }
    }
}

/// The node's endpoints as a ROS 2 node sees them: rclpy's graph (`get_publishers_info_by_topic`
/// and `get_subscriptions_info_by_topic`) reports for each of the node's topics, its parameter
/// services and its `ros_discovery_info` the type hash rosidl generated
/// (`tests/ros2/type_hashes.py`), and Fast DDS warns of no type hash it could not parse.
fn rclpy_reports_type_hashes(distro: &str, domain: &str) {
    require_distro(distro);
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Under `use_sim_time`, so that the node has its `/clock` reader.
    let stderr = rclpy_probe(
        distro,
        domain,
        "type_hashes.py",
        &[],
        SIM_TIME_NODE_ARGS,
        Duration::from_secs(120),
    );
    assert!(
        !stderr.contains("Failed to parse a type hash"),
        "Fast DDS could not parse a type hash the node announced"
    );
}

#[test]
fn rclpy_kilted_reports_the_node_endpoints_type_hashes() {
    rclpy_reports_type_hashes("kilted", "171");
}

#[test]
fn rclpy_jazzy_reports_the_node_endpoints_type_hashes() {
    rclpy_reports_type_hashes("jazzy", "172");
}

/// Under `use_sim_time:=true` the node keeps ROS 2's time: rclpy publishes `/clock`
/// (`rosgraph_msgs/msg/Clock`, best effort, as `ros2 bag play --clock` does) at a simulated
/// time far from the wall clock; the graph holds that one type on `/clock`, the node's reader
/// belongs to the node with rosidl's type hash, and the node's `/diagnostics` carry the
/// simulated time (`tests/ros2/sim_time.py`).
#[test]
fn rclpy_kilted_use_sim_time_follows_the_clock_topic() {
    require_distro("kilted");
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    rclpy_probe(
        "kilted",
        "173",
        "sim_time.py",
        &[],
        SIM_TIME_NODE_ARGS,
        Duration::from_secs(120),
    );
}

/// `use_sim_time` turned on and off at run time through the node's `set_parameters` service
/// (as `ros2 param set` does), with Jazzy's rclpy: while it is off the node has no `/clock`
/// reader (rclcpp and rclpy subscribe only while it is on) and stamps with the wall clock;
/// turned on, it reads `/clock` and stamps with the simulated time; turned off again, its
/// reader goes and its stamps are wall-clock time (`tests/ros2/sim_time.py --toggle`).
#[test]
fn rclpy_jazzy_use_sim_time_set_at_run_time_adds_and_removes_the_clock_reader() {
    require_distro("jazzy");
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    rclpy_probe(
        "jazzy",
        "175",
        "sim_time.py",
        &["--toggle".as_ref()],
        PROBE_NODE_ARGS,
        Duration::from_secs(120),
    );
}
