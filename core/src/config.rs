//! The front-end configuration: one set of knobs, names, defaults and limits that every front
//! end (the `surfcl` command line, the ROS 2 node) parses into and validates once.
//!
//! - [`DetectParams`]: which detector, its [`SurfConfig`] / [`HarrisConfig`], the keypoint
//!   capacity and the matcher's descriptor representation; [`DetectParams::validate`] runs the
//!   same checks the kernels and the CPU path rely on.
//! - [`Named`]: the option values that front ends spell as words (`--detector harris`,
//!   `detector:=harris`): one list of names and descriptions per option.
//! - The Harris threshold has two meanings, named by [`HarrisThreshold`]: an absolute value of
//!   the response, or a fraction of the frame's strongest response. A front end that takes one
//!   number called `threshold` says which meaning it has with [`ThresholdUnit`] (the command line:
//!   absolute, `--relative-threshold` for the other; the node: relative, since Harris responses
//!   have no fixed scale across a camera's frames).

use core::fmt;

use crate::harris::{HarrisConfig, HarrisError, HarrisThreshold};
use crate::surf::{Precision, SurfConfig, SurfError};

/// Largest keypoint capacity accepted. A million keypoints is far more than any image within the
/// size limits yields at a sensible threshold, and it bounds what a backend allocates up front
/// (keypoints and 64-float descriptors, about 300 MB).
pub const MAX_KEYPOINTS_LIMIT: usize = 1_000_000;

/// The default keypoint capacity of every front end: at the default SURF threshold a 1080p frame
/// gives 2000 to 9000 keypoints, so the cap rarely cuts; a robot that wants a fixed budget per
/// frame sets a lower one.
pub const DEFAULT_MAX_KEYPOINTS: usize = 10_000;

/// An option value that front ends spell as a word.
pub trait Named: Sized + Copy + PartialEq + 'static {
    /// What the option is called in messages.
    const WHAT: &'static str;
    /// Every value with its name and a one-line description, in the order help lists them.
    const ALL: &'static [(Self, &'static str, &'static str)];

    /// The value's name.
    fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(v, _, _)| *v == self)
            .map_or("?", |(_, name, _)| name)
    }

    /// The value called `name` (exact, lower case).
    fn from_name(name: &str) -> Result<Self, UnknownName> {
        Self::ALL
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(v, _, _)| *v)
            .ok_or(UnknownName {
                what: Self::WHAT,
                nth_name: nth_name::<Self>,
            })
    }
}

/// The name of `T`'s value number `i`, if there is one.
fn nth_name<T: Named>(i: usize) -> Option<&'static str> {
    T::ALL.get(i).map(|(_, name, _)| *name)
}

/// A word that names no value of an option; displays the accepted names.
#[derive(Clone, Copy)]
pub struct UnknownName {
    what: &'static str,
    nth_name: fn(usize) -> Option<&'static str>,
}

impl fmt::Debug for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} must be one of ", self.what)?;
        let mut i = 0;
        while let Some(name) = (self.nth_name)(i) {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name}")?;
            i += 1;
        }
        Ok(())
    }
}

impl core::error::Error for UnknownName {}

/// Which detector finds the interest points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DetectorKind {
    /// Fast-Hessian (SURF) blobs over several scales.
    #[default]
    Surf,
    /// Harris corners at one scale, described with SURF-64 at a fixed scale.
    Harris,
}

impl Named for DetectorKind {
    const WHAT: &'static str = "detector";
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (
            Self::Surf,
            "surf",
            "SURF (Fast-Hessian blobs, several scales)",
        ),
        (
            Self::Harris,
            "harris",
            "Harris corners (one scale, SURF-64 descriptor at a fixed scale)",
        ),
    ];
}

/// Which descriptor representation the matcher compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DescriptorKind {
    /// Unit-length `f32` SURF-64, L2 distance.
    #[default]
    F32,
    /// The same descriptor quantised to Q7 (`i8`), squared integer distance.
    Q7,
}

impl Named for DescriptorKind {
    const WHAT: &'static str = "descriptor";
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (Self::F32, "f32", "f32 descriptors, L2 distance"),
        (Self::Q7, "q7", "Q7 (i8) descriptors, integer distance"),
    ];
}

/// Where the work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// OpenCL when a device is available, else the CPU reference.
    #[default]
    Auto,
    /// OpenCL, or an error.
    OpenCl,
    /// The CPU reference.
    Cpu,
}

impl Named for BackendChoice {
    const WHAT: &'static str = "backend";
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (
            Self::Auto,
            "auto",
            "OpenCL if a device is available, else the CPU",
        ),
        (
            Self::OpenCl,
            "opencl",
            "OpenCL only (error when unavailable)",
        ),
        (Self::Cpu, "cpu", "The CPU reference"),
    ];
}

impl Named for Precision {
    const WHAT: &'static str = "precision";
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (Self::F32, "f32", "32-bit float responses"),
        (
            Self::Packed8,
            "u8",
            "8-bit packed responses (4 intervals per 32-bit word), same keypoints",
        ),
    ];
}

/// How a front end's one `threshold` number is read for Harris (SURF's is always the Hessian
/// response in OpenSURF units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdUnit {
    /// An absolute value of the Harris response `R`.
    Absolute,
    /// A fraction in (0, 1] of the frame's strongest response.
    Relative,
}

/// Everything a backend needs to detect and describe the interest points of one image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectParams {
    /// Which detector runs.
    pub detector: DetectorKind,
    /// SURF parameters (used when `detector` is [`DetectorKind::Surf`]).
    pub surf: SurfConfig,
    /// Harris parameters (used when `detector` is [`DetectorKind::Harris`]).
    pub harris: HarrisConfig,
    /// Capacity of the keypoint set: the strongest `max_keypoints` are kept, the rest counted as
    /// dropped. `1..=`[`MAX_KEYPOINTS_LIMIT`].
    pub max_keypoints: usize,
    /// Descriptor representation the matcher will use (detection always produces `f32`).
    pub descriptor: DescriptorKind,
}

impl Default for DetectParams {
    fn default() -> Self {
        Self {
            detector: DetectorKind::default(),
            surf: SurfConfig::default(),
            harris: HarrisConfig::default(),
            max_keypoints: DEFAULT_MAX_KEYPOINTS,
            descriptor: DescriptorKind::default(),
        }
    }
}

impl DetectParams {
    /// Sets the chosen detector's threshold, reading a Harris value as `harris`.
    pub fn set_threshold(&mut self, value: f32, harris: ThresholdUnit) {
        match self.detector {
            DetectorKind::Surf => self.surf.threshold = value,
            DetectorKind::Harris => {
                self.harris.threshold = match harris {
                    ThresholdUnit::Absolute => HarrisThreshold::Absolute(value),
                    ThresholdUnit::Relative => HarrisThreshold::Relative(value),
                }
            }
        }
    }

    /// The threshold in effect for the chosen detector, and whether it is relative (a fraction
    /// of the frame's strongest response) rather than absolute.
    pub fn effective_threshold(&self) -> (f32, bool) {
        match self.detector {
            DetectorKind::Surf => (self.surf.threshold, false),
            DetectorKind::Harris => match self.harris.threshold {
                HarrisThreshold::Absolute(t) => (t, false),
                HarrisThreshold::Relative(f) => (f, true),
            },
        }
    }

    /// Checks every parameter once, with the same `validate()`s the detectors rely on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.surf.validate().map_err(ConfigError::Surf)?;
        self.harris.validate().map_err(ConfigError::Harris)?;
        if self.max_keypoints == 0 || self.max_keypoints > MAX_KEYPOINTS_LIMIT {
            return Err(ConfigError::MaxKeypoints(self.max_keypoints));
        }
        Ok(())
    }
}

/// Why a [`DetectParams`] was rejected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConfigError {
    /// A SURF parameter (octaves, threshold, sample step...).
    Surf(SurfError),
    /// A Harris parameter.
    Harris(HarrisError),
    /// `max_keypoints` outside `1..=MAX_KEYPOINTS_LIMIT`.
    MaxKeypoints(usize),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Surf(e) => write!(f, "SURF: {e}"),
            Self::Harris(e) => write!(f, "Harris: {e}"),
            Self::MaxKeypoints(n) => write!(
                f,
                "max-keypoints must be in 1..={MAX_KEYPOINTS_LIMIT}, got {n}"
            ),
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Named + fmt::Debug>() {
        for &(value, name, _) in T::ALL {
            assert_eq!(T::from_name(name).unwrap(), value);
            assert_eq!(value.name(), name);
        }
    }

    #[test]
    fn every_name_parses_back_to_its_value() {
        round_trip::<DetectorKind>();
        round_trip::<DescriptorKind>();
        round_trip::<BackendChoice>();
        round_trip::<Precision>();
    }

    #[test]
    fn an_unknown_name_lists_the_accepted_ones() {
        let e = DetectorKind::from_name("sift").unwrap_err();
        let mut text = heapless::String::<64>::new();
        fmt::write(&mut text, format_args!("{e}")).unwrap();
        assert_eq!(text.as_str(), "detector must be one of surf, harris");
        assert!(Precision::from_name("F32").is_err(), "names are exact");
    }

    #[test]
    fn the_threshold_unit_decides_the_harris_meaning_only() {
        let mut p = DetectParams::default();
        p.set_threshold(0.002, ThresholdUnit::Relative);
        assert_eq!(
            p.effective_threshold(),
            (0.002, false),
            "SURF has one meaning"
        );
        p.detector = DetectorKind::Harris;
        p.set_threshold(0.05, ThresholdUnit::Relative);
        assert_eq!(p.effective_threshold(), (0.05, true));
        p.set_threshold(1e-5, ThresholdUnit::Absolute);
        assert_eq!(p.effective_threshold(), (1e-5, false));
    }

    #[test]
    fn validation_covers_the_capacity_and_both_detectors() {
        assert!(DetectParams::default().validate().is_ok());
        for bad in [0, MAX_KEYPOINTS_LIMIT + 1] {
            let p = DetectParams {
                max_keypoints: bad,
                ..DetectParams::default()
            };
            assert_eq!(p.validate(), Err(ConfigError::MaxKeypoints(bad)));
        }
        let mut p = DetectParams::default();
        p.surf.octaves = 7;
        assert!(matches!(p.validate(), Err(ConfigError::Surf(_))));
        let mut p = DetectParams::default();
        p.harris.k = f32::NAN;
        assert!(matches!(p.validate(), Err(ConfigError::Harris(_))));
    }
}
