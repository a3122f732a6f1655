//! The Fast-Hessian (SURF) detector: box-filter Hessian responses, 3x3x3 non-maximum suppression
//! and Brown-Lowe sub-pixel/scale interpolation, in `f32` or with 8-bit packed response maps.
//!
//! ## Theory
//! SURF (Bay et al. 2006/2008) approximates the scale-normalised determinant of the Hessian with
//! box filters evaluated on an integral image, so every response costs the same whatever the scale.
//! Octave `o` has four filters `L(o, i) = 3 ((i + 1) 2^(o+1) + 1)` (9, 15, 21, 27; 15, 27, 39, 51;
//! ...), sampled every `step(o) = init_sample_step * 2^o` pixels. The response is
//! `Dxx Dyy - (0.9 Dxy)^2` normalised by the filter area (computed exactly in integers, then rounded
//! once, so the OpenCL kernels reproduce it bit for bit), a point is kept where it exceeds the
//! threshold and its 26 neighbours in position and scale, and its position and scale are refined
//! by one Newton step on the 3x3x3 neighbourhood. The exact definitions, shared with the kernels,
//! are in `docs/ARCHITECTURE.md`.
//!
//! The packed mode stores the four interval responses of a sample as four bytes of one `u32`
//! (log-companded codes with the Laplacian sign in bit 7), screens candidates on those bytes, and
//! recomputes each candidate's neighbourhood exactly: it finds the same keypoints as the `f32` mode
//! with a quarter of the response memory.
//!
//! ## Scale
//! [`Keypoint::scale`](crate::Keypoint::scale) is `0.1333 L` (OpenSURF), the sigma of the Gaussian whose second
//! derivatives the filter approximates (`1.2 / 9 L`). A Gaussian blob of standard deviation `s`
//! is found at `scale ~= 0.75 s` (0.70 to 0.81 for `s` from 2.5 to 10, measured on synthetic blobs
//! in the tests), not at `s` as the continuous scale-normalised determinant would give: the box
//! filters' lobes and area normalisation shift the peak.
//!
//! ## Usage
//! ```
//! use surfcl_core::{GrayImage, IntegralImage, KeypointSet, KeypointSink};
//! use surfcl_core::integral::integral_len;
//! use surfcl_core::surf::{self, SurfConfig};
//!
//! // A dark image with one bright Gaussian blob (sigma 4) at (40, 30).
//! let (w, h) = (80, 64);
//! let pixels: Vec<u8> = (0..w * h)
//!     .map(|i| {
//!         let (x, y) = ((i % w) as f32 - 40.0, (i / w) as f32 - 30.0);
//!         (20.0 + 200.0 * (-(x * x + y * y) / 32.0).exp()) as u8
//!     })
//!     .collect();
//! let image = GrayImage::new(&pixels, w, h).unwrap();
//! let mut table = vec![0u32; integral_len(w, h).unwrap()];
//! let ii = IntegralImage::compute(&image, &mut table).unwrap();
//!
//! let config = SurfConfig::default();
//! config.validate().unwrap();
//! let mut scratch = vec![0u32; surf::scratch_len(&config, w, h).unwrap()];
//! let mut keypoints = KeypointSet::<64>::new();
//! let stats = surf::detect(&ii, &config, &mut scratch, &mut keypoints).unwrap();
//! assert!(stats.kept >= 1); // a blob between two octaves can be found in both
//! let kp = keypoints.as_slice()[0];
//! assert!((kp.x - 40.0).abs() < 0.5 && (kp.y - 30.0).abs() < 0.5);
//! assert_eq!(kp.laplacian, -1); // bright blob
//! ```

use core::fmt;

use crate::image::{ImageError, check_dimensions};

mod arith;
mod decide;
mod detect;
mod fill;
mod fixed;
mod packed;
mod response;
mod scan;

pub use arith::{Arithmetic, FixedPoint, Float};
pub use decide::{
    DetectStats, Refinement, ResponseCube, SampleSite, exact_cube, nms_border, refine_candidate,
    refine_exact,
};
pub use detect::{
    Serial, Strategy, detect, detect_with, detect_with_strategy, fill_and_scan_in_bands,
    scratch_len_with,
};
pub use fill::{OctaveFill, OctaveMaps};
pub use packed::{PackedCodeTable, PackedResponses, pack_byte, unpack_byte};
pub use response::{
    BoxSums, InlineBoxSums, PortableBoxSums, RESPONSE_NORMS, column_scratch_len,
    compute_octave_f32, compute_octave_packed, response_at, response_norm,
};

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
    /// The first interval of a fill is not 0 or 2 ([`OctaveFill::starting_at`]).
    FirstInterval(u32),
    /// `Packed8` maps were given to a scan of `f32` maps ([`OctaveMaps::scan_rows`]): the
    /// detection scans packed maps itself.
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

/// Filter size `L(o, i) = 3 ((i + 1) 2^(o + 1) + 1)` of octave `octave` (0-based), interval
/// `interval` (0..4). Octave 0: 9, 15, 21, 27; octave 1: 15, 27, 39, 51; octave 5 ends at 771.
/// Saturates instead of overflowing for out-of-range arguments.
pub fn filter_size(octave: u32, interval: u32) -> u32 {
    let pow = 1u32.checked_shl(octave.saturating_add(1)).unwrap_or(0);
    interval
        .saturating_add(1)
        .saturating_mul(pow)
        .saturating_add(1)
        .saturating_mul(3)
}

/// Sample step of `octave`: `init_sample_step * 2^octave` pixels.
pub fn sample_step(config: &SurfConfig, octave: u32) -> u32 {
    u32::from(config.init_sample_step).saturating_mul(1u32.checked_shl(octave).unwrap_or(0))
}

/// The sample grid of an octave with sample step `step`: `(width / step, height / step)`.
/// A zero step gives an empty grid.
pub fn grid_size(width: usize, height: usize, step: u32) -> (usize, usize) {
    let step = step as usize;
    (
        width.checked_div(step).unwrap_or(0),
        height.checked_div(step).unwrap_or(0),
    )
}

/// Number of `u32` scratch words [`detect`] needs for a `width x height` image: the response maps
/// of one octave at a time (octave 0 is the largest), 4 words per sample in [`Precision::F32`]
/// and 1 in [`Precision::Packed8`]. May be 0 for tiny images. Checks the configuration and the
/// size; see [`scratch_capacity`] for sizing a static buffer.
pub fn scratch_len(config: &SurfConfig, width: usize, height: usize) -> Result<usize, SurfError> {
    config.validate()?;
    check_dimensions(width, height)?;
    Ok(scratch_capacity(
        width,
        height,
        config.precision,
        config.init_sample_step,
    ))
}

/// The scratch words of the largest frame, as a `const fn` so that firmware can size a `static`
/// with it: `(max_width / s) * (max_height / s) * words` with `s = init_sample_step` (octave 0's
/// grid) and `words` 4 for [`Precision::F32`], 1 for [`Precision::Packed8`]
/// (`static mut SCRATCH: [u32; scratch_capacity(320, 240, Precision::Packed8, 2)]`: 19 200
/// words). Every image of at most `max_width x max_height` pixels, with the same precision and
/// step, needs at most this many (its [`scratch_len`]). Saturates; a step of 0 gives 0; no checks.
pub const fn scratch_capacity(
    max_width: usize,
    max_height: usize,
    precision: Precision,
    init_sample_step: u8,
) -> usize {
    if init_sample_step == 0 {
        return 0;
    }
    let step = init_sample_step as usize;
    (max_width / step)
        .saturating_mul(max_height / step)
        .saturating_mul(words_per_sample(precision))
}

/// `u32` words per sample of a response map.
const fn words_per_sample(precision: Precision) -> usize {
    match precision {
        Precision::F32 => INTERVALS as usize,
        Precision::Packed8 => 1,
    }
}

/// Checks that `octave` is configured.
fn check_octave(config: &SurfConfig, octave: u32) -> Result<(), SurfError> {
    if octave >= u32::from(config.octaves) {
        return Err(SurfError::OctaveOutOfRange {
            octave,
            octaves: config.octaves,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod test_util;
#[cfg(test)]
mod tests;
