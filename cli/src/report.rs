//! The JSON reports of `surfcl detect`, `match` and `eval`. The formats (and those of `stream`
//! and `bench`, built in their modules) are documented for users in `docs/JSON.md`; keep the two
//! in step.
//!
//! - `detect`: `{"width", "height", "detector", "backend", "device", "params", "keypoints":
//!   [{"x", "y", "scale", "orientation", "response", "laplacian"}], "descriptors": [[64 x f32],
//!   ...], "dropped", "timings_ms": {stage: ms}}`. Timings keep the execution order of the stages.
//! - `match`: `{"detector", "backend", "device", "descriptor", "params", "keypoints1",
//!   "keypoints2", "matches": [{"query", "train", "distance"}], "correct", "precision"}`.
//!   `keypoints1`/`keypoints2` are the *arrays* of keypoints of the two images (same objects as in
//!   `detect`), so that `query`/`train` indices can be resolved to positions without a second
//!   run; `correct` and `precision` are present only with `--homography`.
//! - `eval`: `{"dir", "detector", "backend", "device", "threshold", "threshold_relative",
//!   "params", "pairs": [{"pair", "keypoints1", "keypoints2", "matches", "correct", "precision",
//!   "repeatability"}]}` with counts (not arrays).
//! - `params` ([`ParamsJson`]): the detection (and matching) parameters in effect, defaults
//!   included, so that a report says how it was made.
//!
//! Every struct also implements `Deserialize`, so tests and tools can read the reports back.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use surfcl_core::Keypoint;
use surfcl_core::matcher::Match;

use surfcl_core::matcher::MatchConfig;

use surfcl_core::config::Named;
use surfcl_gpu::backend::{DescriptorKind, DetectParams, DetectorKind, Features, StageTiming};

/// SURF parameters of [`ParamsJson`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SurfParamsJson {
    /// Octaves.
    pub octaves: u8,
    /// Sample step of the first octave.
    pub sample_step: u8,
    /// Response storage: `"f32"` or `"u8"`.
    pub precision: String,
    /// Upright (no orientation).
    pub upright: bool,
}

/// Harris parameters of [`ParamsJson`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HarrisParamsJson {
    /// The `k` of `R = det - k trace^2`.
    pub k: f32,
    /// Side of the summation window, pixels.
    pub window: usize,
    /// Scale at which the descriptors are computed.
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
    pub ratio: f32,
    /// Mutual nearest neighbours only.
    pub cross_check: bool,
    /// Equal signs of the Laplacian required.
    pub sign_test: bool,
    /// Largest accepted descriptor distance, if any.
    pub max_distance: Option<f32>,
}

/// The parameters of a run, `"params"` in every JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamsJson {
    /// `"surf"` or `"harris"`.
    pub detector: String,
    /// The detector threshold in effect.
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
    pub x: f32,
    /// Row, pixels.
    pub y: f32,
    /// Scale (Gaussian sigma).
    pub scale: f32,
    /// Orientation, radians in `[0, 2 pi)`.
    pub orientation: f32,
    /// Detector response.
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
    pub distance: f32,
}

/// The output of `surfcl match --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchReport {
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
    /// `correct / matches` (only with `--homography`; 0 when there is no match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
}

/// Converts core matches to their JSON form.
pub fn matches_json(matches: &[Match]) -> Vec<MatchJson> {
    matches
        .iter()
        .map(|m| MatchJson {
            query: m.query as usize,
            train: m.train as usize,
            distance: m.distance,
        })
        .collect()
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
    /// `correct / matches` (0 when there is no match).
    pub precision: f64,
    /// Detector repeatability under the homography, in `[0, 1]`.
    pub repeatability: f64,
}

/// The output of `surfcl eval --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// The data set folder.
    pub dir: String,
    /// `"surf"` or `"harris"`.
    pub detector: String,
    /// `"cpu"` or `"opencl"`.
    pub backend: String,
    /// The device description.
    pub device: String,
    /// The detector threshold used.
    pub threshold: f32,
    /// Whether `threshold` is a fraction of the largest response (Harris' default) rather than
    /// an absolute value.
    pub threshold_relative: bool,
    /// The parameters used (detection and matching).
    pub params: ParamsJson,
    /// One row per pair 1-2 .. 1-N.
    pub pairs: Vec<EvalPair>,
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
    fn match_report_omits_correct_without_homography() {
        let mut report = MatchReport {
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
            precision: None,
        };
        let v = serde_json::to_value(&report).unwrap();
        assert!(v.get("correct").is_none() && v.get("precision").is_none());
        assert_eq!(v["params"]["detector"], "harris");
        assert_eq!(v["params"]["threshold_relative"], true);
        assert_eq!(v["params"]["matching"]["descriptor"], "q7");
        assert_eq!(v["params"]["matching"]["cross_check"], false);
        assert!(v["params"]["harris"]["window"].is_u64());
        report.correct = Some(3);
        report.precision = Some(0.5);
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["correct"], 3);
        assert_eq!(v["precision"], 0.5);
        assert_eq!(ratio(3, 0), 0.0);
        assert_eq!(ratio(1, 4), 0.25);
    }
}
