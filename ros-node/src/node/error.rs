//! The node's start-up error.

/// Errors while starting the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A node or topic name is not a valid ROS name.
    #[error("invalid name {name:?}: {reason}")]
    Name {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The DDS participant or a ROS entity could not be created.
    #[error("ROS 2: {0}")]
    Ros(String),
    /// A thread could not be started.
    #[error("cannot start a node thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// A ROS 2 or DDS error, as a [`NodeError::Ros`] with its debug text.
pub(super) fn ros_err(e: impl std::fmt::Debug) -> NodeError {
    NodeError::Ros(format!("{e:?}"))
}
