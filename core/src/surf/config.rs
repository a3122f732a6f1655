//! The detector's configuration ([`SurfConfig`], [`Precision`]), its limits and its error type
//! ([`SurfError`]). Re-exported by [`crate::surf`].

use core::fmt;

use crate::image::ImageError;

/// Largest number of octaves.
pub const MAX_OCTAVES: u8 = 6;

/// Number of intervals (filter sizes) per octave.
pub const INTERVALS: u32 = 4;

/// How the response maps are stored during detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// One `f32` per sample and interval (16 bytes per sample).
    #[default]
    F32,
    /// One byte per sample and interval, four intervals per `u32` word (4 bytes per sample);
    /// candidates are screened on the bytes and recomputed exactly. Same keypoints as
    /// [`Precision::F32`].
    Packed8,
}

/// Configuration of the SURF detector, shared by the CPU reference and the OpenCL pipeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SurfConfig {
    /// Number of octaves, `1..=6` (default 4).
    pub octaves: u8,
    /// Sample step of octave 0, 1 or 2 (default 2); octave `o` samples every
    /// `init_sample_step * 2^o` pixels.
    pub init_sample_step: u8,
    /// Response threshold in OpenSURF units (intensities in `[0, 1]`, responses normalised by the
    /// filter area); finite and `>= 0` (default 0.0004).
    pub threshold: f32,
    /// Storage of the response maps.
    pub precision: Precision,
    /// Upright descriptors (no orientation assignment). Detection ignores it; it travels with the
    /// configuration so that one value configures a whole pipeline.
    pub upright: bool,
}

impl Default for SurfConfig {
    fn default() -> Self {
        Self {
            octaves: 4,
            init_sample_step: 2,
            threshold: 0.0004,
            precision: Precision::F32,
            upright: false,
        }
    }
}

impl SurfConfig {
    /// Checks every field; both the CPU and the GPU paths call it before use.
    pub fn validate(&self) -> Result<(), SurfError> {
        if !(1..=MAX_OCTAVES).contains(&self.octaves) {
            return Err(SurfError::InvalidOctaves(self.octaves));
        }
        if !matches!(self.init_sample_step, 1 | 2) {
            return Err(SurfError::InvalidSampleStep(self.init_sample_step));
        }
        // Decided on the bits, not with float comparisons: the fixed-point path validates the
        // same configuration and must not pull software floating point into an FPU-less build.
        // Finite: the exponent is not all ones; `>= 0`: the sign bit is clear, or the value is
        // -0.0.
        let bits = self.threshold.to_bits();
        let finite = bits & 0x7f80_0000 != 0x7f80_0000;
        let non_negative = bits >> 31 == 0 || bits == 0x8000_0000;
        if !(finite && non_negative) {
            return Err(SurfError::InvalidThreshold(self.threshold));
        }
        Ok(())
    }
}

/// Why a SURF operation was rejected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SurfError {
    /// The image size is invalid.
    Image(ImageError),
    /// The threshold is NaN, infinite or negative.
    InvalidThreshold(f32),
    /// The number of octaves is not in `1..=6`.
    InvalidOctaves(u8),
    /// The initial sample step is not 1 or 2.
    InvalidSampleStep(u8),
    /// An octave index is not below the configured number of octaves.
    OctaveOutOfRange {
        /// The octave asked for.
        octave: u32,
        /// The configured number of octaves.
        octaves: u8,
    },
    /// A scratch or output buffer is too short (or, for outputs, not the exact length).
    ScratchLength {
        /// Length required.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// An interval of an octave's scan is not 1 or 2 (the intervals with a scale above and
    /// below).
    Interval(u32),
    /// The first interval of a fill is not 0 or 2
    /// ([`OctaveFill::starting_at`](super::OctaveFill::starting_at)).
    FirstInterval(u32),
    /// `Packed8` maps were given to a scan of `f32` maps
    /// ([`OctaveMaps::scan_rows`](super::OctaveMaps::scan_rows)): the detection scans packed maps
    /// itself.
    PackedMaps,
}

impl fmt::Display for SurfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SurfError::Image(e) => write!(f, "invalid image: {e}"),
            SurfError::InvalidThreshold(t) => {
                write!(f, "threshold {t} is not a finite number >= 0")
            }
            SurfError::InvalidOctaves(o) => {
                write!(f, "{o} octaves requested, 1..={MAX_OCTAVES} supported")
            }
            SurfError::InvalidSampleStep(s) => {
                write!(f, "initial sample step {s} is not 1 or 2")
            }
            SurfError::OctaveOutOfRange { octave, octaves } => {
                write!(f, "octave {octave} requested, only {octaves} configured")
            }
            SurfError::Interval(i) => write!(f, "interval {i} scanned, only 1 and 2 have maxima"),
            SurfError::FirstInterval(i) => {
                write!(
                    f,
                    "a fill from interval {i}: only 0 and 2 are shared boundaries"
                )
            }
            SurfError::PackedMaps => write!(f, "packed maps given to a scan of f32 maps"),
            SurfError::ScratchLength { expected, actual } => {
                write!(f, "buffer has {actual} words, {expected} required")
            }
        }
    }
}

impl core::error::Error for SurfError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            SurfError::Image(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ImageError> for SurfError {
    fn from(e: ImageError) -> Self {
        SurfError::Image(e)
    }
}
