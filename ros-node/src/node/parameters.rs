//! The node's ROS parameters as ros2-client declares them: initial values with their
//! descriptions and ranges (`describe_parameters`), the start-up ones read-only, the validator
//! that refuses a bad `set_parameters` request with its reason, and the action that applies a
//! good one.

use std::sync::Arc;

use ros2_client::parameters::{NumericRange, ParameterDescriptor, ParameterType};
use ros2_client::{NodeOptions, ParameterValue};

use super::config::NodeConfig;
use super::shared::{Shared, lock};
use crate::params::{self, Range};
use crate::processor::ProcessorFactory;

/// The start-up parameters with the values the node runs with (declared read-only).
fn start_up_values(config: &NodeConfig) -> [(&'static str, ParameterValue); 5] {
    let mb = i64::try_from(config.output_buffers_bytes >> 20).unwrap_or(i64::MAX);
    let depth = i64::try_from(config.image_qos_depth).unwrap_or(i64::MAX);
    [
        (
            "image_transport",
            ParameterValue::String(config.image_transport.name().into()),
        ),
        (
            "image_reliability",
            ParameterValue::String(config.image_reliability.name().into()),
        ),
        ("image_qos_depth", ParameterValue::Integer(depth)),
        (
            "output_reliability",
            ParameterValue::String(config.output_reliability.name().into()),
        ),
        ("output_buffers_mb", ParameterValue::Integer(mb)),
    ]
}

/// The descriptor of parameter `name` (its type is filled in from the value by ros2-client).
fn descriptor(name: &str, read_only: bool) -> ParameterDescriptor {
    let d = params::describe(name);
    ParameterDescriptor {
        name: name.to_string(),
        param_type: ParameterType::NotSet,
        description: d.as_ref().map_or("", |d| d.text).to_string(),
        additional_constraints: d.as_ref().map_or("", |d| d.constraints).to_string(),
        read_only,
        dynamic_typing: false,
        range: match d.and_then(|d| d.range) {
            None => NumericRange::NotSpecified,
            Some(Range::Integer(from_value, to_value)) => NumericRange::IntegerRange {
                from_value,
                to_value,
                step: 0,
            },
            Some(Range::Float(from_value, to_value)) => NumericRange::FloatingPointRange {
                from_value,
                to_value,
                step: 0.0,
            },
        },
    }
}

/// Every parameter declared with its value and descriptor.
fn declare(config: &NodeConfig, mut options: NodeOptions) -> NodeOptions {
    for (name, value) in config.params.to_values() {
        options = options
            .declare_parameter(name, value)
            .describe_parameter(descriptor(name, false));
    }
    for (name, value) in start_up_values(config) {
        options = options
            .declare_parameter(name, value)
            .describe_parameter(descriptor(name, true));
    }
    options
        .declare_parameter("use_sim_time", ParameterValue::Boolean(config.use_sim_time))
        .describe_parameter(descriptor("use_sim_time", false))
}

/// Node options with rosout, the parameter services and the node's parameters declared.
pub(super) fn node_options(
    config: &NodeConfig,
    shared: &Arc<Shared>,
    factory: &Arc<dyn ProcessorFactory>,
) -> NodeOptions {
    let options = NodeOptions::new()
        .enable_rosout(true)
        .start_parameter_services(true);
    let mut options = declare(config, options);
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
