//! The node's ROS parameters: declaration, typed parsing, and validation.
//!
//! Every parameter has a fixed type (ROS parameters are typed); a set request with the wrong
//! type, an unknown enum string, or an out-of-range number is rejected with a reason, which the
//! standard `set_parameters` service returns to the caller. Accepted values take effect on the
//! next frame the processing thread starts.

use ros2_client::ParameterValue;
use surfcl_core::config::{
    BackendChoice, DEFAULT_MAX_KEYPOINTS, DescriptorKind, DetectorKind, MAX_KEYPOINTS_LIMIT, Named,
};
use surfcl_core::surf::{MAX_OCTAVES, Precision, SurfConfig};

/// Why a parameter value was refused (the reason is what a `set_parameters` caller sees).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParamError {
    /// The parameter.
    pub name: String,
    /// What is wrong, as a sentence that names the parameter.
    pub message: String,
}

impl ParamError {
    fn new(name: &str, message: String) -> Self {
        Self {
            name: name.to_string(),
            message,
        }
    }
}

/// The node's parameters, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeParams {
    /// `detector`: `surf` | `harris` (the names of `surfcl_core::config`, as on the command line).
    pub detector: DetectorKind,
    /// `threshold`: detector threshold; `0.0` means the detector's default. SURF: Hessian
    /// response in OpenSURF units (default 0.0004); Harris: fraction in (0, 1] of the frame's
    /// strongest response (default 0.01), `ThresholdUnit::Relative` of `surfcl_core::config`
    /// (the command line spells this meaning `--relative-threshold`).
    pub threshold: f64,
    /// `octaves`: SURF octaves, `1..=MAX_OCTAVES` (6).
    pub octaves: i64,
    /// `upright`: skip orientation assignment.
    pub upright: bool,
    /// `max_keypoints`: strongest-N capacity, `1..=MAX_KEYPOINTS_LIMIT` (default
    /// `DEFAULT_MAX_KEYPOINTS`, the command line's too).
    pub max_keypoints: i64,
    /// `precision`: `f32` | `u8` (SURF response maps).
    pub precision: Precision,
    /// `descriptor`: `f32` | `q7`.
    pub descriptor: DescriptorKind,
    /// `ratio`: Lowe ratio on distances, in (0, 1].
    pub ratio: f64,
    /// `cross_check`: keep only mutual nearest neighbours.
    pub cross_check: bool,
    /// `backend`: `auto` | `opencl` | `cpu`.
    pub backend: BackendChoice,
    /// `device`: OpenCL device index or name substring; empty = default.
    pub device: String,
    /// `debug_image`: publish `debug_image` (rgb8 with keypoints and matches drawn).
    pub debug_image: bool,
    /// `profile`: OpenCL queues that record per-stage device times, reported in `diagnostics`
    /// as `stage_upload_ms`, `stage_kernels_ms`, `stage_readback_ms` (`surfcl_gpu::opencl::
    /// set_profiling`). Off by default: profiling costs time on NVIDIA's OpenCL. Takes effect
    /// when the backend is (re)opened, which a change of this parameter does.
    pub profile: bool,
    /// `lazy`: process no frame while none of the outputs (`keypoints`, `matches`, and
    /// `debug_image` when on) has a subscriber; frames that arrive meanwhile are counted as
    /// `frames_skipped_lazy`.
    pub lazy: bool,
}

impl Default for NodeParams {
    fn default() -> Self {
        let surf = SurfConfig::default();
        Self {
            detector: DetectorKind::default(),
            threshold: 0.0,
            octaves: i64::from(surf.octaves),
            upright: surf.upright,
            max_keypoints: DEFAULT_MAX_KEYPOINTS as i64,
            precision: surf.precision,
            descriptor: DescriptorKind::default(),
            ratio: 0.8,
            cross_check: false,
            backend: BackendChoice::default(),
            device: String::new(),
            debug_image: false,
            profile: false,
            lazy: false,
        }
    }
}

/// Names of all parameters the node declares.
pub const NAMES: [&str; 14] = [
    "detector",
    "threshold",
    "octaves",
    "upright",
    "max_keypoints",
    "precision",
    "descriptor",
    "ratio",
    "cross_check",
    "backend",
    "device",
    "debug_image",
    "profile",
    "lazy",
];

/// A numeric range of a parameter, inclusive, as `describe_parameters` reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// Integers from..=to.
    Integer(i64, i64),
    /// Floating point from..=to.
    Float(f64, f64),
}

/// What `describe_parameters` says about a parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    /// What it does.
    pub text: &'static str,
    /// Constraints a range cannot say (empty when none).
    pub constraints: &'static str,
    /// Its numeric range, when it has one.
    pub range: Option<Range>,
}

/// A found description (the arms of [`describe`] and its start-up half).
fn described(
    text: &'static str,
    constraints: &'static str,
    range: Option<Range>,
) -> Option<Description> {
    Some(Description {
        text,
        constraints,
        range,
    })
}

/// The description of parameter `name` (the run-time ones of [`NAMES`], the start-up ones of
/// the command line, and `use_sim_time`), or `None` for a name the node does not have.
pub fn describe(name: &str) -> Option<Description> {
    let d = described;
    match name {
        "detector" => d("interest point detector", "surf | harris", None),
        "threshold" => d(
            "detector threshold; 0 = the detector's default (SURF: Hessian response in \
             OpenSURF units, default 0.0004; Harris: fraction of the frame's strongest \
             response, default 0.01)",
            "finite, >= 0",
            None,
        ),
        "octaves" => d(
            "SURF octaves",
            "",
            Some(Range::Integer(1, i64::from(MAX_OCTAVES))),
        ),
        "upright" => d("skip orientation assignment (U-SURF)", "", None),
        "max_keypoints" => d(
            "strongest-N keypoints kept per frame",
            "",
            Some(Range::Integer(1, MAX_KEYPOINTS_LIMIT as i64)),
        ),
        "precision" => d("SURF response maps", "f32 | u8", None),
        "descriptor" => d("descriptor representation in keypoints", "f32 | q7", None),
        "ratio" => d(
            "Lowe ratio test on match distances",
            "0 < ratio <= 1",
            Some(Range::Float(0.0, 1.0)),
        ),
        "cross_check" => d("keep only mutual nearest neighbours", "", None),
        "backend" => d(
            "processing backend; a change reopens it",
            "auto | opencl | cpu",
            None,
        ),
        "device" => d(
            "OpenCL device index or name part; empty = default",
            "",
            None,
        ),
        "debug_image" => d(
            "publish debug_image (rgb8, keypoints and matches drawn)",
            "",
            None,
        ),
        "profile" => d(
            "OpenCL queues that time each stage (diagnostics stage_upload/kernels/readback); \
             costs time on NVIDIA's OpenCL",
            "",
            None,
        ),
        "lazy" => d(
            "process no frame while no output (keypoints, matches, debug_image when on) has a \
             subscriber",
            "",
            None,
        ),
        _ => describe_start_up(name),
    }
}

/// The descriptions of the start-up parameters and `use_sim_time`.
fn describe_start_up(name: &str) -> Option<Description> {
    let d = described;
    match name {
        "image_transport" => d(
            "image_transport's transport of the image subscription: raw (sensor_msgs/Image) or \
             compressed (sensor_msgs/CompressedImage on <image>/compressed, JPEG or PNG); \
             read-only (start-up)",
            "raw | compressed",
            None,
        ),
        "image_reliability" => d(
            "image subscription reliability; read-only (start-up)",
            "best_effort | reliable",
            None,
        ),
        "image_qos_depth" => d(
            "image subscription history depth; read-only (start-up)",
            "",
            Some(Range::Integer(1, 100)),
        ),
        "output_reliability" => d(
            "keypoints, matches and debug_image reliability; read-only (start-up)",
            "reliable | best_effort",
            None,
        ),
        "output_buffers_mb" => d(
            "MiB of encoded keypoints buffers kept for reuse; read-only (start-up)",
            "",
            Some(Range::Integer(0, 65536)),
        ),
        "use_sim_time" => d("stamp with /clock instead of the system clock", "", None),
        _ => None,
    }
}

fn want_string<'a>(name: &str, v: &'a ParameterValue) -> Result<&'a str, String> {
    match v {
        ParameterValue::String(s) => Ok(s),
        other => Err(format!("{name} must be a string, got {other:?}")),
    }
}
/// A string parameter spelled with the shared option names of `surfcl_core::config`.
fn want_named<T: Named>(name: &str, v: &ParameterValue) -> Result<T, String> {
    let text = want_string(name, v)?;
    T::from_name(text).map_err(|e| format!("{e}, got {text:?}"))
}
fn want_bool(name: &str, v: &ParameterValue) -> Result<bool, String> {
    match v {
        ParameterValue::Boolean(b) => Ok(*b),
        other => Err(format!("{name} must be a boolean, got {other:?}")),
    }
}
fn want_int(name: &str, v: &ParameterValue) -> Result<i64, String> {
    match v {
        ParameterValue::Integer(i) => Ok(*i),
        other => Err(format!("{name} must be an integer, got {other:?}")),
    }
}
fn want_double(name: &str, v: &ParameterValue) -> Result<f64, String> {
    match v {
        ParameterValue::Double(d) => Ok(*d),
        // ROS tools send `1` for a double parameter as an integer; accepting it is what
        // rclcpp does not do, but it saves users a confusing rejection.
        ParameterValue::Integer(i) => Ok(*i as f64),
        other => Err(format!("{name} must be a double, got {other:?}")),
    }
}

impl NodeParams {
    /// The current value of every parameter, for declaration.
    pub fn to_values(&self) -> Vec<(&'static str, ParameterValue)> {
        NAMES
            .iter()
            .filter_map(|n| self.get(n).map(|v| (*n, v)))
            .collect()
    }

    /// The value of parameter `name`, or `None` when the node has no such parameter.
    pub fn get(&self, name: &str) -> Option<ParameterValue> {
        use ParameterValue as V;
        Some(match name {
            "detector" => V::String(self.detector.name().into()),
            "threshold" => V::Double(self.threshold),
            "octaves" => V::Integer(self.octaves),
            "upright" => V::Boolean(self.upright),
            "max_keypoints" => V::Integer(self.max_keypoints),
            "precision" => V::String(self.precision.name().into()),
            "descriptor" => V::String(self.descriptor.name().into()),
            "ratio" => V::Double(self.ratio),
            "cross_check" => V::Boolean(self.cross_check),
            "backend" => V::String(self.backend.name().into()),
            "device" => V::String(self.device.clone()),
            "debug_image" => V::Boolean(self.debug_image),
            "profile" => V::Boolean(self.profile),
            "lazy" => V::Boolean(self.lazy),
            _ => return None,
        })
    }

    /// Sets parameter `name` to `value` after checking its type and range. On error `self` is
    /// unchanged and the message says why. Names the node does not own are ignored (`Ok`), so
    /// that the standard `use_sim_time` passes through.
    pub fn apply(&mut self, name: &str, value: &ParameterValue) -> Result<(), ParamError> {
        self.apply_value(name, value)
            .map_err(|message| ParamError::new(name, message))
    }

    fn apply_value(&mut self, name: &str, value: &ParameterValue) -> Result<(), String> {
        match name {
            "detector" => self.detector = want_named(name, value)?,
            "threshold" => {
                let t = want_double(name, value)?;
                if !t.is_finite() || t < 0.0 {
                    return Err(format!(
                        "threshold must be finite and >= 0 (0 = default), got {t}"
                    ));
                }
                self.threshold = t;
            }
            "octaves" => {
                let o = want_int(name, value)?;
                if !(1..=i64::from(MAX_OCTAVES)).contains(&o) {
                    return Err(format!("octaves must be in 1..={MAX_OCTAVES}, got {o}"));
                }
                self.octaves = o;
            }
            "upright" => self.upright = want_bool(name, value)?,
            "max_keypoints" => {
                let m = want_int(name, value)?;
                if !(1..=MAX_KEYPOINTS_LIMIT as i64).contains(&m) {
                    return Err(format!(
                        "max_keypoints must be in 1..={MAX_KEYPOINTS_LIMIT}, got {m}"
                    ));
                }
                self.max_keypoints = m;
            }
            "precision" => self.precision = want_named(name, value)?,
            "descriptor" => self.descriptor = want_named(name, value)?,
            "ratio" => {
                let r = want_double(name, value)?;
                if !(r > 0.0 && r <= 1.0) {
                    return Err(format!("ratio must be in (0, 1], got {r}"));
                }
                self.ratio = r;
            }
            "cross_check" => self.cross_check = want_bool(name, value)?,
            "backend" => self.backend = want_named(name, value)?,
            "device" => self.device = want_string(name, value)?.to_string(),
            "debug_image" => self.debug_image = want_bool(name, value)?,
            "profile" => self.profile = want_bool(name, value)?,
            "lazy" => self.lazy = want_bool(name, value)?,
            _ => {}
        }
        Ok(())
    }

    /// Parses `text` (from `-p name:=text` on the command line) with the type of parameter
    /// `name`, then [`NodeParams::apply`]s it.
    pub fn apply_str(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        let refuse = |message: String| ParamError::new(name, message);
        let current = self.get(name).ok_or_else(|| {
            refuse(format!(
                "unknown parameter {name:?} (known: {})",
                NAMES.join(", ")
            ))
        })?;
        let value = match current {
            ParameterValue::Boolean(_) => match text {
                "true" | "True" | "1" => ParameterValue::Boolean(true),
                "false" | "False" | "0" => ParameterValue::Boolean(false),
                _ => {
                    return Err(refuse(format!(
                        "{name} must be true or false, got {text:?}"
                    )));
                }
            },
            ParameterValue::Integer(_) => ParameterValue::Integer(
                text.parse()
                    .map_err(|e| refuse(format!("{name} must be an integer, got {text:?}: {e}")))?,
            ),
            ParameterValue::Double(_) => ParameterValue::Double(
                text.parse()
                    .map_err(|e| refuse(format!("{name} must be a number, got {text:?}: {e}")))?,
            ),
            _ => ParameterValue::String(text.to_string()),
        };
        self.apply(name, &value)
    }

    /// Whether switching from `self` to `other` needs a different backend instance.
    pub fn same_backend(&self, other: &NodeParams) -> bool {
        self.backend == other.backend
            && self.device == other.device
            && self.profile == other.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_every_parameter() {
        let p = NodeParams::default();
        let mut q = NodeParams {
            detector: DetectorKind::Harris,
            threshold: 1.0,
            octaves: 2,
            upright: true,
            max_keypoints: 5,
            precision: Precision::Packed8,
            descriptor: DescriptorKind::Q7,
            ratio: 0.5,
            cross_check: true,
            backend: BackendChoice::Cpu,
            device: "x".into(),
            debug_image: true,
            profile: true,
            lazy: true,
        };
        for (name, value) in p.to_values() {
            q.apply(name, &value).unwrap();
        }
        assert_eq!(p, q);
        assert_eq!(p.to_values().len(), NAMES.len());
    }

    #[test]
    fn rejects_bad_values_with_reason() {
        let mut p = NodeParams::default();
        let before = p.clone();
        for (name, value) in [
            ("octaves", ParameterValue::Integer(0)),
            ("octaves", ParameterValue::Integer(7)),
            ("octaves", ParameterValue::Double(3.0)),
            ("threshold", ParameterValue::Double(-1.0)),
            ("threshold", ParameterValue::Double(f64::NAN)),
            ("ratio", ParameterValue::Double(1.5)),
            ("ratio", ParameterValue::Double(0.0)),
            ("max_keypoints", ParameterValue::Integer(0)),
            ("detector", ParameterValue::String("sift".into())),
            ("backend", ParameterValue::String("cuda".into())),
            ("descriptor", ParameterValue::Boolean(true)),
        ] {
            let err = p.apply(name, &value).unwrap_err();
            assert_eq!(err.name, name);
            assert!(err.to_string().contains(name), "{err}");
        }
        assert_eq!(p, before);
    }

    #[test]
    fn command_line_strings_follow_declared_types() {
        let mut p = NodeParams::default();
        p.apply_str("threshold", "0.001").unwrap();
        p.apply_str("octaves", "3").unwrap();
        p.apply_str("upright", "true").unwrap();
        p.apply_str("detector", "harris").unwrap();
        assert_eq!(
            (p.threshold, p.octaves, p.upright, p.detector),
            (0.001, 3, true, DetectorKind::Harris)
        );
        assert!(p.apply_str("octaves", "three").is_err());
        assert!(p.apply_str("nope", "1").is_err());
    }

    #[test]
    fn every_parameter_is_described_and_ranges_match_validation() {
        for name in NAMES {
            let d = describe(name).unwrap_or_else(|| panic!("{name} has no description"));
            assert!(!d.text.is_empty());
        }
        assert!(describe("nope").is_none());
        let mut p = NodeParams::default();
        let Some(Range::Integer(lo, hi)) = describe("octaves").unwrap().range else {
            panic!("octaves has no integer range")
        };
        assert!(p.apply("octaves", &ParameterValue::Integer(hi)).is_ok());
        assert!(p.apply("octaves", &ParameterValue::Integer(lo)).is_ok());
        assert!(
            p.apply("octaves", &ParameterValue::Integer(hi + 1))
                .is_err()
        );
        assert!(
            p.apply("octaves", &ParameterValue::Integer(lo - 1))
                .is_err()
        );
        let Some(Range::Integer(_, hi)) = describe("max_keypoints").unwrap().range else {
            panic!("max_keypoints has no integer range")
        };
        assert!(
            p.apply("max_keypoints", &ParameterValue::Integer(hi))
                .is_ok()
        );
        assert!(
            p.apply("max_keypoints", &ParameterValue::Integer(hi + 1))
                .is_err()
        );
    }
}
