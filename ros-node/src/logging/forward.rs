//! Forwarding `log` records to `/rosout`, as rcl forwards its libraries' log lines: RustDDS,
//! ros2-client and the node's own modules become `rcl_interfaces/Log` messages that
//! `ros2 topic echo /rosout` and rqt_console show.
//!
//! Records are queued (bounded; a full queue drops the record) and published by a thread of
//! their own, for two reasons:
//! - a record logged on RustDDS's event-loop thread must not wait for a DDS write that needs
//!   that same thread to make progress;
//! - publishing to `/rosout` runs RustDDS code that may log in turn. Records logged on the
//!   forwarding thread itself are never forwarded, which ends that loop; a record that the
//!   publish provokes on another thread passes the backend's per-call-site limit first, which
//!   bounds any loop through it to one record per call site and interval.

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use log::Record;
use ros2_client::NodeLoggingHandle;
use ros2_client::ros2::LogLevel;
use ros2_client::rosout::RosoutRaw;

/// Records waiting to be published; beyond this a record is dropped rather than blocking the
/// thread that logged it.
const QUEUE_LEN: usize = 256;

/// The crates whose records are the node's own: on `/rosout` they carry the node's name.
const NODE_CRATES: [&str; 2] = ["surfcl_ros", "surfcl_node"];

/// One record, owned, on its way to the forwarding thread.
struct Forwarded {
    level: LogLevel,
    target: String,
    message: String,
    file: String,
    line: u32,
}

/// The queue of the forwarding that is active, tagged with the id of its [`RosoutForwarding`]
/// (so that ending an older forwarding leaves a newer one in place).
static QUEUE: Mutex<Option<(u64, SyncSender<Forwarded>)>> = Mutex::new(None);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Set on the forwarding thread: what it logs while publishing is not forwarded again.
    static ON_FORWARDING_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// The ROS level of a `log` level (`log` has no fatal, ROS no trace).
fn ros_level(level: log::Level) -> LogLevel {
    match level {
        log::Level::Error => LogLevel::Error,
        log::Level::Warn => LogLevel::Warn,
        log::Level::Info => LogLevel::Info,
        log::Level::Debug | log::Level::Trace => LogLevel::Debug,
    }
}

/// The logger name of `target` on `/rosout`: the node's name for the node's own modules,
/// otherwise the Rust module path with ROS's `.` separators (`rustdds.rtps.writer`), as rcl's
/// library loggers (`rcl`, `rmw_fastrtps_cpp`) are named after the library.
pub(super) fn rosout_name(target: &str, node_name: &str) -> String {
    let own = NODE_CRATES.iter().any(|c| {
        target == *c
            || target
                .strip_prefix(c)
                .is_some_and(|rest| rest.starts_with("::"))
    });
    if own {
        node_name.to_string()
    } else {
        target.replace("::", ".")
    }
}

/// Queues `record` for `/rosout` when a forwarding is active and this is not the forwarding
/// thread. Never blocks.
pub(super) fn forward(record: &Record<'_>) {
    if ON_FORWARDING_THREAD.with(Cell::get) {
        return;
    }
    let queue = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
    let Some((_, sender)) = queue.as_ref() else {
        return;
    };
    let forwarded = Forwarded {
        level: ros_level(record.level()),
        target: record.target().to_string(),
        message: record.args().to_string(),
        file: record.file().unwrap_or("").to_string(),
        line: record.line().unwrap_or(0),
    };
    // A full queue drops the record: the thread that logged it must not wait for /rosout.
    let _ = sender.try_send(forwarded);
}

/// Publishes queued records until every sender is gone.
fn publish_queued(records: Receiver<Forwarded>, handle: NodeLoggingHandle, node_name: String) {
    ON_FORWARDING_THREAD.with(|f| f.set(true));
    for r in records {
        handle.rosout_raw(
            ros2_client::builtin_interfaces::Time::now(),
            r.level,
            &rosout_name(&r.target, &node_name),
            &r.message,
            &r.file,
            "<unknown_func>",
            r.line,
        );
    }
}

/// An active forwarding of `log` records to a node's `/rosout` writer. Dropping it stops the
/// forwarding (records still queued are published first).
pub struct RosoutForwarding {
    id: u64,
    thread: Option<JoinHandle<()>>,
}

impl RosoutForwarding {
    /// Starts forwarding the records that the backend of [`super::install`] lets through to
    /// `/rosout` through `handle`, the node's own records under `node_name`. A process has
    /// one forwarding at a time: a later one replaces this one.
    pub fn start(handle: NodeLoggingHandle, node_name: &str) -> std::io::Result<Self> {
        let (sender, records) = sync_channel(QUEUE_LEN);
        let node_name = node_name.to_string();
        let thread = std::thread::Builder::new()
            .name("surfcl-rosout-log".into())
            .spawn(move || publish_queued(records, handle, node_name))?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        *QUEUE.lock().unwrap_or_else(|p| p.into_inner()) = Some((id, sender));
        Ok(Self {
            id,
            thread: Some(thread),
        })
    }
}

impl Drop for RosoutForwarding {
    fn drop(&mut self) {
        {
            let mut queue = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
            if queue.as_ref().is_some_and(|(id, _)| *id == self.id) {
                // Dropping the sender ends the thread once the queue is empty.
                queue.take();
            }
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_modules_carry_the_node_name_libraries_their_path() {
        assert_eq!(rosout_name("surfcl_ros::node::receive", "cam"), "cam");
        assert_eq!(rosout_name("surfcl_node", "cam"), "cam");
        assert_eq!(
            rosout_name("rustdds::rtps::message_receiver", "cam"),
            "rustdds.rtps.message_receiver"
        );
        assert_eq!(rosout_name("surfcl_rosbag", "cam"), "surfcl_rosbag");
    }
}
