//! The fixed-point formats (types of the `fixed` crate) and the integer functions of the
//! fixed-point path: exact `f32` conversions, rounding, CORDIC `atan2` and `sincos`, `exp` and
//! integer square root, with the `const` tables they use. Re-exported by [`crate::fixed`].

use fixed::types::extra::{U16, U28, U29, U30};
use fixed::types::{U8F24, U16F16};
use fixed::{FixedI32, FixedI64};

/// A Hessian response: Q29 in 32 bits (OpenSURF units; below 0.5 in magnitude for every box
/// filter, so two bits of headroom).
pub type Response = FixedI32<U29>;
/// A position, scale or angle (radians): Q16 in 64 bits.
pub type Position = FixedI64<U16>;
/// A sine or cosine: Q30 in 64 bits.
pub type Unit = FixedI64<U30>;
/// A weight in `[0, 1]` (Gaussian weights, `exp(-x)`) or an argument of [`exp_neg`]: unsigned
/// Q16.
pub type Weight = U16F16;

/// Fractional bits of a fixed-point Hessian response ([`Response`]).
pub const RESPONSE_FRAC: u32 = Response::FRAC_NBITS;
/// Fractional bits of fixed-point positions, scales and angles ([`Position`]).
pub const POS_FRAC: u32 = Position::FRAC_NBITS;
/// Fractional bits of fixed-point sines and cosines ([`Unit`]).
pub const TRIG_FRAC: u32 = Unit::FRAC_NBITS;

/// `v` as a [`Position`] (round half away from zero, saturating; NaN gives 0), from the bits
/// of the `f32` with integer operations only.
pub fn position_from_f32(v: f32) -> Position {
    Position::from_bits(fixed_from_f32(v, POS_FRAC))
}

/// `p` as the nearest `f32` (exact below `2^8`), built from its bits.
pub fn position_to_f32(p: Position) -> f32 {
    f32_from_fixed(p.to_bits(), POS_FRAC)
}

/// `p` rounded to the nearest integer, ties away from zero, as an `i32` (wrapping, as `as`).
pub fn round_position(p: Position) -> i32 {
    p.wrapping_round().wrapping_to_num::<i32>()
}

/// `value * 2^-frac` as the nearest `f32` (ties to even), built from its bits with integer
/// operations only. `frac <= 62`; the result is exact whenever `|value| < 2^24`.
pub fn f32_from_fixed(value: i64, frac: u32) -> f32 {
    if value == 0 {
        return f32::from_bits(0);
    }
    let sign = if value < 0 { 1u32 << 31 } else { 0 };
    let magnitude = value.unsigned_abs();
    let msb = 63 - magnitude.leading_zeros(); // position of the leading one
    let (mut mantissa, mut top) = if msb > 23 {
        let shift = msb - 23;
        let kept = magnitude >> shift;
        let rest = magnitude & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let up = rest > half || (rest == half && kept & 1 == 1);
        (kept + u64::from(up), msb)
    } else {
        (magnitude << (23 - msb), msb)
    };
    if mantissa == 1 << 24 {
        // Rounding carried into a new leading bit.
        mantissa >>= 1;
        top += 1;
    }
    let exponent = top as i32 - frac as i32 + 127;
    if exponent <= 0 {
        return f32::from_bits(sign); // below f32's normal range: far below any value used here
    }
    if exponent >= 255 {
        return f32::from_bits(sign | 0x7f80_0000);
    }
    f32::from_bits(sign | (exponent as u32) << 23 | (mantissa as u32 & 0x7f_ffff))
}

/// `round(v * 2^frac)` (ties away from zero) from the bits of `v`, with integer operations only;
/// saturates at `i64::MIN..=i64::MAX`, NaN gives 0.
pub fn fixed_from_f32(v: f32, frac: u32) -> i64 {
    let bits = v.to_bits();
    let negative = bits >> 31 == 1;
    let biased = ((bits >> 23) & 0xff) as i32;
    let fraction = u64::from(bits & 0x7f_ffff);
    if biased == 0xff {
        return match (fraction, negative) {
            (0, false) => i64::MAX,
            (0, true) => i64::MIN,
            _ => 0,
        };
    }
    let (mantissa, exponent) = if biased == 0 {
        (fraction, -126 - 23)
    } else {
        (fraction | 1 << 23, biased - 127 - 23)
    };
    let shift = exponent + frac as i32;
    let magnitude: u64 = if shift >= 0 {
        if shift >= 39 {
            u64::MAX >> 1
        } else {
            mantissa << shift
        }
    } else if shift <= -40 {
        0
    } else {
        let s = (-shift) as u32;
        (mantissa + (1u64 << (s - 1))) >> s
    };
    let magnitude = magnitude.min(i64::MAX as u64) as i64;
    if negative { -magnitude } else { magnitude }
}

/// Round half away from zero of a Q`frac` value to an integer.
#[inline]
pub fn round_fixed(value: i64, frac: u32) -> i64 {
    let half = 1i64 << (frac - 1);
    if value >= 0 {
        (value + half) >> frac
    } else {
        -((-value + half) >> frac)
    }
}

/// `exp(x)` of a compile-time `f64` (`|x| <= 64`), for the `const` tables: `exp(x / 2^8)` by
/// its Taylor series, squared eight times.
pub(crate) const fn const_exp(x: f64) -> f64 {
    let y = x / 256.0;
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut n = 1;
    while n < 16 {
        term = term * y / n as f64;
        sum += term;
        n += 1;
    }
    let mut k = 0;
    while k < 8 {
        sum *= sum;
        k += 1;
    }
    sum
}

/// `atan(x)` of a compile-time `f64` in `[0, 1]` (series after two half-angle reductions).
const fn const_atan(x: f64) -> f64 {
    // atan(x) = 2 atan(x / (1 + sqrt(1 + x^2))), twice: the argument drops below 0.2.
    let mut y = x;
    let mut k = 0;
    while k < 2 {
        y = y / (1.0 + const_sqrt(1.0 + y * y));
        k += 1;
    }
    let y2 = y * y;
    let mut term = y;
    let mut sum = 0.0;
    let mut n = 0;
    while n < 30 {
        let odd = (2 * n + 1) as f64;
        sum += if n % 2 == 0 { term / odd } else { -term / odd };
        term *= y2;
        n += 1;
    }
    sum * 4.0
}

/// `sqrt(x)` of a compile-time `f64` (Newton's method).
const fn const_sqrt(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let mut r = if x > 1.0 { x } else { 1.0 };
    let mut k = 0;
    while k < 64 {
        r = 0.5 * (r + x / r);
        k += 1;
    }
    r
}

/// The CORDIC angle accumulator: Q28 in 32 bits (`|angle| < 5` throughout).
type CordicAngle = FixedI32<U28>;
/// CORDIC iterations (the last angle step is below one unit of [`Position`]).
const CORDIC_STEPS: usize = 26;
/// `atan(2^-i)`.
const CORDIC_ANGLES: [CordicAngle; CORDIC_STEPS] = {
    let mut table = [CordicAngle::ZERO; CORDIC_STEPS];
    let mut i = 0;
    while i < CORDIC_STEPS {
        let t = const_atan(1.0 / (1u64 << i) as f64);
        let scale = (1u64 << CordicAngle::FRAC_NBITS) as f64;
        table[i] = CordicAngle::from_bits((t * scale + 0.5) as i32);
        i += 1;
    }
    table
};
/// `1 / prod sqrt(1 + 2^-2i)` (the CORDIC gain's inverse).
const CORDIC_INV_GAIN: Unit = {
    let mut gain = 1.0;
    let mut i = 0;
    while i < CORDIC_STEPS {
        gain *= const_sqrt(1.0 + 1.0 / ((1u64 << (2 * i)) as f64));
        i += 1;
    }
    Unit::from_bits(((1u64 << TRIG_FRAC) as f64 / gain + 0.5) as i64)
};
/// pi in Q28, `round(pi * 2^28)`.
const PI_Q28: i64 = 843_314_857;
/// pi as a CORDIC angle.
const CORDIC_PI: CordicAngle = CordicAngle::from_bits(PI_Q28 as i32);
/// pi as a [`Position`], `round(pi * 2^16)`.
pub const PI: Position = Position::from_bits(205_887);
/// 2 pi as a [`Position`], `round(2 pi * 2^16)`.
pub const TWO_PI: Position = Position::from_bits(411_775);
/// The bits of [`PI`].
pub const PI_Q16: i64 = PI.to_bits();
/// The bits of [`TWO_PI`].
pub const TWO_PI_Q16: i64 = TWO_PI.to_bits();

/// `atan2(y, x)` in `[0, 2 pi)`, by CORDIC vectoring (32-bit shifts and adds: single
/// instructions on a Cortex-M0); `(0, 0)` gives 0. Accurate to about 1e-4 rad.
pub fn atan2(y: i64, x: i64) -> Position {
    if x == 0 && y == 0 {
        return Position::ZERO;
    }
    // Scale to about 2^28 (up or down): ~28 significant bits, and the CORDIC gain (1.65) times
    // sqrt(2) keeps every intermediate below 2^31.
    let magnitude = x.unsigned_abs().max(y.unsigned_abs());
    let bits = 64 - magnitude.leading_zeros();
    let (x, y) = if bits > 28 {
        (x >> (bits - 28), y >> (bits - 28))
    } else {
        (x << (28 - bits), y << (28 - bits))
    };
    let (mut x, mut y) = (x as i32, y as i32);
    // Rotate into the right half-plane: angle += pi for x < 0. |z| stays below
    // (pi + 1.75) < 5.
    let mut z = CordicAngle::ZERO;
    if x < 0 {
        x = -x;
        y = -y;
        z = CORDIC_PI;
    }
    for (i, &step) in CORDIC_ANGLES.iter().enumerate() {
        let (xs, ys) = (x >> i, y >> i);
        if y > 0 {
            x += ys;
            y -= xs;
            z += step;
        } else {
            x -= ys;
            y += xs;
            z -= step;
        }
    }
    // To Q16, half away from zero: the magnitude plus half a unit of Q16, truncated.
    let half = CordicAngle::from_bits(1 << (CordicAngle::FRAC_NBITS - POS_FRAC - 1));
    let magnitude = Position::from_num(z.abs() + half);
    let mut angle = if z < 0 { -magnitude } else { magnitude };
    if angle < 0 {
        angle += TWO_PI;
    }
    if angle >= TWO_PI {
        angle -= TWO_PI;
    }
    angle
}

/// The bits of [`atan2`] (Q16 radians).
pub fn atan2_q16(y: i64, x: i64) -> i64 {
    atan2(y, x).to_bits()
}

/// `(cos a, sin a)` by CORDIC rotation. Accurate to about 1e-8.
pub fn sincos(angle: Position) -> (Unit, Unit) {
    // Reduce to [-pi, pi) (in Q28, where 2 pi is more exact), then to [-pi/2, pi/2] with a sign
    // flip.
    let two_pi = i128::from(2 * PI_Q28);
    let z = i128::from(angle.to_bits()) << (CordicAngle::FRAC_NBITS - POS_FRAC);
    let mut z = ((z % two_pi + two_pi) % two_pi) as i64;
    if z >= PI_Q28 {
        z -= 2 * PI_Q28;
    }
    let mut flip = false;
    if z > PI_Q28 / 2 {
        z -= PI_Q28;
        flip = true;
    } else if z < -PI_Q28 / 2 {
        z += PI_Q28;
        flip = true;
    }
    let (mut x, mut y) = (CORDIC_INV_GAIN, Unit::ZERO);
    for (i, &step) in CORDIC_ANGLES.iter().enumerate() {
        let (xs, ys) = (x >> i, y >> i);
        let step = i64::from(step.to_bits());
        if z >= 0 {
            x -= ys;
            y += xs;
            z -= step;
        } else {
            x += ys;
            y -= xs;
            z += step;
        }
    }
    if flip { (-x, -y) } else { (x, y) }
}

/// The bits of [`sincos`] of a Q16 angle: `(cos, sin)` in Q30.
pub fn sincos_q30(angle_q16: i64) -> (i64, i64) {
    let (c, s) = sincos(Position::from_bits(angle_q16));
    (c.to_bits(), s.to_bits())
}

/// `exp(-x)` for `x >= 0` (`exp(-x) = 2^-(x log2 e)`: the integer part of the exponent is a
/// shift, the fraction a 64-entry table with linear interpolation, in 32-bit arithmetic but
/// for one 32x32-bit product). Absolute error below 3e-5; 0 beyond `x = 40`.
pub fn exp_neg(x: Weight) -> Weight {
    if x == 0 {
        return Weight::ONE;
    }
    if x >= 40 {
        return Weight::ZERO;
    }
    /// log2(e) in Q16.
    const LOG2E: Weight = Weight::from_bits(94_548);
    // The exponent of two; `x log2 e < 58`, so the product fits.
    let y = x * LOG2E;
    let whole = y.to_num::<u32>();
    if whole >= 24 {
        return Weight::ZERO; // below 2^-24
    }
    let frac = y.frac().to_bits();
    let index = (frac >> 10) as usize; // 64 intervals
    let within = frac & 0x3ff;
    let (a, b) = (EXP2_NEG[index], EXP2_NEG[index + 1]);
    // Neighbouring entries differ by less than 2^-6, so the product fits 32 bits.
    let value = a - (((a - b) * within) >> 10);
    Weight::from_num(value >> whole)
}

/// The bits of [`exp_neg`] of a Q16 argument, in Q16.
pub fn exp_neg_q16(x_q16: u32) -> u32 {
    exp_neg(Weight::from_bits(x_q16)).to_bits()
}

/// `2^(-i/64)` for `i = 0..=64`.
const EXP2_NEG: [U8F24; 65] = {
    let mut table = [U8F24::ZERO; 65];
    let mut i = 0;
    while i <= 64 {
        // 2^(-i/64) = exp(-ln2 i / 64)
        let v = const_exp(-core::f64::consts::LN_2 * i as f64 / 64.0);
        table[i] = U8F24::from_bits((v * (1u64 << 24) as f64 + 0.5) as u32);
        i += 1;
    }
    table
};

/// `floor(sqrt(n))`.
pub fn isqrt_u128(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    // Bit-by-bit: the result has at most 64 bits.
    let mut result = 0u128;
    let mut bit = 1u128 << ((127 - n.leading_zeros()) & !1);
    let mut rest = n;
    while bit != 0 {
        if rest >= result + bit {
            rest -= result + bit;
            result = (result >> 1) + bit;
        } else {
            result >>= 1;
        }
        bit >>= 2;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_conversions_are_exact_where_they_should_be() {
        for &(v, frac) in &[
            (1i64, 0u32),
            (-3, 1),
            (123_456_789, 16),
            (-(1 << 40) - 7, 29),
            (16_777_217, 0), // 2^24 + 1: rounds to even
            (5, 30),
        ] {
            let expected = (v as f64 / (1u64 << frac) as f64) as f32;
            assert_eq!(
                f32_from_fixed(v, frac).to_bits(),
                expected.to_bits(),
                "{v} {frac}"
            );
        }
        for &(v, frac) in &[(0.0004f32, 29u32), (-2.5, 16), (123.456, 16), (1e-12, 29)] {
            let expected = (f64::from(v) * (1u64 << frac) as f64).round() as i64;
            assert_eq!(fixed_from_f32(v, frac), expected, "{v}");
        }
        assert_eq!(fixed_from_f32(f32::NAN, 16), 0);
        assert_eq!(fixed_from_f32(f32::INFINITY, 16), i64::MAX);
    }

    #[test]
    fn atan2_matches_f64_within_1e4_rad() {
        let mut worst = 0.0f64;
        for i in -40i64..=40 {
            for j in -40i64..=40 {
                let (y, x) = (i * 12_345, j * 9_876);
                let got = atan2_q16(y, x) as f64 / 65536.0;
                let mut want = (y as f64).atan2(x as f64);
                if want < 0.0 {
                    want += 2.0 * core::f64::consts::PI;
                }
                if x == 0 && y == 0 {
                    want = 0.0;
                }
                let mut d = (got - want).abs();
                d = d.min((d - 2.0 * core::f64::consts::PI).abs());
                worst = worst.max(d);
            }
        }
        assert!(worst < 1e-4, "worst atan2 error {worst}");
    }

    #[test]
    fn sincos_matches_f64() {
        let mut worst = 0.0f64;
        for k in -500..500 {
            let a_q16 = k * 997;
            let a = a_q16 as f64 / 65536.0;
            let (c, s) = sincos_q30(a_q16);
            let scale = (1u64 << 30) as f64;
            worst = worst.max((c as f64 / scale - a.cos()).abs());
            worst = worst.max((s as f64 / scale - a.sin()).abs());
        }
        assert!(worst < 1e-7, "worst sin/cos error {worst}");
    }

    #[test]
    fn exp_matches_f64() {
        let mut worst = 0.0f64;
        for k in 0..4000u32 {
            let x_q16 = k * 331;
            let got = f64::from(exp_neg_q16(x_q16)) / 65536.0;
            let want = (-f64::from(x_q16) / 65536.0).exp();
            worst = worst.max((got - want).abs());
        }
        assert!(worst < 3e-5, "worst exp error {worst}");
    }

    #[test]
    fn isqrt_is_floor_sqrt() {
        for n in [
            0u128,
            1,
            2,
            3,
            4,
            15,
            16,
            17,
            1 << 40,
            (1 << 80) + 12345,
            u64::MAX as u128,
        ] {
            let r = isqrt_u128(n);
            assert!(r * r <= n && (r + 1) * (r + 1) > n, "{n}");
        }
    }
}
