//! Interoperability with an independent DDS implementation: the `surfcl-node` binary and a
//! Python peer on Eclipse Cyclone DDS (`tests/peer/peer.py`) talk inside a private network and
//! PID namespace (`unshare --net --pid`), so nothing can leave the machine and killing our one
//! child process ends everything it started.
//!
//! The peer needs a Python with `cyclonedds==11.0.1`: `$SURFCL_PEER_PYTHON`, or the venv made by
//! `ros-node/tests/peer/setup.sh` (`tests/peer/.venv`), or `<target dir>/venv`. When none is
//! usable the test fails and says how to set it up.
#![cfg(feature = "backend")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let mut child = Command::new("unshare")
        .args([
            "--net",
            "--pid",
            "--fork",
            "--kill-child",
            "--",
            "sh",
            "-c",
            script,
        ])
        .env("NODE_BIN", env!("CARGO_BIN_EXE_surfcl-node"))
        .env("PEER_PY", &python)
        .env("PEER", manifest().join("tests/peer/peer.py"))
        .env("IMAGE", manifest().join("../data/oxford-boat/img1.pgm"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(150);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            // Our child only, by its PID; --pid makes its namespace die with it.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "peer stdout:\n{stdout}\nnode/peer stderr (tail):\n{}",
        tail(&stderr, 3000)
    );
    let status = status.expect("interop test timed out after 150 s");
    assert!(status.success(), "peer failed with {status}: {stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.contains("\"ok\": true"), "{last}");
    assert!(
        last.contains("\"keypoints_rgb8_identical\": true"),
        "{last}"
    );
}

fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    &s[start..]
}
