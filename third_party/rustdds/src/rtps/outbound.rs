//! Core types for the nonblocking-transmit outbound path.
//!
//! See `src/rtps/nonblocking_transmit_design.md`. These types are shared by
//! `UDPSender` (which owns the sockets and the never-dropped control queues),
//! the `Writer` (bulk DATA producer, resumable), and `DPEventLoop` (which owns
//! the poll and the per-socket round-robin of writers willing to send bulk).

use std::{
  collections::VecDeque,
  net::SocketAddr,
  time::{Duration, Instant},
};

/// Identifies one physical sender socket owned by `UDPSender`.
///
/// `Multicast(i)` indexes into `UDPSender::multicast_sockets` (one socket per
/// local multicast-capable interface).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum SocketId {
  Unicast,
  Multicast(usize),
}

/// Outcome of a single non-blocking datagram send attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendOutcome {
  /// The datagram was handed to the kernel.
  Sent,
  /// The kernel send buffer is full. For control this means "keep it queued";
  /// for bulk this means "stop and back off, resume on writable".
  WouldBlock,
  /// A permanent error (bad address, encode failure, unknown locator kind).
  /// Never retried.
  Dropped,
}

/// Traffic class deciding the per-socket queueing policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrafficClass {
  /// Control/discovery (HEARTBEAT, ACKNACK, GAP, SPDP/SEDP): high priority,
  /// never dropped, drained before bulk data.
  Control,
  /// Bulk user DATA/DATAFRAG: flow-controlled; on WouldBlock the producer stops
  /// and is resumed on write readiness (or, for repair, simply retried later).
  Bulk,
}

/// A queued outbound datagram. Used only for the never-dropped control queue;
/// bulk data is regenerated on demand and never buffered here.
#[derive(Debug)]
pub(crate) struct Datagram {
  pub addr: SocketAddr,
  pub bytes: Vec<u8>,
}

/// A per-socket FIFO of control datagrams that must never be dropped.
pub(crate) type ControlQueue = VecDeque<Datagram>;

/// Soft high-watermark for a per-socket control queue. Exceeding it only logs a
/// warning (a persistently wedged socket usually means the peer/link is dead);
/// nothing is ever dropped.
pub(crate) const CONTROL_QUEUE_WARN_LEN: usize = 1024;

/// Token bucket shared by all writers of a participant that paces the DATAFRAG
/// datagrams of fragmented samples: up to `burst` bytes go out back to back,
/// then `bytes_per_sec`. Receivers with default socket buffers then drain a
/// large sample as it arrives instead of losing the end of a burst.
#[derive(Debug)]
pub(crate) struct FragmentPacer {
  burst: f64,
  bytes_per_sec: f64,
  tokens: f64,
  last: Instant,
}

impl FragmentPacer {
  pub(crate) fn new(burst: usize, bytes_per_sec: u64) -> Self {
    Self {
      burst: burst as f64,
      bytes_per_sec: bytes_per_sec as f64,
      tokens: burst as f64,
      last: Instant::now(),
    }
  }

  /// Takes `bytes` from the bucket if it holds them (a full bucket always
  /// admits one datagram, however large); otherwise returns how long to wait
  /// before asking again.
  pub(crate) fn admit(&mut self, bytes: usize) -> Result<(), Duration> {
    let now = Instant::now();
    let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
    self.last = now;
    self.tokens = (self.tokens + elapsed * self.bytes_per_sec).min(self.burst);
    let bytes = bytes as f64;
    if self.tokens >= bytes.min(self.burst) {
      self.tokens -= bytes;
      Ok(())
    } else {
      let missing = bytes.min(self.burst) - self.tokens;
      Err(Duration::from_secs_f64(missing / self.bytes_per_sec))
    }
  }
}

#[cfg(test)]
mod pacer_tests {
  use super::FragmentPacer;

  #[test]
  fn burst_then_waits_for_refill() {
    let mut p = FragmentPacer::new(100_000, 1_000_000);
    assert!(p.admit(60_000).is_ok());
    assert!(p.admit(30_000).is_ok());
    let wait = p.admit(60_000).expect_err("bucket should be short");
    // 50 KB missing at 1 MB/s: about 50 ms
    assert!(wait.as_millis() >= 45 && wait.as_millis() <= 51, "{wait:?}");
    std::thread::sleep(wait);
    assert!(p.admit(60_000).is_ok());
  }

  #[test]
  fn full_bucket_admits_an_oversized_datagram() {
    let mut p = FragmentPacer::new(1_000, 1_000_000);
    assert!(p.admit(5_000).is_ok());
    assert!(p.admit(1).is_err());
  }
}
