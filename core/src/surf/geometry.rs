//! The geometry of the octaves (filter sizes, sample steps, sample grids) and the scratch sizes
//! derived from it. Re-exported by [`crate::surf`].

use super::config::{INTERVALS, Precision, SurfConfig, SurfError};
use crate::image::check_dimensions;

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

/// Number of `u32` scratch words [`detect`](super::detect) needs for a `width x height` image: the response maps
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
pub(super) const fn words_per_sample(precision: Precision) -> usize {
    match precision {
        Precision::F32 => INTERVALS as usize,
        Precision::Packed8 => 1,
    }
}

/// Checks that `octave` is configured.
pub(super) fn check_octave(config: &SurfConfig, octave: u32) -> Result<(), SurfError> {
    if octave >= u32::from(config.octaves) {
        return Err(SurfError::OctaveOutOfRange {
            octave,
            octaves: config.octaves,
        });
    }
    Ok(())
}
