//! Orientation and Q7 SURF-64 descriptors in fixed point: the definitions of
//! [`crate::describe`] (OpenSURF's `getOrientation` and `getDescriptor`) with integer
//! arithmetic. Haar responses are exact integers in both; the Gaussian weights, the angle, the
//! rotation and the normalisation are fixed-point here, so the results are close to, not equal
//! to, the `f32` path's (compared in the tests).

use fixed::types::{I16F16, I17F15};

use super::arith::{
    POS_FRAC, Position, TRIG_FRAC, TWO_PI, Unit, Weight, atan2, const_exp, isqrt_u128,
    position_from_f32, position_to_f32, round_position, sincos,
};
use crate::describe::{DescribeError, describe_each};
use crate::describe::{ORIENTATION_GRID, ORIENTATION_WEIGHT_BY_SAMPLE};
#[cfg(test)]
use crate::describe::{haar_x, haar_y};
use crate::haar::haar_pair;
use crate::integral::IntegralImage;
use crate::keypoint::{DESCRIPTOR_LEN, DescriptorQ7, Keypoint};

/// Number of orientation angle bins (`2 pi / 42` each) and bins per window (`pi / 3`), as in
/// the `f32` path.
const BINS: usize = 42;
/// Bins per orientation window.
const WINDOW_BINS: usize = 7;

/// Assigns `kp.orientation` from Haar responses around the keypoint, in fixed point: the `f32`
/// path's samples, integer weights and exact `i64` bin and window sums, with each sample's bin
/// taken from its CORDIC angle in Q16 (so a sample within about `2^-16` rad of a bin edge may
/// land in the neighbouring bin of the `f32` path's). The angle of the longest window is
/// computed in Q16 and stored exactly in the `f32` field.
pub fn assign_orientation_fixed(ii: &IntegralImage, kp: &mut Keypoint) {
    let s = round_position(position_from_f32(kp.scale));
    let r = round_position(position_from_f32(kp.y));
    let c = round_position(position_from_f32(kp.x));
    // Each sample is added to its bin as it is computed: no per-sample arrays on the stack.
    let mut bin_x = [0i64; BINS];
    let mut bin_y = [0i64; BINS];
    for (&(i, j, _), &g) in ORIENTATION_GRID.iter().zip(&ORIENTATION_WEIGHT_BY_SAMPLE) {
        let (i, j) = (i32::from(i), i32::from(j));
        let row = r.saturating_add(j.saturating_mul(s));
        let col = c.saturating_add(i.saturating_mul(s));
        let size = s.saturating_mul(4);
        let (hx, hy) = haar_pair(ii, row, col, size);
        // The angle in [0, 2 pi); its bin floor(a 42 / 2 pi), clamped (an integer quotient of
        // the two Q16 values).
        let a = atan2(hy, hx);
        let b = ((a * BINS as i64).to_bits() / TWO_PI.to_bits()).clamp(0, BINS as i64 - 1);
        let b = b as usize;
        bin_x[b] += g * hx;
        bin_y[b] += g * hy;
    }
    // Window k is bins k..k+7 (mod 42), a sliding sum; the first strictly longest wins.
    let (mut sum_x, mut sum_y) = (0i64, 0i64);
    for b in 0..WINDOW_BINS {
        sum_x += bin_x[b];
        sum_y += bin_y[b];
    }
    let mut best: u128 = 0;
    let mut best_sum = (0i64, 0i64);
    for k in 0..BINS {
        let length = (sum_x as i128 * sum_x as i128 + sum_y as i128 * sum_y as i128) as u128;
        if length > best {
            best = length;
            best_sum = (sum_x, sum_y);
        }
        let (leaving, entering) = (k, (k + WINDOW_BINS) % BINS);
        sum_x += bin_x[entering] - bin_x[leaving];
        sum_y += bin_y[entering] - bin_y[leaving];
    }
    let orientation = if best > 0 {
        atan2(best_sum.1, best_sum.0)
    } else {
        Position::ZERO
    };
    kp.orientation = position_to_f32(orientation);
}

/// Sub-region weights `exp(-((a + 0.5 - 2)^2 + (b + 0.5 - 2)^2) / 4.5)` (sigma 1.5), by
/// `|a + 0.5 - 2|` = 0.5 or 1.5 per axis: `[both 0.5, one 1.5, both 1.5]`.
const SUBREGION_WEIGHTS: [Weight; 3] = [
    weight(const_exp(-0.5 / 4.5)),
    weight(const_exp(-2.5 / 4.5)),
    weight(const_exp(-4.5 / 4.5)),
];

/// A compile-time `f64` in `[0, 1]` as the nearest [`Weight`] (ties up).
const fn weight(v: f64) -> Weight {
    Weight::from_bits((v * (1u64 << Weight::FRAC_NBITS) as f64 + 0.5) as u32)
}

/// The sub-region offsets `i` (and `j`): samples `i..i + 9`.
const SUBREGION_START: [i32; 4] = [-12, -7, -2, 3];

/// `round(x + a)` for an integer `x` and an offset `a` (half away from zero).
#[inline]
fn offset_round(x: i32, a: I16F16) -> i32 {
    x + a.wrapping_round().wrapping_to_num::<i32>()
}

/// `a * b` for `|b| <= 2^16`: one 32-bit multiplication when `|a| < 2^15` (the common case:
/// Haar responses of small scales; the product is then below 2^31), else 64-bit.
#[inline(always)]
fn mul_small(a: i64, b: i32) -> i64 {
    if a.unsigned_abs() < 1 << 15 {
        i64::from(a as i32 * b)
    } else {
        a * i64::from(b)
    }
}

/// The Q7 SURF-64 descriptor of `kp` (orientation taken from `kp`, 0 when `upright`), in fixed
/// point: OpenSURF's `getDescriptor` (24 s window, 4x4 overlapping 9x9 sub-regions), each
/// sample's Haar responses computed once and added to every sub-region that contains it, in the
/// same sample order, then `clamp(round(127 v / |v|), -127, 127)`. All zeros when every response
/// is zero.
///
/// Arithmetic (chosen so that a Cortex-M0 mostly runs 32-bit single instructions): positions in
/// Q16 `i32` (`|12 s cos| < 2^28` for scales below 1000), rotation by Q15 sines and cosines,
/// Gaussian weights in Q16 from a constant table (the `f32` path's sample weights), sums in `i64`.
pub fn describe_q7(ii: &IntegralImage, kp: &Keypoint, upright: bool) -> DescriptorQ7 {
    let x = round_position(position_from_f32(kp.x));
    let y = round_position(position_from_f32(kp.y));
    // Scales of SURF keypoints are below 130 (octave 6); clamp so every product below fits.
    let scale =
        position_from_f32(kp.scale).clamp(Position::DELTA, Position::from_bits(1000 << POS_FRAC));
    let (co, si) = if upright {
        (Unit::ONE, Unit::ZERO)
    } else {
        sincos(position_from_f32(kp.orientation))
    };
    // The rotation in Q15 (truncated), for 32-bit products with the responses.
    let (co15, si15) = (
        I17F15::wrapping_from_num(co).to_bits(),
        I17F15::wrapping_from_num(si).to_bits(),
    );
    // scale * cos and scale * sin (a position times the bits of a Q30 unit, back to Q16),
    // in 32 bits.
    let along = |unit: Unit| I16F16::wrapping_from_num((scale * unit.to_bits()) >> TRIG_FRAC);
    let (sc, ss) = (along(co), along(si));
    let haar_size = 2 * round_position(scale);
    // Per sub-region (dx, dy, |dx|, |dy|) in Q4 units of a Haar response.
    let mut sums = [[[0i64; 4]; 4]; 4];
    for kk in -12..12i32 {
        // The sub-regions whose k-range holds kk (one or two).
        let a_range = regions_of(kk);
        for l in -12..12i32 {
            let b_range = regions_of(l);
            let px = offset_round(x, ss * -l + sc * kk);
            let py = offset_round(y, sc * l + ss * kk);
            let (rx, ry) = haar_pair(ii, py, px, haar_size);
            // Rotated into the keypoint frame (Q15 products, kept in Q4).
            let u = (mul_small(ry, co15) - mul_small(rx, si15)) >> 11;
            let v = (mul_small(rx, co15) + mul_small(ry, si15)) >> 11;
            for a in a_range.clone() {
                for b in b_range.clone() {
                    let (p, q) = (kk - SUBREGION_START[a], l - SUBREGION_START[b]);
                    // At most 1.0: the bits are below 2^16 + 1, an `i32`.
                    let g = SAMPLE_WEIGHTS[p as usize][q as usize].to_bits() as i32;
                    let (gu, gv) = (mul_small(u, g) >> POS_FRAC, mul_small(v, g) >> POS_FRAC);
                    let acc = &mut sums[a][b];
                    acc[0] += gu;
                    acc[1] += gv;
                    acc[2] += gu.abs();
                    acc[3] += gv.abs();
                }
            }
        }
    }
    let mut values = [0i64; DESCRIPTOR_LEN];
    let mut length: u128 = 0;
    for a in 0..4 {
        for b in 0..4 {
            let far = usize::from(a == 0 || a == 3) + usize::from(b == 0 || b == 3);
            let w = i64::from(SUBREGION_WEIGHTS[far].to_bits());
            for (m, &sum) in sums[a][b].iter().enumerate() {
                let value = (sum * w) >> POS_FRAC;
                values[(a * 4 + b) * 4 + m] = value;
                length += (value as i128 * value as i128) as u128;
            }
        }
    }
    let norm = isqrt_u128(length) as i64;
    let mut out = [0i8; DESCRIPTOR_LEN];
    if norm == 0 {
        return out;
    }
    for (q, &value) in out.iter_mut().zip(values.iter()) {
        // round(127 v / norm), half away from zero, clamped (|v| <= norm, so within +-127).
        // The quotient is exact in any width that holds the operands: 32 bits where they fit
        // (a 128-bit division is hundreds of instructions on a 32-bit part).
        let scaled = 127 * value.unsigned_abs() as u128;
        let (numerator, denominator) = (2 * scaled + norm as u128, 2 * norm as u128);
        let rounded = match (u32::try_from(numerator), u32::try_from(denominator)) {
            (Ok(n), Ok(d)) => i64::from(n / d),
            _ => (numerator / denominator) as i64,
        };
        let signed = if value < 0 { -rounded } else { rounded };
        *q = signed.clamp(-127, 127) as i8;
    }
    out
}

/// The `f32` path's sample weights ([`crate::describe::SAMPLE_WEIGHTS`]: the Gaussian of sigma
/// 2.5 sample spacings around sample `(5, 5)` of a sub-region),
/// `exp(-((p - 5)^2 + (q - 5)^2) / 12.5)`, evaluated by the compiler.
const SAMPLE_WEIGHTS: [[Weight; 9]; 9] = {
    let mut table = [[Weight::ZERO; 9]; 9];
    let mut p = 0;
    while p < 9 {
        let mut q = 0;
        while q < 9 {
            let d2 = (p as i32 - 5) * (p as i32 - 5) + (q as i32 - 5) * (q as i32 - 5);
            table[p][q] = weight(const_exp(-(d2 as f64) / 12.5));
            q += 1;
        }
        p += 1;
    }
    table
};

/// The sub-regions (indices into [`SUBREGION_START`]) whose 9 samples include `k`, from a
/// table for the window's `-12..12`: it runs twice per sample, in the descriptor's innermost
/// loop, where a search would cost more than the sums it serves.
#[inline]
fn regions_of(k: i32) -> core::ops::Range<usize> {
    match REGIONS_OF.get((k + 12) as usize) {
        Some(&(first, end)) => usize::from(first)..usize::from(end),
        None => regions_searched(k),
    }
}

/// [`regions_searched`] of `k = -12..12`, `(first, end)`, evaluated by the compiler.
const REGIONS_OF: [(u8, u8); 24] = {
    let mut table = [(0u8, 0u8); 24];
    let mut i = 0;
    while i < 24 {
        let range = regions_searched(i as i32 - 12);
        table[i] = (range.start as u8, range.end as u8);
        i += 1;
    }
    table
};

/// The sub-regions whose 9 samples include `k`, by search.
const fn regions_searched(k: i32) -> core::ops::Range<usize> {
    let mut first = 4;
    let mut last = 0;
    let mut a = 0;
    while a < SUBREGION_START.len() {
        let start = SUBREGION_START[a];
        if start <= k && k < start + 9 {
            if a < first {
                first = a;
            }
            last = a + 1;
        }
        a += 1;
    }
    first..if last > first { last } else { first }
}

/// Fixed-point counterpart of [`crate::describe::describe_all`]: assigns orientations (unless
/// `upright`) and writes one Q7 descriptor per keypoint into `out`.
pub fn describe_all_q7(
    ii: &IntegralImage,
    keypoints: &mut [Keypoint],
    upright: bool,
    out: &mut [DescriptorQ7],
) -> Result<(), DescribeError> {
    describe_each(
        ii,
        keypoints,
        upright,
        out,
        assign_orientation_fixed,
        describe_q7,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haar_pair_equals_the_separate_wavelets_everywhere() {
        let (w, h) = (40usize, 30usize);
        let pixels: [u8; 1200] = core::array::from_fn(|i| (i * 37 % 251) as u8);
        let image = crate::GrayImage::new(&pixels, w, h).unwrap();
        let mut table = [0u32; 41 * 31];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        for s in 1..12 {
            for row in -3..(h as i32 + 3) {
                for col in -3..(w as i32 + 3) {
                    assert_eq!(
                        haar_pair(&ii, row, col, s),
                        (haar_x(&ii, row, col, s), haar_y(&ii, row, col, s)),
                        "{s} {row} {col}"
                    );
                }
            }
        }
    }
}
