//! The JSON reports of `surfcl detect`, `match`, `eval` and `stream`. The formats (and that of
//! `bench`, built in its module) are documented for users in `docs/JSON.md`; keep the two in
//! step, and raise [`FORMAT_VERSION`] when a field changes meaning or disappears.
//!
//! - `detect`: `{"format_version", "width", "height", "detector", "backend", "device", "params",
//!   "keypoints": [{"x", "y", "scale", "orientation", "response", "laplacian"}], "descriptors":
//!   [[64 x f32], ...], "dropped", "timings_ms": {stage: ms}}`. Timings keep the execution order
//!   of the stages.
//! - `match`: `{"format_version", "detector", "backend", "device", "descriptor", "params",
//!   "keypoints1", "keypoints2", "matches": [{"query", "train", "distance"}], "correct",
//!   "correct_ratio"}`. `keypoints1`/`keypoints2` are the *arrays* of keypoints of the two images
//!   (same objects as in `detect`), so that `query`/`train` indices can be resolved to positions
//!   without a second run; `correct` and `correct_ratio` are present only with `--homography`.
//! - `eval`: `{"format_version", "dir", "detector", "backend", "device", "threshold",
//!   "threshold_relative", "params", "pairs": [{"pair", "keypoints1", "keypoints2", "matches",
//!   "correct", "correct_ratio", "repeatability"}]}` with counts (not arrays).
//! - `stream`: `{"format_version", "backend", "device", "detector", "params", "frames": [...]}`,
//!   one row per input frame: the keypoints and matches (same objects as above) of a processed
//!   frame, or the error of a skipped one.
//! - `params` ([`ParamsJson`]): the detection (and matching) parameters in effect, defaults
//!   included, so that a report says how it was made.
//!
//! `f32` values are written as `f32` (the shortest text that reads back as the same `f32`:
//! `584.2724`, not the `f64` widening `584.2723999023438`), also where a report goes through a
//! `serde_json::Value` ([`json_f32`]).
//!
//! Every struct also implements `Deserialize`, so tests and tools can read the reports back.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use surfcl_core::Keypoint;
use surfcl_core::matcher::Match;

use surfcl_core::matcher::MatchConfig;

use surfcl_core::config::Named;
use surfcl_gpu::backend::{DescriptorKind, DetectParams, DetectorKind, Features, StageTiming};

/// The version of every report's format, `"format_version"` in each (and in the NumPy archives).
/// 2: one keypoint shape everywhere (objects), `correct_ratio` for correct / matches, precisions
/// spelt `f32` / `u8` (version 1 had no `format_version` field).
pub const FORMAT_VERSION: u32 = 2;

/// Serialisers of `f32` fields that write the value as the `f32` it is, also when the report is
/// first turned into a `serde_json::Value` (whose numbers are `f64`: `serde_json::to_value` would
/// widen `0.0004_f32` to `0.0003999999898951501`). The value written is the `f64` nearest to the
/// shortest decimal text of the `f32`, which prints as that text and reads back as the same
/// `f32`.
pub mod json_f32 {
    use serde::Serializer;

    /// The `f64` that prints as the shortest text of `x`.
    pub fn widen(x: f32) -> f64 {
        x.to_string().parse().unwrap_or(f64::from(x))
    }

    /// `#[serde(serialize_with = "json_f32::serialize")]`.
    pub fn serialize<S: Serializer>(x: &f32, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(widen(*x))
    }

    /// The same for an `Option<f32>`.
    pub fn serialize_option<S: Serializer>(
        x: &Option<f32>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => serializer.serialize_some(&widen(*x)),
            None => serializer.serialize_none(),
        }
    }

    /// A `serde_json::Value` of `x` that prints as `x`'s shortest text.
    pub fn value(x: f32) -> serde_json::Value {
        serde_json::Value::from(widen(x))
    }
}

/// SURF parameters of [`ParamsJson`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SurfParamsJson {
    /// Octaves.
    pub octaves: u8,
    /// Sample step of the first octave.
    pub sample_step: u8,
    /// Response storage (the numeric precision of the response maps): `"f32"` or `"u8"`.
    pub precision: String,
    /// Upright (no orientation).
    pub upright: bool,
}

/// Harris parameters of [`ParamsJson`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HarrisParamsJson {
    /// The `k` of `R = det - k trace^2`.
    #[serde(serialize_with = "json_f32::serialize")]
    pub k: f32,
    /// Side of the summation window, pixels.
    pub window: usize,
    /// Scale at which the descriptors are computed.
    #[serde(serialize_with = "json_f32::serialize")]
    pub descriptor_scale: f32,
    /// Sub-pixel refinement.
    pub subpixel: bool,
}

/// Matcher parameters of [`ParamsJson`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchParamsJson {
    /// Descriptors compared: `"f32"` or `"q7"`.
    pub descriptor: String,
    /// Ratio test: nearest < ratio * second nearest.
    #[serde(serialize_with = "json_f32::serialize")]
    pub ratio: f32,
    /// Mutual nearest neighbours only.
    pub cross_check: bool,
    /// Equal signs of the Laplacian required.
    pub sign_test: bool,
    /// Largest accepted descriptor distance, if any.
    #[serde(serialize_with = "json_f32::serialize_option")]
    pub max_distance: Option<f32>,
}

/// The parameters of a run, `"params"` in every JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamsJson {
    /// `"surf"` or `"harris"`.
    pub detector: String,
    /// The detector threshold in effect.
    #[serde(serialize_with = "json_f32::serialize")]
    pub threshold: f32,
    /// Whether `threshold` is a fraction of the image's largest response (Harris' default).
    pub threshold_relative: bool,
    /// Keypoint capacity (the strongest are kept).
    pub max_keypoints: usize,
    /// SURF parameters (SURF only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surf: Option<SurfParamsJson>,
    /// Harris parameters (Harris only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harris: Option<HarrisParamsJson>,
    /// Matcher parameters (commands that match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<MatchParamsJson>,
}

impl ParamsJson {
    /// The record of `params` (and of `matching` with its descriptor kind, when the command
    /// matches).
    pub fn new(params: &DetectParams, matching: Option<(&MatchConfig, DescriptorKind)>) -> Self {
        let (threshold, threshold_relative) = params.effective_threshold();
        let surf = (params.detector == DetectorKind::Surf).then(|| SurfParamsJson {
            octaves: params.surf.octaves,
            sample_step: params.surf.init_sample_step,
            precision: params.surf.precision.name().into(),
            upright: params.surf.upright,
        });
        let harris = (params.detector == DetectorKind::Harris).then_some(HarrisParamsJson {
            k: params.harris.k,
            window: params.harris.window,
            descriptor_scale: params.harris.descriptor_scale,
            subpixel: params.harris.subpixel,
        });
        Self {
            detector: params.detector.name().into(),
            threshold,
            threshold_relative,
            max_keypoints: params.max_keypoints,
            surf,
            harris,
            matching: matching.map(|(c, descriptor)| MatchParamsJson {
                descriptor: descriptor.name().into(),
                ratio: c.ratio,
                cross_check: c.cross_check,
                sign_test: c.sign_test,
                max_distance: c.max_distance,
            }),
        }
    }
}

/// A keypoint as written in the JSON (the internal sample position fields are left out).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KeypointJson {
    /// Column, pixels.
    #[serde(serialize_with = "json_f32::serialize")]
    pub x: f32,
    /// Row, pixels.
    #[serde(serialize_with = "json_f32::serialize")]
    pub y: f32,
    /// Scale (Gaussian sigma).
    #[serde(serialize_with = "json_f32::serialize")]
    pub scale: f32,
    /// Orientation, radians in `[0, 2 pi)`.
    #[serde(serialize_with = "json_f32::serialize")]
    pub orientation: f32,
    /// Detector response.
    #[serde(serialize_with = "json_f32::serialize")]
    pub response: f32,
    /// Sign of the Laplacian: -1, 0 (Harris) or 1.
    pub laplacian: i8,
}

impl From<&Keypoint> for KeypointJson {
    fn from(k: &Keypoint) -> Self {
        Self {
            x: k.x,
            y: k.y,
            scale: k.scale,
            orientation: k.orientation,
            response: k.response,
            laplacian: k.laplacian,
        }
    }
}

/// Stage timings that serialise as a JSON object `{stage: ms}` in execution order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Timings(pub Vec<StageTiming>);

impl Serialize for Timings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for t in &self.0 {
            map.serialize_entry(&t.name, &t.ms)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Timings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Order is not preserved on reading (serde_json's map is sorted); the values are.
        let map = std::collections::BTreeMap::<String, f64>::deserialize(deserializer)?;
        Ok(Timings(
            map.into_iter()
                .map(|(name, ms)| StageTiming { name, ms })
                .collect(),
        ))
    }
}

/// The output of `surfcl detect --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectReport {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// `"surf"` or `"harris"`.
    pub detector: String,
    /// `"cpu"` or `"opencl"`.
    pub backend: String,
    /// The device description.
    pub device: String,
    /// The parameters used.
    pub params: ParamsJson,
    /// Keypoints, strongest first.
    pub keypoints: Vec<KeypointJson>,
    /// One 64-float unit-length descriptor per keypoint.
    pub descriptors: Vec<Vec<f32>>,
    /// Candidates not kept because `--max-keypoints` was reached.
    pub dropped: usize,
    /// Milliseconds per stage.
    pub timings_ms: Timings,
}

impl DetectReport {
    /// Builds the report of one detection with `params`.
    pub fn new(features: &Features, params: &DetectParams, backend: &str, device: &str) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            width: features.width,
            height: features.height,
            detector: params.detector.name().to_owned(),
            backend: backend.to_owned(),
            device: device.to_owned(),
            params: ParamsJson::new(params, None),
            keypoints: features.keypoints.iter().map(KeypointJson::from).collect(),
            descriptors: features.descriptors.iter().map(|d| d.to_vec()).collect(),
            dropped: features.dropped,
            timings_ms: Timings(features.timings.clone()),
        }
    }
}

/// One match in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MatchJson {
    /// Index into `keypoints1`.
    pub query: usize,
    /// Index into `keypoints2`.
    pub train: usize,
    /// Descriptor distance (L2 for f32; for Q7 the L2 distance of the Q7 vectors / 127, so that
    /// both are on the same scale).
    #[serde(serialize_with = "json_f32::serialize")]
    pub distance: f32,
}

/// The output of `surfcl match --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchReport {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// `"surf"` or `"harris"`.
    pub detector: String,
    /// `"cpu"` or `"opencl"`.
    pub backend: String,
    /// The device description.
    pub device: String,
    /// `"f32"` or `"q7"`.
    pub descriptor: String,
    /// The parameters used (detection and matching).
    pub params: ParamsJson,
    /// Keypoints of the first image.
    pub keypoints1: Vec<KeypointJson>,
    /// Keypoints of the second image.
    pub keypoints2: Vec<KeypointJson>,
    /// Matches, in query order.
    pub matches: Vec<MatchJson>,
    /// Matches mapped within 3 px by the homography (only with `--homography`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<usize>,
    /// `correct / matches`, the share of matches that are correct (only with `--homography`; 0
    /// when there is no match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_ratio: Option<f64>,
}

impl From<&Match> for MatchJson {
    fn from(m: &Match) -> Self {
        Self {
            query: m.query as usize,
            train: m.train as usize,
            distance: m.distance,
        }
    }
}

/// Converts core matches to their JSON form.
pub fn matches_json(matches: &[Match]) -> Vec<MatchJson> {
    matches.iter().map(MatchJson::from).collect()
}

/// One image pair of `surfcl eval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalPair {
    /// `"1-K"`.
    pub pair: String,
    /// Keypoints in img1.
    pub keypoints1: usize,
    /// Keypoints in imgK.
    pub keypoints2: usize,
    /// Matches found.
    pub matches: usize,
    /// Matches mapped within 3 px by the ground-truth homography.
    pub correct: usize,
    /// `correct / matches`, the share of matches that are correct (0 when there is no match).
    pub correct_ratio: f64,
    /// Detector repeatability under the homography, in `[0, 1]`.
    pub repeatability: f64,
}

/// The output of `surfcl eval --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The data set folder.
    pub dir: String,
    /// `"surf"` or `"harris"`.
    pub detector: String,
    /// `"cpu"` or `"opencl"`.
    pub backend: String,
    /// The device description.
    pub device: String,
    /// The detector threshold used.
    #[serde(serialize_with = "json_f32::serialize")]
    pub threshold: f32,
    /// Whether `threshold` is a fraction of the largest response (Harris' default) rather than
    /// an absolute value.
    pub threshold_relative: bool,
    /// The parameters used (detection and matching).
    pub params: ParamsJson,
    /// One row per pair 1-2 .. 1-N.
    pub pairs: Vec<EvalPair>,
}

/// One input frame of `surfcl stream`: processed, or skipped with the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StreamFrameJson {
    /// A frame that was detected (and matched against the previous processed one).
    Processed {
        /// Position in the input sequence (skipped frames count).
        index: usize,
        /// The frame's file.
        path: String,
        /// Keypoints, strongest first.
        keypoints: Vec<KeypointJson>,
        /// Input index of the frame matched against (the previous processed frame), if any.
        previous: Option<usize>,
        /// Matches of this frame (query) against `previous` (train).
        matches: Vec<MatchJson>,
        /// Host wall time of the frame, milliseconds.
        latency_ms: f64,
    },
    /// A frame that could not be read or processed.
    Skipped {
        /// Position in the input sequence.
        index: usize,
        /// The frame's file.
        path: String,
        /// Why it was skipped.
        error: String,
    },
}

/// The output of `surfcl stream --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// `"cpu"` or `"opencl"`.
    pub backend: String,
    /// The device description (`null` when no frame could be read).
    pub device: Option<String>,
    /// `"surf"` or `"harris"`.
    pub detector: String,
    /// The parameters used (detection and matching).
    pub params: ParamsJson,
    /// One row per input frame, in input order.
    pub frames: Vec<StreamFrameJson>,
}

/// `correct / total`, or 0 when `total` is 0.
pub fn ratio(correct: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        correct as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_report_has_the_contract_keys_and_ordered_timings() {
        let features = Features {
            width: 4,
            height: 3,
            keypoints: vec![Keypoint {
                x: 1.5,
                laplacian: -1,
                ..Keypoint::default()
            }],
            descriptors: vec![[0.125; 64]],
            dropped: 7,
            timings: vec![
                StageTiming {
                    name: "integral".into(),
                    ms: 1.0,
                },
                StageTiming {
                    name: "detect".into(),
                    ms: 2.0,
                },
            ],
        };
        let params = DetectParams {
            detector: DetectorKind::Surf,
            surf: surfcl_core::surf::SurfConfig::default(),
            harris: surfcl_core::harris::HarrisConfig::default(),
            max_keypoints: 123,
            descriptor: DescriptorKind::F32,
        };
        let report = DetectReport::new(&features, &params, "cpu", "test");
        let text = serde_json::to_string(&report).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in [
            "format_version",
            "width",
            "height",
            "detector",
            "backend",
            "device",
            "keypoints",
            "descriptors",
            "dropped",
            "timings_ms",
            "params",
        ] {
            assert!(value.get(key).is_some(), "missing {key}");
        }
        assert_eq!(value["keypoints"][0]["laplacian"], -1);
        assert_eq!(value["descriptors"][0].as_array().unwrap().len(), 64);
        assert_eq!(value["dropped"], 7);
        assert_eq!(value["params"]["max_keypoints"], 123);
        assert_eq!(value["params"]["surf"]["octaves"], 4);
        // serde_json writes the shortest text that reads back as the same f32.
        assert_eq!(value["params"]["threshold"].as_f64(), Some(0.0004));
        assert!(
            value["params"].get("harris").is_none() && value["params"].get("matching").is_none()
        );
        assert!(text.find("\"integral\"").unwrap() < text.find("\"detect\"").unwrap());
        let back: DetectReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back.keypoints, report.keypoints);
    }

    #[test]
    fn f32_values_print_as_f32_also_through_a_json_value() {
        let k = KeypointJson {
            x: 584.2724,
            y: 0.1,
            scale: 1.6,
            orientation: 2.5,
            response: 0.0004,
            laplacian: 1,
        };
        let direct = serde_json::to_string(&k).unwrap();
        let through_value = serde_json::to_value(k).unwrap().to_string();
        for text in [&direct, &through_value] {
            for (key, value) in [("x", "584.2724"), ("y", "0.1"), ("response", "0.0004")] {
                let field = format!("\"{key}\":{value}");
                assert!(
                    text.contains(&format!("{field},")) || text.contains(&format!("{field}}}")),
                    "{key} in {text}"
                );
            }
        }
        let back: KeypointJson = serde_json::from_str(&through_value).unwrap();
        assert_eq!(back, k);
        assert_eq!(json_f32::value(0.0004).to_string(), "0.0004");
    }

    #[test]
    fn match_report_omits_correct_without_homography() {
        let mut report = MatchReport {
            format_version: FORMAT_VERSION,
            detector: "surf".into(),
            backend: "cpu".into(),
            device: "x".into(),
            descriptor: "f32".into(),
            params: ParamsJson::new(
                &DetectParams {
                    detector: DetectorKind::Harris,
                    surf: surfcl_core::surf::SurfConfig::default(),
                    harris: surfcl_core::harris::HarrisConfig::default(),
                    max_keypoints: 10,
                    descriptor: DescriptorKind::Q7,
                },
                Some((&MatchConfig::default(), DescriptorKind::Q7)),
            ),
            keypoints1: vec![],
            keypoints2: vec![],
            matches: vec![],
            correct: None,
            correct_ratio: None,
        };
        let v = serde_json::to_value(&report).unwrap();
        assert!(v.get("correct").is_none() && v.get("correct_ratio").is_none());
        assert_eq!(v["format_version"], 2);
        assert_eq!(v["params"]["detector"], "harris");
        assert_eq!(v["params"]["threshold_relative"], true);
        assert_eq!(v["params"]["matching"]["descriptor"], "q7");
        assert_eq!(v["params"]["matching"]["cross_check"], false);
        assert!(v["params"]["harris"]["window"].is_u64());
        report.correct = Some(3);
        report.correct_ratio = Some(0.5);
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["correct"], 3);
        assert_eq!(v["correct_ratio"], 0.5);
        assert_eq!(ratio(3, 0), 0.0);
        assert_eq!(ratio(1, 4), 0.25);
    }
}
