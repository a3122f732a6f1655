//! The node's `/rosout` records, collected as they arrive (the tests that check what the node
//! logs).
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ros2_client::log::Log;
use ros2_client::qos::History;
use ros2_client::{NodeOptions, QosProfile};

/// Collects the `/rosout` records on a domain as they arrive.
pub struct Rosout {
    records: Arc<Mutex<Vec<Log>>>,
    _node: ros2_client::Node,
}

impl Rosout {
    /// A reader of `/rosout` on `domain` (loopback only), collecting in the background.
    pub fn new(domain: u16) -> Self {
        let (ctx, mut node) = crate::common::loopback_node(
            domain,
            "surfcl_rosout_reader",
            NodeOptions::new()
                .enable_rosout(false)
                .start_parameter_services(false),
        );
        // The rosout topic keeps one record; this reader keeps more, so that none is replaced
        // before it is taken.
        let qos = QosProfile::publisher_default().history(History::KeepLast { depth: 100 });
        let sub = node
            .create_subscription::<Log>(&ctx.get_rosout_topic(), Some(qos))
            .unwrap();
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        smol::spawn(async move {
            while let Ok((log, _)) = sub.async_take().await {
                sink.lock().unwrap().push(log);
            }
        })
        .detach();
        Rosout {
            records,
            _node: node,
        }
    }

    /// The records so far that start with `prefix`.
    pub fn starting_with(&self, prefix: &str) -> Vec<String> {
        let records = self.records.lock().unwrap();
        records
            .iter()
            .filter(|r| r.msg.starts_with(prefix))
            .map(|r| r.msg.clone())
            .collect()
    }

    /// The records so far whose message contains `text`.
    pub fn containing(&self, text: &str) -> Vec<Log> {
        let records = self.records.lock().unwrap();
        records
            .iter()
            .filter(|r| r.msg.contains(text))
            .cloned()
            .collect()
    }

    /// Waits (bounded by `limit`) until `count` records start with `prefix`, then half a second
    /// more for any further ones; returns them all.
    pub fn wait_for(&self, prefix: &str, count: usize, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        while self.starting_with(prefix).len() < count && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        self.starting_with(prefix)
    }
}
