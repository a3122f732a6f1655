//! Socket receive buffers for large frames.
//!
//! A best-effort image arrives as one burst of UDP datagrams (RustDDS sends 64 KiB datagrams on
//! loopback, Cyclone DDS about 15 KiB). If the burst is larger than the socket's receive buffer
//! before the DDS event loop drains it, datagrams are dropped by the kernel, the frame can never
//! be reassembled, and (best effort) it is lost. RustDDS asks for `SO_RCVBUF` (8 MiB by default,
//! [`crate::node::NodeConfig::socket_receive_buffer`] here), which Linux caps at
//! `net.core.rmem_max` (4 MiB on many systems, 208 KiB by default) and doubles.
//!
//! When the process has `CAP_NET_ADMIN`, [`force_receive_buffers`] raises the buffers of the
//! sockets the participant opened with `SO_RCVBUFFORCE`, which ignores that cap. It finds them
//! as the socket descriptors that appeared while the participant was built, and reaches them
//! through `pidfd_getfd` (a duplicate of the descriptor, so no unsafe code is needed).
//! Without the capability nothing changes and `net.core.rmem_max` must be raised instead
//! (`sysctl -w net.core.rmem_max=67108864`); the start-up log says which case applies.

use std::collections::BTreeSet;

/// The socket descriptors of this process (numbers whose `/proc/self/fd` link is `socket:[..]`).
pub fn socket_fds() -> BTreeSet<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return BTreeSet::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_link(e.path())
                .map(|l| l.to_string_lossy().starts_with("socket:"))
                .unwrap_or(false)
        })
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect()
}

/// What [`force_receive_buffers`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ForceOutcome {
    /// UDP sockets raised.
    pub raised: usize,
    /// Smallest receive buffer among the participant's UDP sockets afterwards, bytes, as the
    /// kernel reports it (`SO_RCVBUF`, which includes its doubling); `None` without sockets.
    pub smallest: Option<usize>,
    /// Why raising failed (e.g. no `CAP_NET_ADMIN`), if it did.
    pub error: Option<String>,
}

/// Sets `SO_RCVBUFFORCE` to `bytes` on the UDP sockets among `fds` (descriptors of this
/// process), and reports the resulting smallest buffer.
#[cfg(target_os = "linux")]
pub fn force_receive_buffers(fds: &BTreeSet<i32>, bytes: usize) -> ForceOutcome {
    use rustix::net::sockopt;
    use rustix::process::{PidfdFlags, PidfdGetfdFlags, getpid, pidfd_getfd, pidfd_open};

    let mut out = ForceOutcome::default();
    let pidfd = match pidfd_open(getpid(), PidfdFlags::empty()) {
        Ok(p) => p,
        Err(e) => {
            out.error = Some(format!("pidfd_open: {e}"));
            return out;
        }
    };
    for &fd in fds {
        let Ok(dup) = pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()) else {
            continue;
        };
        if sockopt::socket_type(&dup).ok() != Some(rustix::net::SocketType::DGRAM) {
            continue;
        }
        match sockopt::set_socket_recv_buffer_size_force(&dup, bytes) {
            Ok(()) => out.raised += 1,
            Err(e) => {
                if out.error.is_none() {
                    out.error = Some(format!("SO_RCVBUFFORCE: {e}"));
                }
            }
        }
        if let Ok(size) = sockopt::socket_recv_buffer_size(&dup) {
            out.smallest = Some(out.smallest.map_or(size, |s| s.min(size)));
        }
    }
    out
}

/// Elsewhere there is nothing to force; the requested `SO_RCVBUF` is all there is.
#[cfg(not(target_os = "linux"))]
pub fn force_receive_buffers(_fds: &BTreeSet<i32>, _bytes: usize) -> ForceOutcome {
    ForceOutcome {
        error: Some("not supported on this platform".into()),
        ..ForceOutcome::default()
    }
}
