//! Interoperability with an independent DDS implementation: the `surfcl-node` binary and a
//! Python peer on Eclipse Cyclone DDS (`tests/peer/peer.py`) talk inside a private network and
//! PID namespace (`unshare --net --pid`), so nothing can leave the machine and killing our one
//! child process ends everything it started.
//!
//! The peer needs a Python with `cyclonedds==11.0.1`: `$SURFCL_PEER_PYTHON`, or the venv made by
//! `ros-node/tests/peer/setup.sh` (`tests/peer/.venv`), or `<target dir>/venv`. When none is
//! usable the test fails and says how to set it up.
//!
//! The peer's Cyclone DDS is configured for loopback only (no multicast, peer 127.0.0.1). The
//! first test runs the node with ROS 2's default discovery range (`SUBNET`: every interface, here
//! only `lo`), the others with `--localhost-only` (`LOCALHOST`), so that both ranges meet an
//! independent DDS.
#![cfg(feature = "backend")]

mod child;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use child::{run_with_limit, tail};

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn has_cyclonedds(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import cyclonedds"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn peer_python() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("SURFCL_PEER_PYTHON") {
        candidates.push(PathBuf::from(p));
    }
    candidates.push(manifest().join("tests/peer/.venv/bin/python"));
    // CARGO_TARGET_TMPDIR is <target>/tmp.
    if let Some(target) = Path::new(env!("CARGO_TARGET_TMPDIR")).parent() {
        candidates.push(target.join("venv/bin/python"));
    }
    for c in &candidates {
        if c.exists() && has_cyclonedds(c) {
            return c.clone();
        }
    }
    panic!(
        "no Python with cyclonedds==11.0.1 found (tried {candidates:?}); \
         run `ros-node/tests/peer/setup.sh` or set SURFCL_PEER_PYTHON"
    );
}

#[test]
fn cyclone_peer_publishes_images_receives_outputs_and_sets_parameters() {
    let script = r#"
        ip link set lo up || exit 90
        "$NODE_BIN" --domain-id 121 --param backend:=cpu &
        node_pid=$!
        "$PEER_PY" "$PEER" --domain 121 --node /surfcl_node --image "$IMAGE" --timeout 100
        rc=$?
        kill "$node_pid"
        wait "$node_pid"
        exit $rc
    "#;
    let stdout = run_ok(
        script,
        &[("IMAGE", boat().as_os_str())],
        Duration::from_secs(150),
    );
    let last = ok_report(&stdout);
    assert!(
        last.contains("\"keypoints_rgb8_identical\": true"),
        "{last}"
    );
}

/// The boat photo the peer publishes.
fn boat() -> PathBuf {
    manifest().join("../data/oxford-boat/img1.pgm")
}

/// [`run_in_namespace`] with its output printed; panics unless the script exits with status 0
/// within `limit`. Returns its stdout.
fn run_ok(script: &str, envs: &[(&str, &std::ffi::OsStr)], limit: Duration) -> String {
    let (status, stdout, stderr) = run_in_namespace(script, envs, limit);
    eprintln!(
        "peer stdout:\n{stdout}\nnode/peer stderr (tail):\n{}",
        tail(&stderr, 4000)
    );
    let status =
        status.unwrap_or_else(|| panic!("interop test timed out after {} s", limit.as_secs()));
    assert!(status.success(), "peer failed with {status}: {stdout}");
    stdout
}

/// The peer's report (its last line of output), checked to say `"ok": true`.
fn ok_report(stdout: &str) -> &str {
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.contains("\"ok\": true"), "{last}");
    last
}

/// Runs `script` with `sh -c` in a private network and PID namespace (our one child process, so
/// ending it ends everything it started), with `envs` and `NODE_BIN` (the node), `PEER_PY` and
/// `PEER` (the peer's Python and script) in its environment; returns (status or None on timeout,
/// stdout, stderr).
fn run_in_namespace(
    script: &str,
    envs: &[(&str, &std::ffi::OsStr)],
    limit: Duration,
) -> (Option<std::process::ExitStatus>, String, String) {
    let python = peer_python();
    let unshare_ok = Command::new("unshare")
        .args(["--net", "--pid", "--fork", "--", "true"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        unshare_ok,
        "`unshare --net --pid` is not available (needs root or user namespaces)"
    );
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--net",
        "--pid",
        "--fork",
        "--kill-child",
        "--",
        "sh",
        "-c",
        script,
    ]);
    cmd.env("NODE_BIN", env!("CARGO_BIN_EXE_surfcl-node"))
        .env("PEER_PY", python)
        .env("PEER", manifest().join("tests/peer/peer.py"));
    for (k, v) in envs {
        cmd.env(k, v);
    }
    run_with_limit(cmd, limit)
}

/// A 12 MB mono8 (4000x3000) and a 24 MB rgb8 (3840x2160) frame from the Cyclone DDS peer reach
/// the node and come back as keypoints, with the node's default settings (best-effort image
/// subscription; its DDS sockets' receive buffers raised to 64 MiB, which needs CAP_NET_ADMIN or
/// a large enough net.core.rmem_max: see ros-node/README.md). The peer publishes each frame, and
/// again every 5 s until its keypoints arrive, and reports how many sends it took.
#[test]
fn cyclone_peer_large_frames_12mb_mono8_and_24mb_rgb8() {
    let script = r#"
        ip link set lo up || exit 90
        "$NODE_BIN" --localhost-only --domain-id 123 --param backend:=cpu --param max_keypoints:=500 &
        node_pid=$!
        "$PEER_PY" "$PEER" --mode large --domain 123 --image "$IMAGE" --timeout 150
        rc=$?
        kill -TERM "$node_pid"
        wait "$node_pid"
        exit $rc
    "#;
    let stdout = run_ok(
        script,
        &[("IMAGE", boat().as_os_str())],
        Duration::from_secs(200),
    );
    let last = ok_report(&stdout);
    assert!(last.contains("\"frame\": \"4000x3000 mono8\""), "{last}");
    assert!(last.contains("\"frame\": \"3840x2160 rgb8\""), "{last}");
}

/// SIGTERM: the node exits with status 0 and the Cyclone peer sees its keypoints and matches
/// writers and its image reader disappear within 2 s (before, they stayed until the lease ran
/// out, about 50 s later).
#[test]
fn cyclone_peer_sees_the_node_leave_within_2_s_of_sigterm() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shutdown-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"
        ip link set lo up || exit 90
        "$NODE_BIN" --localhost-only --domain-id 124 --param backend:=cpu &
        node_pid=$!
        "$PEER_PY" "$PEER" --mode shutdown --domain 124 --signal-file "$DIR/signalled" --timeout 60 > "$DIR/peer.out" &
        peer_pid=$!
        i=0
        while ! grep -q READY "$DIR/peer.out" 2>/dev/null; do
            i=$((i + 1))
            if [ $i -gt 600 ]; then echo "peer never got ready"; kill "$peer_pid" "$node_pid"; exit 91; fi
            if ! kill -0 "$peer_pid" 2>/dev/null; then cat "$DIR/peer.out"; exit 92; fi
            sleep 0.1
        done
        date +%s.%N > "$DIR/signalled.tmp" && mv "$DIR/signalled.tmp" "$DIR/signalled"
        kill -TERM "$node_pid"
        wait "$node_pid"
        node_rc=$?
        wait "$peer_pid"
        peer_rc=$?
        cat "$DIR/peer.out"
        echo "node_exit=$node_rc"
        exit $peer_rc
    "#;
    let stdout = run_ok(
        script,
        &[("DIR", dir.as_os_str())],
        Duration::from_secs(120),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        stdout.lines().any(|l| l.trim() == "node_exit=0"),
        "the node did not exit with status 0: {stdout}"
    );
    let result = stdout
        .lines()
        .find(|l| l.contains("gone_after_s"))
        .unwrap_or_default();
    assert!(result.contains("\"ok\": true"), "{stdout}");
    // Each of the three endpoints, in seconds after the signal.
    let times: Vec<f64> = result
        .split([':', ',', '}'])
        .filter_map(|t| t.trim().parse::<f64>().ok())
        .collect();
    assert_eq!(times.len(), 3, "{result}");
    for t in times {
        assert!(
            t <= 2.0,
            "an endpoint of the node stayed {t} s after SIGTERM: {result}"
        );
    }
}
