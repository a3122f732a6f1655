//! A child process run to completion or to a time limit, with all of its output (the interop
//! tests' namespaced peers and nodes).

use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` with its stdout and stderr collected; kills it past `limit`. Returns (status, or
/// None on timeout, stdout, stderr).
pub fn run_with_limit(mut cmd: Command, limit: Duration) -> (Option<ExitStatus>, String, String) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{:?} could not start: {e}", cmd.get_program()));
    // Read both pipes on their own threads so that a chatty child cannot block on a full pipe.
    let mut out_pipe = child.stdout.take().expect("piped stdout");
    let mut err_pipe = child.stderr.take().expect("piped stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out_pipe, &mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err_pipe, &mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for the child") {
            break Some(s);
        }
        if Instant::now() > deadline {
            // Our child only, by its PID; a child in its own PID namespace takes it along.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (
        status,
        out_t.join().unwrap_or_default(),
        err_t.join().unwrap_or_default(),
    )
}

/// The last `n` bytes of `s` or a little fewer (from a character boundary).
pub fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    &s[start..]
}
