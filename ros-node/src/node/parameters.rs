//! The node's ROS parameters as ros2-client declares them: initial values, the validator that
//! refuses a bad `set_parameters` request with its reason, and the action that applies a good
//! one.

use std::sync::Arc;

use ros2_client::NodeOptions;

use super::{NodeConfig, Shared, lock};
use crate::processor::ProcessorFactory;

/// Node options with rosout, the parameter services and the node's parameters declared.
pub(super) fn node_options(
    config: &NodeConfig,
    shared: &Arc<Shared>,
    factory: &Arc<dyn ProcessorFactory>,
) -> NodeOptions {
    let mut options = NodeOptions::new()
        .enable_rosout(true)
        .start_parameter_services(true);
    for (name, value) in config.params.to_values() {
        options = options.declare_parameter(name, value);
    }
    let (v_shared, v_factory) = (Arc::clone(shared), Arc::clone(factory));
    options = options.parameter_validator(Box::new(move |name, value| {
        let mut candidate = lock(&v_shared.params).clone();
        candidate.apply(name, value).map_err(|e| e.to_string())?;
        v_factory.check(&candidate).map_err(|e| e.to_string())?;
        let current_backend = lock(&v_shared.params).same_backend(&candidate);
        if !current_backend {
            // Open it now so that a backend or device that cannot be opened is refused with
            // the reason, instead of failing every following frame.
            let processor = v_factory.open(&candidate).map_err(|e| e.to_string())?;
            *lock(&v_shared.staged) = Some((candidate, processor));
        }
        Ok(())
    }));
    let a_shared = Arc::clone(shared);
    options.parameter_set_action(Box::new(move |name, value| {
        lock(&a_shared.params)
            .apply(name, value)
            .map_err(|e| e.to_string())
    }))
}
