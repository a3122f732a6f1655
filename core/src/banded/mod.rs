//! Banded detection and description: rows in, keypoints and descriptors out, for a frame that
//! does not fit in RAM as an integral image (a QVGA frame's takes 309 KB; a microcontroller with
//! 256 KB holds about a third of it).
//!
//! ## How
//! The rows arrive one at a time (as a camera's DMA delivers them) and go straight into a band
//! of `band_rows` rows of the frame's own `u32` integral image: table row `k` holds the integral
//! of frame row boundary `top + k`. Box sums are differences of two table rows, so they are the
//! frame's, exact, whichever row the band starts at (the columns' common offset cancels, and the
//! sums wrap as the full table's do). When the band is full its oldest `advance` rows are
//! dropped (moved out; `top` stays a multiple of the largest sample step, so the octaves' sample
//! grids stay the frame's).
//!
//! Every `advance` rows, each octave's grid rows whose filters (and those of the rows above and
//! below, for the 3x3x3 neighbourhood) lie inside the band are filled with the full-frame fill
//! ([`fill_f32_bits`](crate::surf) or the fixed-point fill) and scanned with the full-frame scan,
//! so the keypoints are the full-frame path's, bit for bit ([`BandArithmetic::to_frame`]). A
//! keypoint is described as soon as the rows its orientation and descriptor windows reach
//! ([`descriptor_reach`]) are in the band, or, when the band cannot hold them all, with the
//! window clipped to at least [`clipped_reach`] rows above and below it (as boxes are clipped at
//! the frame's border): docs/ARCHITECTURE.md, "The banded path", says which keypoints that is.
//!
//! Every buffer is the caller's, sized by the `const fn`s of this module for a width and an
//! octave count: [`band_table_len`], [`band_maps_len`], [`band_rows_for`].
//!
//! ```
//! use surfcl_core::banded::{self, BandBuffers, BandedSurf};
//! use surfcl_core::surf::{Float, SurfConfig};
//! use surfcl_core::{DescriptorQ7, Keypoint};
//!
//! let (w, h) = (96, 80);
//! let config = SurfConfig { octaves: 2, ..SurfConfig::default() };
//! let advance = 8;
//! let rows = banded::band_rows_for(config.octaves, config.init_sample_step, advance);
//! let mut table = vec![0u32; banded::band_table_len(w, rows)];
//! let mut maps = vec![0u32; banded::band_maps_len(w, config.octaves, config.init_sample_step, advance)];
//! let mut keypoints = vec![Keypoint::ZERO; 64];
//! let mut descriptors = vec![[0i8; 64]; 64];
//! let buffers = BandBuffers { table: &mut table, maps: &mut maps, keypoints: &mut keypoints,
//!     descriptors: &mut descriptors };
//! let mut surf = BandedSurf::<Float, DescriptorQ7>::new(&config, w, h, rows, advance, buffers,
//!     banded::describe_f32_q7).unwrap();
//! for y in 0..h {
//!     let row: Vec<u8> = (0..w).map(|x| if (x / 12 + y / 12) % 2 == 0 { 200 } else { 40 }).collect();
//!     surf.push_row(&row).unwrap();
//! }
//! assert!(surf.is_complete());
//! assert_eq!(surf.keypoints().len(), surf.descriptors().len());
//! ```

mod driver;
mod store;

use core::fmt;
use core::ops::Range;

use crate::describe::{assign_orientation, describe, to_q7};
use crate::fixed::{
    POS_FRAC, assign_orientation_fixed, describe_q7, f32_from_fixed, fixed_from_f32, round_fixed,
};
use crate::image::ImageError;
use crate::integral::IntegralImage;
use crate::keypoint::{Descriptor, DescriptorQ7, Keypoint};
use crate::surf::{
    Arithmetic, FixedPoint, Float, INTERVALS, PortableBoxSums, Refinement, SampleSite, SurfConfig,
    SurfError, exact_cube, fill_f32_bits, fill_fixed, refine_candidate,
};

pub use driver::{BandBuffers, BandedSurf};
pub use store::BandedKeypoints;

/// The filter size `L(o, i) = 3 ((i + 1) 2^(o + 1) + 1)` as a `const fn` (for sizing).
const fn filter_len(octave: u32, interval: u32) -> usize {
    3 * ((interval as usize + 1) * (2usize << octave) + 1)
}

/// Sample step of `octave` for a first step `init_sample_step`.
const fn step_of(octave: u32, init_sample_step: u8) -> usize {
    (init_sample_step as usize) << octave
}

/// Frame rows that a scanned grid row of `octave` needs on each side of its pixel row: the
/// half-size of the octave's largest filter plus one sample step (the rows above and below in
/// the 3x3x3 neighbourhood).
pub const fn detection_margin(octave: u32, init_sample_step: u8) -> usize {
    (filter_len(octave, INTERVALS - 1) - 1) / 2 + step_of(octave, init_sample_step)
}

/// The rows on each side of a keypoint of scale `scale` (in `1/20000` units: `20000 scale`)
/// that its orientation and descriptor windows reach: `ceil(17 s) + round(s) + 3`. The
/// descriptor's samples lie within `12 s (|sin| + |cos|) <= 16.98 s` of the keypoint (plus one
/// for the rounding of their positions), its Haar boxes `round(s)` further; the orientation's
/// within `7 round(s)`.
const fn reach_of_scale_units(units: u64) -> usize {
    ((17 * units).div_ceil(20_000) + (units + 10_000) / 20_000 + 3) as usize
}

/// [`descriptor_reach`] of the largest scale an octave's keypoints can have: interval 2's
/// filter size plus half a step to interval 3 (the interpolation's bound), times `0.1333`.
pub const fn octave_reach(octave: u32) -> usize {
    let (l1, l2) = (filter_len(octave, 1) as u64, filter_len(octave, 2) as u64);
    // 0.1333 (L2 + (L2 - L1) / 2) in 1/20000 units.
    reach_of_scale_units(1333 * (3 * l2 - l1))
}

/// The rows on each side of a keypoint that its orientation and descriptor windows reach
/// (see [`octave_reach`] for the bound), computed on the bits of `kp.scale` with integers only.
pub fn descriptor_reach(kp: &Keypoint) -> usize {
    let scale_q16 = fixed_from_f32(kp.scale, POS_FRAC).clamp(0, 1 << 40) as u64;
    // 20000 s from Q16, rounded up (a larger reach is only safer).
    reach_of_scale_units((scale_q16 * 20_000).div_ceil(1 << POS_FRAC))
}

/// The rows on each side of its row that every keypoint's windows see at least in a band of
/// `band_rows` rows that advances by `advance`: `(band_rows - advance) / 2`.
pub const fn clipped_reach(band_rows: usize, advance: usize) -> usize {
    band_rows.saturating_sub(advance) / 2
}

/// The band rows that detection with `octaves` octaves needs when the band advances by
/// `advance` rows: [`detection_margin`] of the last octave on each side, plus `advance`. The
/// least a [`BandedSurf`] accepts; descriptor windows beyond [`clipped_reach`] are clipped.
pub const fn detection_rows(octaves: u8, init_sample_step: u8, advance: usize) -> usize {
    let last = if octaves == 0 { 0 } else { octaves as u32 - 1 };
    advance + 2 * detection_margin(last, init_sample_step)
}

/// The band rows that detection with `octaves` octaves needs when the band advances by
/// `advance` rows ([`detection_margin`] of the last octave on each side, plus `advance`), or
/// that the descriptors of octave 0's keypoints need whole ([`octave_reach`] of octave 0), the
/// larger. Larger octaves' descriptor windows are clipped to [`clipped_reach`] rows.
pub const fn band_rows_for(octaves: u8, init_sample_step: u8, advance: usize) -> usize {
    let detect = detection_rows(octaves, init_sample_step, advance);
    let describe = advance + 2 * octave_reach(0);
    if detect > describe { detect } else { describe }
}

/// `(width + 1) (band_rows + 1)`: the `u32` words of a band of the integral image.
pub const fn band_table_len(max_width: usize, band_rows: usize) -> usize {
    max_width
        .saturating_add(1)
        .saturating_mul(band_rows.saturating_add(1))
}

/// Grid rows that one octave's maps hold: the rows scanned in one step (an `advance` of rows,
/// rounded up) and the rows above and below them.
const fn map_rows(octave: u32, init_sample_step: u8, advance: usize) -> usize {
    advance.div_ceil(step_of(octave, init_sample_step)) + 2
}

/// The `u32` words of the response maps of the banded path: for each octave, [`map_rows`] grid
/// rows of four words per sample.
pub const fn band_maps_len(
    max_width: usize,
    octaves: u8,
    init_sample_step: u8,
    advance: usize,
) -> usize {
    let mut total = 0;
    let mut o = 0;
    while o < octaves as u32 {
        total += octave_maps_len(max_width, o, init_sample_step, advance);
        o += 1;
    }
    total
}

/// The words of octave `octave`'s maps in [`band_maps_len`].
const fn octave_maps_len(width: usize, octave: u32, init_sample_step: u8, advance: usize) -> usize {
    let gw = width / step_of(octave, init_sample_step);
    map_rows(octave, init_sample_step, advance) * gw * INTERVALS as usize
}

/// Why the banded path rejected a row, a buffer or a configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BandError {
    /// The configuration or the frame size is invalid.
    Surf(SurfError),
    /// A row of the wrong length.
    RowLength {
        /// The frame's width.
        expected: usize,
        /// The row's length.
        actual: usize,
    },
    /// A row pushed after the frame's last.
    TooManyRows {
        /// The frame's height.
        height: usize,
    },
    /// A buffer shorter than the frame needs (a frame wider than the buffers were sized for,
    /// or fewer band rows, maps or descriptors than the configuration needs).
    Buffer {
        /// Which buffer.
        name: &'static str,
        /// The length needed.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// The band is shorter than detection needs ([`detection_rows`]) or `advance` is not a
    /// positive multiple of the largest sample step.
    Geometry {
        /// The band rows given.
        band_rows: usize,
        /// The advance given.
        advance: usize,
    },
    /// A keypoint's row is not in the band: no kept row covers its descriptor window.
    WindowNotCovered {
        /// The keypoint's row (rounded).
        row: usize,
        /// The frame rows the band holds.
        held: (usize, usize),
    },
}

impl fmt::Display for BandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BandError::Surf(e) => write!(f, "{e}"),
            BandError::RowLength { expected, actual } => {
                write!(f, "row of {actual} pixels, the frame is {expected} wide")
            }
            BandError::TooManyRows { height } => {
                write!(f, "row pushed after the frame's {height} rows")
            }
            BandError::Buffer {
                name,
                expected,
                actual,
            } => write!(f, "{name} buffer has {actual} entries, {expected} needed"),
            BandError::Geometry { band_rows, advance } => write!(
                f,
                "a band of {band_rows} rows advancing by {advance} cannot hold the filters"
            ),
            BandError::WindowNotCovered { row, held } => write!(
                f,
                "keypoint row {row} is outside the rows {}..{} held",
                held.0, held.1
            ),
        }
    }
}

impl core::error::Error for BandError {}

impl From<SurfError> for BandError {
    fn from(e: SurfError) -> Self {
        BandError::Surf(e)
    }
}

impl From<ImageError> for BandError {
    fn from(e: ImageError) -> Self {
        BandError::Surf(SurfError::Image(e))
    }
}

/// The arithmetic of a banded detection: [`Float`] or [`FixedPoint`], with the row-range fill
/// and the move of a keypoint found in band coordinates to frame coordinates.
pub trait BandArithmetic: Arithmetic {
    /// Fills grid rows `rows` of `octave` (of `ii`'s grid) into `out`, which holds those rows
    /// only, four words per sample, as [`Arithmetic::fill`] fills them.
    fn fill_rows(
        ii: &IntegralImage,
        config: &SurfConfig,
        octave: u32,
        rows: Range<usize>,
        out: &mut [u32],
    );

    /// `kp`, found in the band `ii` (whose first row is frame row `top`, a multiple of the
    /// octave's sample step), in frame coordinates: the keypoint the full frame gives.
    fn to_frame(ii: &IntegralImage, config: &SurfConfig, kp: Keypoint, top: usize) -> Keypoint;
}

impl BandArithmetic for Float {
    fn fill_rows(
        ii: &IntegralImage,
        config: &SurfConfig,
        octave: u32,
        rows: Range<usize>,
        out: &mut [u32],
    ) {
        fill_f32_bits::<PortableBoxSums>(ii, config, octave, rows, None, out, 0);
    }

    /// The position is an `f32` expression of the frame's sample row, so it is computed again
    /// from the frame's site, on the same responses (the exact neighbourhood, recomputed from
    /// the band: the fill's bits); adding `top` to the band's position would round differently.
    fn to_frame(ii: &IntegralImage, config: &SurfConfig, kp: Keypoint, top: usize) -> Keypoint {
        let band_site = SampleSite {
            octave: kp.octave,
            interval: kp.interval,
            sx: kp.sample_x,
            sy: kp.sample_y,
        };
        let step = crate::surf::sample_step(config, u32::from(kp.octave)).max(1) as usize;
        let frame_site = SampleSite {
            sy: kp.sample_y + (top / step) as u32,
            ..band_site
        };
        let (cube, _) = exact_cube(ii, config, band_site);
        match refine_candidate(config, frame_site, &cube, kp.laplacian) {
            Refinement::Keypoint(frame) => frame,
            // The same cube decided the band's keypoint; kept shifted should it ever not.
            _ => shift_rows(kp, top, step),
        }
    }
}

impl BandArithmetic for FixedPoint {
    fn fill_rows(
        ii: &IntegralImage,
        config: &SurfConfig,
        octave: u32,
        rows: Range<usize>,
        out: &mut [u32],
    ) {
        fill_fixed(ii, config, octave, rows, out);
    }

    /// The fixed-point position is an exact Q16 number below `2^24`, so shifting it by `top`
    /// rows in Q16 gives the full frame's bits.
    fn to_frame(_ii: &IntegralImage, config: &SurfConfig, kp: Keypoint, top: usize) -> Keypoint {
        let step = crate::surf::sample_step(config, u32::from(kp.octave)).max(1) as usize;
        shift_rows(kp, top, step)
    }
}

/// `kp` moved down by `rows` frame rows (`rows / step` sample rows), in integers on the Q16
/// position (no floating-point operation, for the fixed-point path).
fn shift_rows(kp: Keypoint, rows: usize, step: usize) -> Keypoint {
    Keypoint {
        y: add_rows_q16(kp.y, rows as i64),
        sample_y: kp.sample_y + (rows / step) as u32,
        ..kp
    }
}

/// `y + rows` through Q16 integers. In a frame of up to 256 rows every position is below
/// `2^24` in Q16, so the band's `f32` holds it exactly and the sum is the full frame's bits;
/// in a taller frame the band's position was rounded to 24 bits before the shift, so the sum
/// can differ from the frame's by one unit in the last place.
fn add_rows_q16(y: f32, rows: i64) -> f32 {
    f32_from_fixed(fixed_from_f32(y, POS_FRAC) + (rows << POS_FRAC), POS_FRAC)
}

/// The row of `kp` rounded to the nearest pixel, in integers.
fn keypoint_row(kp: &Keypoint) -> i64 {
    round_fixed(fixed_from_f32(kp.y, POS_FRAC), POS_FRAC)
}

/// Orientation (unless `upright`) and `f32` SURF-64 descriptor quantised to Q7: the full-frame
/// `describe_all` followed by `to_q7`.
pub fn describe_f32_q7(ii: &IntegralImage, kp: &mut Keypoint, upright: bool) -> DescriptorQ7 {
    to_q7(&describe_f32(ii, kp, upright))
}

/// Orientation (unless `upright`) and `f32` SURF-64 descriptor, as `describe_all`.
pub fn describe_f32(ii: &IntegralImage, kp: &mut Keypoint, upright: bool) -> Descriptor {
    if !upright {
        assign_orientation(ii, kp);
    }
    describe(ii, kp, upright)
}

/// Orientation (unless `upright`) and Q7 descriptor in fixed point, as
/// `fixed::describe_all_q7`.
pub fn describe_fixed_q7(ii: &IntegralImage, kp: &mut Keypoint, upright: bool) -> DescriptorQ7 {
    if !upright {
        assign_orientation_fixed(ii, kp);
    }
    describe_q7(ii, kp, upright)
}

#[cfg(test)]
mod tests;
