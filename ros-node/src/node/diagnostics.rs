//! The diagnostics task: once a second, a `diagnostic_msgs/DiagnosticArray` on `/diagnostics`
//! (absolute, where the diagnostic aggregator listens) with the frame rate, the per-stage times,
//! and the drops and losses since the last report. The status level says, for that second:
//! - `OK`: every frame that arrived was processed (or none arrived).
//! - `WARN`: the node is losing frames but works: image messages lost on the way (sequence
//!   gaps; large best-effort frames and a small socket buffer), or frames replaced in the slot
//!   before they were processed (the camera is faster than the node).
//! - `ERROR`: frames failed in the backend (nothing, or only keypoints, was published for them);
//!   the message names the last one and why.
//!
//! `STALE` is left to the aggregator (it marks a status that stopped coming).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ros2_client::builtin_interfaces::Time;
use ros2_client::{NodeClock, Publisher};

use super::shared::{Shared, lock};
use super::stats::{StageTimes, Stats};
use crate::msg::{self, Header};

/// Spawns the task that publishes a report on `publisher` every second, stamped with the
/// node's `clock` (`/clock`'s time under `use_sim_time`, as ROS tools expect of a node's
/// diagnostics).
pub(super) fn spawn(
    shared: Arc<Shared>,
    node: String,
    clock: NodeClock,
    publisher: Publisher<msg::DiagnosticArray>,
) -> smol::Task<()> {
    smol::spawn(async move {
        let mut last = (Instant::now(), Stats::default());
        loop {
            smol::Timer::after(Duration::from_secs(1)).await;
            let now = Instant::now();
            let snapshot = {
                let mut s = lock(&shared.stats);
                let snap = s.clone();
                s.window.clear();
                s.stage_window.clear();
                snap
            };
            let elapsed = now.duration_since(last.0);
            let report = report(&node, &last.1, &snapshot, elapsed, clock.now().into());
            let _ = publisher.publish(report);
            last = (now, snapshot);
        }
    })
}

fn mean_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut n, mut sum, mut max) = (0usize, 0.0, 0.0f64);
    for v in values {
        n += 1;
        sum += v;
        max = max.max(v);
    }
    if n == 0 {
        (0.0, 0.0)
    } else {
        (sum / n as f64, max)
    }
}

/// The report's level and message for what happened between `before` and `now`.
fn summary(before: &Stats, now: &Stats, secs: f64) -> (u8, String) {
    let new_drops = now.dropped_stale - before.dropped_stale;
    let new_failed = now.failed - before.failed;
    let new_lost = now.lost - before.lost;
    if new_failed > 0 {
        (
            msg::DiagnosticStatus::ERROR,
            format!(
                "{new_failed} frames failed in the backend; last: {}",
                now.last_error
            ),
        )
    } else if new_lost > 0 {
        (
            msg::DiagnosticStatus::WARN,
            format!("lost {new_lost} image messages on the way in the last {secs:.1} s"),
        )
    } else if new_drops > 0 {
        (
            msg::DiagnosticStatus::WARN,
            format!("dropping frames: {new_drops} in the last {secs:.1} s"),
        )
    } else {
        (msg::DiagnosticStatus::OK, "ok".to_string())
    }
}

fn kv(key: &str, value: String) -> msg::KeyValue {
    msg::KeyValue {
        key: key.into(),
        value,
    }
}

/// The counters and the stage times' mean and max as key-value pairs.
fn values(now: &Stats, fps: f64) -> Vec<msg::KeyValue> {
    let (mean, max) = mean_max(now.window.iter().copied());
    let mut values = vec![
        kv("frame_rate_hz", format!("{fps:.2}")),
        kv("processing_ms_mean", format!("{mean:.3}")),
        kv("processing_ms_max", format!("{max:.3}")),
        kv("frames_received", now.received.to_string()),
        kv(
            "frames_received_into_frames",
            now.received_into_frames.to_string(),
        ),
        kv("frames_processed", now.processed.to_string()),
        kv("frames_skipped_lazy", now.skipped_lazy.to_string()),
        kv("frames_dropped_stale", now.dropped_stale.to_string()),
        kv("frames_lost", now.lost.to_string()),
        kv("messages_malformed", now.malformed.to_string()),
        kv("frames_failed", now.failed.to_string()),
        kv("last_error", now.last_error.clone()),
        kv("keypoints_last", now.last_keypoints.to_string()),
        kv("matches_last", now.last_matches.to_string()),
        kv("output_buffers_new", now.output_buffers_new.to_string()),
        kv(
            "output_buffers_prepared",
            now.output_buffers_prepared.to_string(),
        ),
        kv(
            "output_buffers_kept_mb",
            format!("{:.1}", now.output_buffers_kept_bytes as f64 / 1048576.0),
        ),
    ];
    for (i, (name, _)) in StageTimes::default().named().iter().enumerate() {
        let (mean, max) = mean_max(now.stage_window.iter().map(|s| s.named()[i].1));
        values.push(kv(&format!("stage_{name}_ms_mean"), format!("{mean:.3}")));
        values.push(kv(&format!("stage_{name}_ms_max"), format!("{max:.3}")));
    }
    values
}

/// The report of the node `node` for the `elapsed` time from `before` to `now`, stamped `stamp`.
fn report(
    node: &str,
    before: &Stats,
    now: &Stats,
    elapsed: Duration,
    stamp: Time,
) -> msg::DiagnosticArray {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let fps = (now.processed - before.processed) as f64 / secs;
    let (level, message) = summary(before, now, secs);
    msg::DiagnosticArray {
        header: Header {
            stamp,
            frame_id: String::new(),
        },
        status: vec![msg::DiagnosticStatus {
            level,
            name: format!("{node}: processing"),
            message,
            hardware_id: now.backend.clone(),
            values: values(now, fps),
        }],
    }
}
