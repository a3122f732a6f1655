//! What differs between the arithmetics on the banded path: the row-range fill, the move of a
//! keypoint from band to frame coordinates; and the describe functions it calls per keypoint.

use core::ops::Range;

use crate::describe::{assign_orientation, describe, to_q7};
use crate::fixed::{
    POS_FRAC, assign_orientation_fixed, describe_q7, f32_from_fixed, fixed_from_f32, round_fixed,
};
use crate::integral::IntegralImage;
use crate::keypoint::{Descriptor, DescriptorQ7, Keypoint};
use crate::surf::{
    Arithmetic, FixedPoint, Float, PortableBoxSums, Refinement, SampleSite, SurfConfig, exact_cube,
    fill_f32_bits, fill_fixed, refine_candidate,
};

/// Grid rows `rows` of `octave` to fill from the band `ii` (rows of `ii`'s own grid).
#[derive(Debug, Clone)]
pub struct RowFill<'a> {
    /// The band as an integral image.
    pub ii: &'a IntegralImage<'a>,
    /// The detection's configuration.
    pub config: &'a SurfConfig,
    /// The octave.
    pub octave: u32,
    /// The grid rows.
    pub rows: Range<usize>,
}

/// The arithmetic of a banded detection: [`Float`] or [`FixedPoint`], with the row-range fill
/// and the move of a keypoint found in band coordinates to frame coordinates.
pub trait BandArithmetic: Arithmetic {
    /// Fills `fill`'s rows into `out`, which holds those rows only, four words per sample, as
    /// [`Arithmetic::fill`] fills them.
    fn fill_rows(fill: RowFill<'_>, out: &mut [u32]);

    /// `kp`, found in the band `ii` (whose first row is frame row `top`, a multiple of the
    /// octave's sample step), in frame coordinates: the keypoint the full frame gives.
    fn to_frame(ii: &IntegralImage, config: &SurfConfig, kp: Keypoint, top: usize) -> Keypoint;
}

impl BandArithmetic for Float {
    fn fill_rows(f: RowFill<'_>, out: &mut [u32]) {
        fill_f32_bits::<PortableBoxSums>(f.ii, f.config, f.octave, f.rows, None, out, 0);
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
    fn fill_rows(f: RowFill<'_>, out: &mut [u32]) {
        fill_fixed(f.ii, f.config, f.octave, f.rows, out);
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
/// in a taller frame the band's position is rounded to 24 bits before the shift, so the sum
/// can differ from the frame's by one unit in the last place.
pub(super) fn add_rows_q16(y: f32, rows: i64) -> f32 {
    f32_from_fixed(fixed_from_f32(y, POS_FRAC) + (rows << POS_FRAC), POS_FRAC)
}

/// The row of `kp` rounded to the nearest pixel, in integers.
pub(super) fn keypoint_row(kp: &Keypoint) -> i64 {
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
