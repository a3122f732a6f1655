//! The receive thread: takes image messages as they come, counts the ones that never arrived,
//! validates, and leaves the newest frame in the slot for the processing thread.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ros2_client::gid::Gid;
use ros2_client::ros2::LogLevel;
use ros2_client::{MessageInfo, Subscription};
use serde::de::{DeserializeSeed, Deserializer};
use smol::stream::StreamExt;

use super::logger::Logger;
use super::shared::{Shared, lock};
use super::slot::{Arrival, Frame};
use crate::compressed::{Codec, ImageTransport};
use crate::convert::{self, DropKind, LoggedKinds};
use crate::msg::Image;
use crate::pixels::{ReceiveSeed, Received};

/// Deserialises an [`Image`] into an input frame or a reused pixel buffer ([`ReceiveSeed`]) and
/// records how long that took (nanoseconds) in `nanos`.
#[derive(Clone)]
struct TimedImage {
    nanos: Arc<AtomicU64>,
    seed: ReceiveSeed,
}

impl<'de> DeserializeSeed<'de> for TimedImage {
    type Value = Received;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Received, D::Error> {
        let t0 = Instant::now();
        let image = self.seed.deserialize(deserializer);
        let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.nanos.store(ns, Ordering::Relaxed);
        image
    }
}

fn unix_nanos_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Counts gaps in the publishers' sequence numbers (messages that never reached the node).
#[derive(Default)]
struct GapCounter {
    last: HashMap<Gid, i64>,
}

impl GapCounter {
    /// Publishers remembered at most; beyond, the table starts over (a gap is then missed).
    const MAX_PUBLISHERS: usize = 64;

    /// Notes message `seq` of `publisher`; returns how many of its messages were skipped.
    fn note(&mut self, publisher: Gid, seq: i64) -> u64 {
        if self.last.len() >= Self::MAX_PUBLISHERS && !self.last.contains_key(&publisher) {
            self.last.clear();
        }
        match self.last.insert(publisher, seq) {
            Some(prev) if seq > prev + 1 => u64::try_from(seq - prev - 1).unwrap_or(0),
            _ => 0,
        }
    }
}

/// Counts lost messages and logs them, at most one line a second however many are lost.
struct LossLog {
    gaps: GapCounter,
    last_line: Option<Instant>,
}

impl LossLog {
    fn note(&mut self, shared: &Shared, log: &Logger, info: &MessageInfo, image: &Image) {
        let lost = self.gaps.note(info.publisher_gid(), info.sequence_number());
        if lost == 0 {
            return;
        }
        let total = {
            let mut s = lock(&shared.stats);
            s.lost += lost;
            s.lost
        };
        if self
            .last_line
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            self.last_line = Some(Instant::now());
            log.log(
                LogLevel::Warn,
                &format!(
                    "{lost} image message(s) before frame {:?} never arrived ({total} so far): \
                     lost on the way (large best-effort frames: socket receive buffer, see the \
                     start-up log) or replaced in the reader's history",
                    image.header.frame_id
                ),
            );
        }
    }
}

/// The kinds of dropped messages logged so far: the first message of each kind is logged, the
/// rest counted (`messages_malformed`), since a misconfigured camera repeats its fault with
/// every frame.
#[derive(Default)]
struct DropLog {
    images: LoggedKinds<DropKind>,
    compressed: LoggedKinds<(&'static str, Option<Codec>)>,
}

/// The receive thread: takes image messages as they come (deserialisation timed), counts
/// sequence gaps, validates and hands frames to the slot. It never waits for processing.
pub(super) fn receive_loop(
    shared: &Shared,
    subscription: &Subscription<Received>,
    transport: ImageTransport,
    log: &Logger,
) {
    let nanos = Arc::new(AtomicU64::new(0));
    let stream = subscription.async_stream_seed(TimedImage {
        nanos: Arc::clone(&nanos),
        seed: ReceiveSeed {
            buffers: shared.pixels.clone(),
            frames: shared.frames.clone(),
            transport,
        },
    });
    let mut drops = DropLog::default();
    let mut stream = std::pin::pin!(stream);
    let mut losses = LossLog {
        gaps: GapCounter::default(),
        last_line: None,
    };
    smol::block_on(async {
        while !shared.stop.load(Ordering::SeqCst) {
            // Bounded wait, so that a stop request is seen within 100 ms.
            let next = smol::future::or(async { Some(stream.next().await) }, async {
                smol::Timer::after(Duration::from_millis(100)).await;
                None
            })
            .await;
            match next {
                None => continue,
                // The stream of a DDS reader does not end; if it did, nothing more can arrive.
                Some(None) => break,
                Some(Some(Ok((received, info)))) => {
                    let mut arrival = arrival_of(&info, nanos.load(Ordering::Relaxed));
                    if let Some(gray) = &received.gray {
                        arrival.receive_convert_ms = gray.convert_ms;
                    }
                    losses.note(shared, log, &info, &received.image);
                    accept_image(shared, log, &mut drops, received, arrival);
                }
                Some(Some(Err(e))) => {
                    lock(&shared.stats).malformed += 1;
                    log.log(
                        LogLevel::Warn,
                        &format!("dropping an image message that could not be read: {e:?}"),
                    );
                }
            }
        }
    });
}

fn arrival_of(info: &MessageInfo, deserialise_ns: u64) -> Arrival {
    let transport_ms = info
        .source_timestamp()
        .map(|t| (unix_nanos_now().saturating_sub(t.to_nanos())) as f64 / 1e6)
        .unwrap_or(0.0)
        .max(0.0);
    Arrival {
        taken: Instant::now(),
        transport_ms,
        deserialise_ms: deserialise_ns as f64 / 1e6,
        receive_convert_ms: 0.0,
    }
}

fn accept_image(
    shared: &Shared,
    log: &Logger,
    drops: &mut DropLog,
    received: Received,
    arrival: Arrival,
) {
    let Received {
        image,
        gray,
        undecodable,
    } = received;
    {
        let mut s = lock(&shared.stats);
        s.received += 1;
        s.received_into_frames += u64::from(gray.is_some());
    }
    if let Some(e) = undecodable {
        lock(&shared.stats).malformed += 1;
        if drops.compressed.first(e.kind()) {
            log.log(
                LogLevel::Warn,
                &format!(
                    "dropping compressed image (frame {:?}): {e} (further ones of this kind are \
                     counted in messages_malformed, not logged)",
                    image.header.frame_id
                ),
            );
        }
        return;
    }
    // A frame converted on receipt was validated by the same check, from the same fields,
    // before its pixels went into the input frame (its message has no `data` left to check).
    let (layout, gray) = match gray {
        Some(g) => (Ok(g.layout), Some(g.frame)),
        None => (convert::validate(&image), None),
    };
    match layout {
        Ok(layout) => {
            let replaced = lock(&shared.slot)
                .frame
                .replace(Frame {
                    image,
                    layout,
                    arrival,
                    pixels: shared.pixels.clone(),
                    gray,
                })
                .is_some();
            if replaced {
                lock(&shared.stats).dropped_stale += 1;
            }
            shared.ready.notify_one();
        }
        Err(e) => {
            lock(&shared.stats).malformed += 1;
            if drops.images.first(e.kind()) {
                log.log(
                    LogLevel::Warn,
                    &format!(
                        "dropping image (frame {:?}): {e} (further ones of this kind are \
                         counted in messages_malformed, not logged)",
                        image.header.frame_id
                    ),
                );
            }
        }
    }
}
