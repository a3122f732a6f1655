//! Core types for the nonblocking-transmit outbound path.
//!
//! See `src/rtps/nonblocking_transmit_design.md`. These types are shared by
//! `UDPSender` (which owns the sockets and the never-dropped control queues),
//! the `Writer` (bulk DATA producer, resumable), and `DPEventLoop` (which owns
//! the poll and the per-socket round-robin of writers willing to send bulk).

use std::{
  collections::{HashMap, VecDeque},
  net::SocketAddr,
  time::{Duration, Instant},
};

use crate::{messages::vendor_id::VendorId, structure::guid::GuidPrefix};

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

/// Paces the DATAFRAG datagrams of fragmented samples per destination
/// participant, for all writers of a participant (the readers of one remote
/// participant share its receive socket). Each destination has a token bucket:
/// up to `burst` bytes go out back to back, then its rate. A receiver with the
/// kernel's default socket buffer then drains a large sample as it arrives
/// instead of losing the end of a burst.
///
/// The rate adapts to what the destination shows: a RustDDS participant (which
/// raises its socket buffers) starts unpaced, any other at `bytes_per_sec`. A
/// reliable reader's request for lost fragments (`note_loss`) drops its
/// participant to `bytes_per_sec`; every `recovery` period without another
/// such request doubles the rate, back up to the destination's starting rate.
#[derive(Debug)]
pub(crate) struct FragmentPacer {
  burst: f64,
  bytes_per_sec: f64,
  recovery: Duration,
  destinations: HashMap<GuidPrefix, DestinationPace>,
}

/// One destination participant's bucket.
#[derive(Debug)]
struct DestinationPace {
  /// Rate at which this destination starts and to which it recovers
  /// (`f64::INFINITY`: unpaced).
  ceiling: f64,
  /// The last request for lost fragments, if any.
  last_loss: Option<Instant>,
  tokens: f64,
  last: Instant,
}

/// Loss-free recovery periods after which a destination is back at its
/// starting rate (`base` times 16 before that).
const FRAGMENT_PACE_RECOVERY_DOUBLINGS: i32 = 4;
/// Destinations kept before idle ones are forgotten.
const PACED_DESTINATIONS_KEPT: usize = 256;
/// How long a destination may stay unused before it may be forgotten.
const PACED_DESTINATION_IDLE: Duration = Duration::from_secs(60);

impl FragmentPacer {
  pub(crate) fn new(burst: usize, bytes_per_sec: u64, recovery: Duration) -> Self {
    Self {
      burst: burst as f64,
      bytes_per_sec: bytes_per_sec as f64,
      recovery,
      destinations: HashMap::new(),
    }
  }

  /// Sends to a participant of our own implementation start unpaced: RustDDS
  /// asks for large socket receive buffers. The vendor id leads the GUID
  /// prefix (RTPS 2.5 Section 9.3.1.5 recommends it; RustDDS, Fast DDS and
  /// Cyclone DDS do it).
  fn starting_rate(&self, destination: &GuidPrefix) -> f64 {
    if destination.bytes[..2] == VendorId::THIS_IMPLEMENTATION.as_bytes()[..] {
      f64::INFINITY
    } else {
      self.bytes_per_sec
    }
  }

  fn destination(&mut self, destination: GuidPrefix, now: Instant) -> &mut DestinationPace {
    if self.destinations.len() >= PACED_DESTINATIONS_KEPT
      && !self.destinations.contains_key(&destination)
    {
      self
        .destinations
        .retain(|_, d| now.saturating_duration_since(d.last) < PACED_DESTINATION_IDLE);
    }
    let ceiling = self.starting_rate(&destination);
    let burst = self.burst;
    self
      .destinations
      .entry(destination)
      .or_insert_with(|| DestinationPace {
        ceiling,
        last_loss: None,
        tokens: burst,
        last: now,
      })
  }

  /// A reliable reader of `destination` asked for fragments it lost: pace
  /// that participant at the base rate from now on, recovering over time.
  pub(crate) fn note_loss(&mut self, destination: GuidPrefix) {
    let now = Instant::now();
    let burst = self.burst;
    let d = self.destination(destination, now);
    if d.last_loss.is_none() && d.ceiling.is_infinite() {
      // An unpaced destination's bucket was never filled: start it full.
      d.tokens = burst;
      d.last = now;
    }
    d.last_loss = Some(now);
  }

  /// Takes `bytes` from the bucket of every paced destination in
  /// `destinations` (each participant once) if each holds them (a full bucket
  /// always admits one datagram, however large); otherwise returns how long to
  /// wait before asking again. Unpaced destinations always admit.
  pub(crate) fn admit(
    &mut self,
    destinations: &[GuidPrefix],
    bytes: usize,
  ) -> Result<(), Duration> {
    let now = Instant::now();
    let (base, recovery, burst) = (self.bytes_per_sec, self.recovery, self.burst);
    let need = (bytes as f64).min(burst);
    let mut wait = Duration::ZERO;
    for destination in destinations {
      let d = self.destination(*destination, now);
      let rate = d.rate(base, recovery, now);
      let elapsed = now.saturating_duration_since(d.last).as_secs_f64();
      d.last = now;
      if rate.is_finite() {
        d.tokens = (d.tokens + elapsed * rate).min(burst);
        if d.tokens < need {
          wait = wait.max(Duration::from_secs_f64((need - d.tokens) / rate));
        }
      }
    }
    if wait > Duration::ZERO {
      return Err(wait);
    }
    for destination in destinations {
      if let Some(d) = self.destinations.get_mut(destination) {
        if d.rate(base, recovery, now).is_finite() {
          d.tokens -= bytes as f64;
        }
      }
    }
    Ok(())
  }
}

impl DestinationPace {
  /// The rate at `now`: the ceiling, or after a loss `base` doubled for every
  /// loss-free `recovery` period since, the ceiling after
  /// `FRAGMENT_PACE_RECOVERY_DOUBLINGS` of them.
  fn rate(&self, base: f64, recovery: Duration, now: Instant) -> f64 {
    let Some(loss) = self.last_loss else {
      return self.ceiling;
    };
    let periods =
      (now.saturating_duration_since(loss).as_secs_f64() / recovery.as_secs_f64()) as i32;
    if periods >= FRAGMENT_PACE_RECOVERY_DOUBLINGS {
      self.ceiling
    } else {
      (base * 2f64.powi(periods)).min(self.ceiling)
    }
  }
}

#[cfg(test)]
mod pacer_tests {
  use std::time::Duration;

  use super::FragmentPacer;
  use crate::{messages::vendor_id::VendorId, structure::guid::GuidPrefix};

  const RECOVERY: Duration = Duration::from_millis(100);

  // A participant of another implementation (Fast DDS's vendor id) and one of
  // ours.
  fn other(n: u8) -> GuidPrefix {
    GuidPrefix::new(&[0x01, 0x0f, n, 0, 0, 0, 0, 0, 0, 0, 0, 0])
  }
  fn ours(n: u8) -> GuidPrefix {
    let v = VendorId::THIS_IMPLEMENTATION.as_bytes();
    GuidPrefix::new(&[v[0], v[1], n, 0, 0, 0, 0, 0, 0, 0, 0, 0])
  }

  #[test]
  fn burst_then_waits_for_refill() {
    let mut p = FragmentPacer::new(100_000, 1_000_000, RECOVERY);
    let to = [other(1)];
    assert!(p.admit(&to, 60_000).is_ok());
    assert!(p.admit(&to, 30_000).is_ok());
    let wait = p.admit(&to, 60_000).expect_err("bucket should be short");
    // 50 KB missing at 1 MB/s: about 50 ms
    assert!(wait.as_millis() >= 45 && wait.as_millis() <= 51, "{wait:?}");
    std::thread::sleep(wait);
    assert!(p.admit(&to, 60_000).is_ok());
  }

  #[test]
  fn full_bucket_admits_an_oversized_datagram() {
    let mut p = FragmentPacer::new(1_000, 1_000_000, RECOVERY);
    assert!(p.admit(&[other(1)], 5_000).is_ok());
    assert!(p.admit(&[other(1)], 1).is_err());
  }

  #[test]
  fn each_destination_has_its_own_bucket() {
    let mut p = FragmentPacer::new(1_000, 1_000_000, RECOVERY);
    assert!(p.admit(&[other(1)], 1_000).is_ok());
    assert!(p.admit(&[other(2)], 1_000).is_ok());
    assert!(p.admit(&[other(1)], 1_000).is_err());
    // A datagram to both waits for the emptier bucket and takes from neither.
    assert!(p.admit(&[other(2), other(3)], 1_000).is_err());
    assert!(p.admit(&[other(3)], 1_000).is_ok());
  }

  #[test]
  fn our_own_implementation_is_unpaced_until_it_loses_fragments() {
    let mut p = FragmentPacer::new(1_000, 1_000_000, RECOVERY);
    for _ in 0..100 {
      assert!(p.admit(&[ours(1)], 1_000).is_ok());
    }
    // Beside an unpaced destination, a paced one still sets the pace.
    assert!(p.admit(&[ours(1), other(1)], 1_000).is_ok());
    assert!(p.admit(&[ours(1), other(1)], 1_000).is_err());

    p.note_loss(ours(1));
    assert!(p.admit(&[ours(1)], 1_000).is_ok());
    let wait = p.admit(&[ours(1)], 1_000).expect_err("paced after a loss");
    assert!(wait.as_micros() >= 900, "{wait:?}");
  }

  #[test]
  fn rate_recovers_after_loss_free_periods() {
    let mut p = FragmentPacer::new(10_000, 1_000_000, RECOVERY);
    p.note_loss(ours(1));
    assert!(p.admit(&[ours(1)], 10_000).is_ok());
    // 10 KB at 1 MB/s: 10 ms.
    let first = p.admit(&[ours(1)], 10_000).expect_err("paced");
    assert!(first.as_millis() >= 9, "{first:?}");
    // Two loss-free periods later the rate is 4 MB/s, after four unpaced.
    std::thread::sleep(2 * RECOVERY + Duration::from_millis(10));
    assert!(p.admit(&[ours(1)], 10_000).is_ok());
    let later = p.admit(&[ours(1)], 10_000).expect_err("still paced");
    assert!(later.as_micros() <= 2_600, "{later:?}");
    std::thread::sleep(2 * RECOVERY);
    for _ in 0..100 {
      assert!(p.admit(&[ours(1)], 10_000).is_ok());
    }
  }

  #[test]
  fn another_implementation_does_not_recover_above_the_base_rate() {
    let mut p = FragmentPacer::new(10_000, 1_000_000, RECOVERY);
    p.note_loss(other(1));
    std::thread::sleep(3 * RECOVERY);
    assert!(p.admit(&[other(1)], 10_000).is_ok());
    let wait = p.admit(&[other(1)], 10_000).expect_err("paced");
    assert!(wait.as_millis() >= 9, "{wait:?}");
  }
}
