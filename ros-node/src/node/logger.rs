//! The node's logger: `/rosout` and (optionally) stderr.

use ros2_client::ros2::LogLevel;
use ros2_client::{Node, NodeLoggingHandle, rosout};

use super::config::NodeConfig;

/// Logs to `/rosout` and (optionally) stderr.
pub(super) struct Logger {
    handle: NodeLoggingHandle,
    name: String,
    stderr: bool,
    /// Messages below it are not logged (`--log-level`).
    level: LogLevel,
}

impl Logger {
    pub(super) fn new(node: &Node, config: &NodeConfig) -> Self {
        Self {
            handle: node.logging_handle(),
            name: config.node_name.clone(),
            stderr: config.log_to_stderr,
            level: config.log_levels.level_of(&config.node_name),
        }
    }
    pub(super) fn log(&self, level: LogLevel, text: &str) {
        if level < self.level {
            return;
        }
        if self.stderr {
            eprintln!("[{level:?}] [{}]: {text}", self.name);
        }
        rosout!(self.handle, level, "{}", text);
    }
}
