//! Which of the node's outputs have subscribers, for the `lazy` parameter: recounted from the
//! participant's discovered readers whenever the ROS graph changes (ros2-client's node events)
//! and at least once a second.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ros2_client::{Context, Node};

use super::shared::Shared;

/// Bits of [`Shared::subscribed`]: an output topic with at least one subscriber.
pub(super) const KEYPOINTS: u8 = 1;
/// `matches` has a subscriber.
pub(super) const MATCHES: u8 = 2;
/// `debug_image` has a subscriber.
pub(super) const DEBUG_IMAGE: u8 = 4;

/// The DDS topic names of `keypoints`, `matches` and `debug_image`, in the bits' order.
pub(super) struct OutputTopics(pub(super) [String; 3]);

impl OutputTopics {
    /// From the resolved ROS names (`/ns/keypoints` is DDS topic `rt/ns/keypoints`).
    pub(super) fn from_resolved(keypoints: &str, matches: &str, debug_image: &str) -> Self {
        Self([keypoints, matches, debug_image].map(|n| format!("rt{n}")))
    }

    /// The bits of the topics that `readers` (DDS topic names of discovered readers) include.
    pub(super) fn subscribed<'a>(&self, readers: impl Iterator<Item = &'a str>) -> u8 {
        let mut bits = 0;
        for topic in readers {
            for (i, ours) in self.0.iter().enumerate() {
                if topic == ours {
                    bits |= 1 << i;
                }
            }
        }
        bits
    }
}

/// Whether a frame needs processing: always unless `lazy`; when lazy, only while an output the
/// frame would be published on has a subscriber.
pub(super) fn wanted(lazy: bool, debug_image: bool, subscribed: u8) -> bool {
    let outputs = KEYPOINTS | MATCHES | if debug_image { DEBUG_IMAGE } else { 0 };
    !lazy || subscribed & outputs != 0
}

/// Spawns the task that keeps `shared.subscribed` up to date.
pub(super) fn spawn(
    shared: Arc<Shared>,
    context: &Context,
    node: &Node,
    topics: OutputTopics,
) -> smol::Task<()> {
    let participant = context.domain_participant().clone();
    let events = node.status_receiver();
    smol::spawn(async move {
        loop {
            let readers = participant.discovered_readers();
            let bits = topics.subscribed(
                readers
                    .iter()
                    .map(|r| r.subscription_topic_data.topic_name.as_str()),
            );
            shared.subscribed.store(bits, Ordering::SeqCst);
            let tick = async {
                smol::Timer::after(Duration::from_secs(1)).await;
            };
            match &events {
                // A graph change, or the tick: recount either way.
                Some(rx) => {
                    smol::future::or(async { drop(rx.recv().await) }, tick).await;
                    // Discovery data lands just after the event that announces it.
                    smol::Timer::after(Duration::from_millis(20)).await;
                    // One recount covers the events of a burst (a node starting announces
                    // dozens): without this, each queued event cost a recount and 20 ms.
                    while rx.try_recv().is_ok() {}
                }
                None => tick.await,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribed_bits_follow_the_readers_topics() {
        let t = OutputTopics::from_resolved("/r/keypoints", "/r/matches", "/r/debug_image");
        assert_eq!(t.subscribed(["rt/other", "rt/r/image"].into_iter()), 0);
        assert_eq!(t.subscribed(["rt/r/matches"].into_iter()), MATCHES);
        assert_eq!(
            t.subscribed(["rt/r/debug_image", "rt/r/keypoints", "rt/r/keypoints"].into_iter()),
            KEYPOINTS | DEBUG_IMAGE
        );
    }

    #[test]
    fn lazy_processes_only_for_subscribed_outputs() {
        assert!(wanted(false, false, 0), "not lazy: always");
        assert!(!wanted(true, false, 0));
        assert!(wanted(true, false, KEYPOINTS));
        assert!(wanted(true, false, MATCHES));
        assert!(!wanted(true, false, DEBUG_IMAGE), "debug_image off");
        assert!(wanted(true, true, DEBUG_IMAGE));
    }
}
