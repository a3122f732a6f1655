//! The sizes of the banded path, as `const fn`s for `static` buffers: the rows detection and
//! description need, the band's integral table, the response maps.

use crate::fixed::{POS_FRAC, fixed_from_f32};
use crate::keypoint::Keypoint;
use crate::surf::INTERVALS;

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
pub(super) const fn octave_maps_len(
    width: usize,
    octave: u32,
    init_sample_step: u8,
    advance: usize,
) -> usize {
    let gw = width / step_of(octave, init_sample_step);
    map_rows(octave, init_sample_step, advance) * gw * INTERVALS as usize
}
