//! The one math shim of the crate: every floating-point function goes through here, so that the
//! crate stays `no_std` (libm) and a later switch (for example to `core` intrinsics) is one edit.
//!
//! ## The crate's own `f32` functions
//! [`expf`], [`sincosf`] and [`atan2f`] are defined here rather than taken from libm, for two
//! reasons. On a single-precision FPU (Cortex-M4F) libm's `sinf`/`cosf` evaluate their kernels in
//! `f64` (soft-float calls), and the SURF paths must contain no `f64`. And the OpenCL kernels
//! (`gpu-runner/kernels/surf.cl`) carry a line-by-line port of these three functions, so the
//! orientation, the rotation and the Gaussian weights of a descriptor are the same bits on both
//! sides. Every step below is therefore one IEEE `f32` operation (`+ - * /`, correctly rounded,
//! no fused multiply-add: Rust never contracts, the kernels use `FP_CONTRACT OFF` and
//! `-cl-fp32-correctly-rounded-divide-sqrt`), a comparison, an integer operation or a bit
//! reinterpretation, evaluated in the order written. Accuracy (measured in the tests against
//! `f64`, worst cases seen): `expf` within 1.5 ulp (1.14), `sincosf` within 2 ulp (1.49) on
//! `|x| <= 4096` (absolute error below 6e-8 near the zeros), `atan2f` within 3 ulp (2.54).

#![allow(dead_code)]

#[inline]
pub(crate) fn sqrtf(x: f32) -> f32 {
    libm::sqrtf(x)
}
#[inline]
pub(crate) fn fabsf(x: f32) -> f32 {
    libm::fabsf(x)
}
#[inline]
pub(crate) fn floorf(x: f32) -> f32 {
    libm::floorf(x)
}
/// Round half away from zero, as C's `roundf` (OpenSURF's `fRound`); the OpenCL kernels use `round`.
#[inline]
pub(crate) fn roundf(x: f32) -> f32 {
    libm::roundf(x)
}
#[inline]
pub(crate) fn logf(x: f32) -> f32 {
    libm::logf(x)
}
#[inline]
pub(crate) fn powf(x: f32, y: f32) -> f32 {
    libm::powf(x, y)
}
#[inline]
pub(crate) fn sqrt(x: f64) -> f64 {
    libm::sqrt(x)
}
#[inline]
pub(crate) fn fabs(x: f64) -> f64 {
    libm::fabs(x)
}
/// Rounds half away from zero (as [`roundf`]) straight to `i32`, without a libm call: the
/// descriptor rounds two sample coordinates per sample. Saturates outside the `i32` range; NaN
/// gives 0.
#[inline]
// The comparisons are written out with `&` (not `contains`, which short-circuits): one select
// per lane when a loop of positions is vectorised.
#[allow(clippy::manual_range_contains)]
pub(crate) fn round_to_i32(x: f32) -> i32 {
    // `as` truncates toward zero (saturating); `x - trunc(x)` is exact in f32, so comparing the
    // fraction with one half decides exactly like `roundf`. A fraction of magnitude one or more
    // only arises where `as` saturated (every f32 beyond 2^23 is an integer), and there the
    // saturated value is the answer: so the step is never applied where it could overflow, and
    // the whole function is compares and a wrapping add, which vectorise (a loop of sample
    // positions rounds 4 or 8 at a time).
    //
    // `|frac|` in `[0.5, 1)` is tested on its bits (two integer compares instead of four float
    // compares, each a flag transfer on a Cortex-M4F); its sign bit gives the direction. A NaN
    // fraction has larger bits than 1.0, so it takes no step.
    let t = x as i32;
    let frac = (x - t as f32).to_bits();
    let magnitude = frac & 0x7fff_ffff;
    let away = (magnitude >= 0.5f32.to_bits()) & (magnitude < 1.0f32.to_bits());
    let direction = 1 - 2 * (frac >> 31) as i32;
    t.wrapping_add(i32::from(away) * direction)
}

/// `v as f32` (the nearest `f32`, ties to even), with one conversion instruction where `v` fits
/// an `i32`: 32-bit targets convert an `i64` in a library call of some forty instructions, and
/// the values converted here (determinants of the small filters, Haar responses) mostly fit.
/// The `i32` conversion rounds the same integer the same way, so the bits are those of
/// `v as f32`.
#[inline(always)]
pub(crate) fn i64_to_f32(v: i64) -> f32 {
    if cfg!(target_pointer_width = "64") {
        return v as f32;
    }
    match i32::try_from(v) {
        Ok(small) => small as f32,
        // A call, so that it is made only for the values that need it: written inline, LLVM
        // turns the two conversions into a select and makes the library call every time.
        Err(_) => i64_to_f32_wide(v),
    }
}

/// `v as f32` for a `v` beyond `i32`: [`i64_to_f32_sticky`] where an FPU converts a `u32` in
/// one instruction, the library conversion elsewhere.
#[cold]
#[inline(never)]
fn i64_to_f32_wide(v: i64) -> f32 {
    if cfg!(all(target_arch = "arm", target_feature = "fpregs")) {
        i64_to_f32_sticky(v)
    } else {
        v as f32
    }
}

/// `v as f32` from a `u32` conversion: `|v|` shifted right until it fits a `u32`, the bits
/// shifted out OR-ed into the lowest bit (a sticky bit: with at least 8 bits below the 24 that
/// an `f32` keeps, it decides the rounding as they did), converted and scaled back by the power
/// of two (exact). One rounding to nearest even of `v`, so the bits of `v as f32`.
#[inline(always)]
fn i64_to_f32_sticky(v: i64) -> f32 {
    let magnitude = v.unsigned_abs();
    // 0..=32 bits above the low word: `magnitude >> shift` fits a u32.
    let shift = 32 - ((magnitude >> 32) as u32).leading_zeros();
    let kept = (magnitude >> shift) as u32;
    let dropped = magnitude & ((1u64 << shift) - 1);
    let rounded = (kept | u32::from(dropped != 0)) as f32;
    let scaled = rounded * f32::from_bits((127 + shift) << 23);
    if v < 0 { -scaled } else { scaled }
}

/// `a * b` as an `i64`, exactly. On a Cortex-M0 (v6-M: a 32x32-bit multiply that keeps the
/// low half only) a 64-bit product is a library call of some fifty instructions; there it is
/// put together from four 16x16-bit products instead. Elsewhere the widening multiply
/// instruction.
#[inline(always)]
pub(crate) fn mul_wide(a: i32, b: i32) -> i64 {
    if cfg!(all(target_arch = "arm", not(target_feature = "v7"))) {
        mul_wide_by_halves(a, b)
    } else {
        i64::from(a) * i64::from(b)
    }
}

/// [`mul_wide`] from four 16x16-bit products.
#[inline(always)]
fn mul_wide_by_halves(a: i32, b: i32) -> i64 {
    // a = ah 2^16 + al with ah in [-2^15, 2^15) and al in [0, 2^16), likewise b. Each cross
    // product, at most 2^15 (2^16 - 1) in magnitude, fits an i32; al bl fits a u32.
    let (ah, al) = (a >> 16, a & 0xffff);
    let (bh, bl) = (b >> 16, b & 0xffff);
    let high = i64::from(ah * bh) << 32;
    let cross = (i64::from(ah * bl) + i64::from(al * bh)) << 16;
    let low = i64::from((al as u32) * (bl as u32));
    high + cross + low
}

/// Whether the target has SIMD units (x86, aarch64): there the core takes code paths that
/// trade extra arithmetic or stack for vectors; microcontrollers keep the plain ones.
pub(crate) const SIMD_UNITS: bool = cfg!(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64"
));

/// [`round_to_i32`] of every element of `xs` into `out`, in a form that vectorises: Rust's
/// saturating `f32 as i32` does not (on x86-64 each element costs a scalar convert and two
/// fix-ups), so when every `|x| < 2^22` (the usual row of sample positions) the rounding is
/// done in `f32`: `x + 1.5 * 2^23` is rounded by the addition to the nearest integer, ties to
/// even, and its bits minus those of `1.5 * 2^23` are that integer; `d = x - rne(x)` is exact,
/// and is `+-0.5` only at a tie, where half away from zero then steps one further from zero
/// when `rne` went the other way. Any other row (a huge or NaN position) takes
/// [`round_to_i32`] element by element, and so does every row on targets without SIMD units
/// (microcontrollers: there the extra `f32` operations are library calls). Same results either
/// way.
#[inline(always)]
pub(crate) fn round_to_i32_each<const N: usize>(xs: &[f32; N], out: &mut [i32; N]) {
    let near = SIMD_UNITS
        && xs
            .iter()
            .fold(true, |all, x| all & (fabsf(*x) < NEAR_LIMIT));
    if near {
        round_to_i32_each_near(xs, out);
    } else {
        for (o, &x) in out.iter_mut().zip(xs) {
            *o = round_to_i32(x);
        }
    }
}

/// Below this magnitude (`2^22`) [`round_to_i32_each_near`] rounds like [`round_to_i32`].
pub(crate) const NEAR_LIMIT: f32 = 4_194_304.0;

/// [`round_to_i32_each`]'s vector rounding, for a caller that knows every `|x| < NEAR_LIMIT`
/// (then it is [`round_to_i32`] of each element; beyond, or for NaN, it is not).
#[inline(always)]
pub(crate) fn round_to_i32_each_near<const N: usize>(xs: &[f32; N], out: &mut [i32; N]) {
    const SHIFT: f32 = 12_582_912.0; // 1.5 * 2^23
    for (o, &x) in out.iter_mut().zip(xs) {
        let shifted = x + SHIFT;
        let nearest = (shifted.to_bits() as i32).wrapping_sub(SHIFT.to_bits() as i32);
        let d = x - (shifted - SHIFT);
        let up = (d == 0.5) & (x > 0.0);
        let down = (d == -0.5) & (x < 0.0);
        *o = nearest + i32::from(up) - i32::from(down);
    }
}

/// `2^k` for `k` in `-126..=127`, from its bits (exact).
#[inline]
const fn pow2i(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `log2(e)` rounded to `f32` (0x3fb8aa3b).
const LOG2E: f32 = f32::from_bits(0x3fb8_aa3b);
/// `ln 2` split in two: `LN2_HI` has 15 significant bits, so `k * LN2_HI` is exact for
/// `|k| <= 256`; `LN2_HI + LN2_LO` is `ln 2` to about 2^-45.
const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
/// Above this `e^x` overflows `f32` (`ln(f32::MAX)` rounded down).
const EXP_OVERFLOW: f32 = 88.722_83;
/// Below this `e^x` rounds to 0 (`ln` of half the smallest subnormal).
const EXP_UNDERFLOW: f32 = -103.972_08;

/// `e^x` in `f32` (within 1.5 ulp; `const`, so fixed tables of weights are computed by the compiler
/// with the very operations the run time and the kernels use).
///
/// Definition (the kernels' `surf_exp` is this, line by line): NaN gives NaN, `x > 88.72283`
/// gives `+inf`, `x < -103.97208` gives 0. Otherwise `t = x * LOG2E`,
/// `k = (t + (t < 0 ? -0.5 : 0.5)) as i32` (truncation), `r = (x - k * LN2_HI) - k * LN2_LO`
/// (`k` converted to `f32` exactly), `p` = the degree-7 Taylor polynomial of `e^r` in Horner
/// form `1 + r (1 + r (1/2 + r (1/6 + r (1/24 + r (1/120 + r (1/720 + r / 5040))))))`
/// (coefficients rounded to `f32`), and the result `p * 2^k` by exact powers of two:
/// `p * 2^k` for `-126 <= k <= 127`, `(p * 2^(k - 1)) * 2` for `k = 128`,
/// `(p * 2^(k + 64)) * 2^-64` for `k < -126` (one rounding into the subnormals).
pub(crate) const fn expf(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > EXP_OVERFLOW {
        return f32::INFINITY;
    }
    if x < EXP_UNDERFLOW {
        return 0.0;
    }
    let t = x * LOG2E;
    let k = (t + if t < 0.0 { -0.5 } else { 0.5 }) as i32;
    let kf = k as f32;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    // |r| <= ln(2)/2 + a little: the degree-7 Taylor remainder is below 2^-27 relative.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    if k > 127 {
        (p * pow2i(k - 1)) * 2.0
    } else if k < -126 {
        (p * pow2i(k + 64)) * pow2i(-64)
    } else {
        p * pow2i(k)
    }
}

/// `pi / 2` split in three for the argument reduction of [`sincosf`]: `PIO2_1` has 8
/// significant bits and `PIO2_2` 12, so `k * PIO2_1` and `k * PIO2_2` are exact for
/// `|k| < 2^12`; the sum of the three is `pi / 2` to about 2^-49.
const PIO2_1: f32 = f32::from_bits(0x3fc9_0000);
const PIO2_2: f32 = f32::from_bits(0x39fd_b000);
const PIO2_3: f32 = f32::from_bits(0xb33b_bd2e);
/// `2 / pi` rounded to `f32`.
const TWO_OVER_PI: f32 = f32::from_bits(0x3f22_f983);
/// Beyond this `|x|` [`sincosf`] first takes the exact `fmod(x, 2 pi as f32)`.
const SINCOS_REDUCE: f32 = 4096.0;
/// `2 pi` rounded to `f32` (`core::f32::consts::TAU`).
const TAU_F32: f32 = f32::from_bits(0x40c9_0fdb);

/// `(sin x, cos x)` in `f32` (within 2 ulp for `|x| <= 4096`; beyond that `x` is first replaced by
/// the exact remainder `fmod(x, TAU as f32)`, which is deterministic but drifts from the true
/// angle by `x * 1.7e-7 / TAU` radians). Non-finite `x` gives `(NaN, NaN)`.
///
/// Definition (the kernels' `surf_sincos`): `t = x * TWO_OVER_PI`,
/// `k = (t + (t < 0 ? -0.5 : 0.5)) as i32`, `r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3`,
/// `z = r * r`, `s = ((S3 * z + S2) * z + S1) * z * r + r`,
/// `c = ((C3 * z + C2) * z + C1) * z * z - 0.5 * z + 1` (Cephes' `sinf`/`cosf` coefficients),
/// then by the quadrant `k & 3`: `(s, c)`, `(c, -s)`, `(-s, -c)`, `(-c, s)`.
pub(crate) fn sincosf(x: f32) -> (f32, f32) {
    if !x.is_finite() {
        return (f32::NAN, f32::NAN);
    }
    let x = if fabsf(x) > SINCOS_REDUCE {
        libm::fmodf(x, TAU_F32)
    } else {
        x
    };
    let t = x * TWO_OVER_PI;
    let k = (t + if t < 0.0 { -0.5 } else { 0.5 }) as i32;
    let kf = k as f32;
    let r = ((x - kf * PIO2_1) - kf * PIO2_2) - kf * PIO2_3;
    let z = r * r;
    let s = ((-1.951_529_6e-4 * z + 8.332_161e-3) * z - 1.666_665_5e-1) * z * r + r;
    let c = ((2.443_315_7e-5 * z - 1.388_731_6e-3) * z + 4.166_664_6e-2) * z * z - 0.5 * z + 1.0;
    match k & 3 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// `pi`, `pi / 2` and `pi / 4` as `f32` plus the `f32` of the remainder (for `a - b` steps that
/// keep the remainder).
const PI_HI: f32 = f32::from_bits(0x4049_0fdb);
const PI_LO: f32 = f32::from_bits(0xb3bb_bd2e);
const PIO2_HI: f32 = f32::from_bits(0x3fc9_0fdb);
const PIO2_LO: f32 = f32::from_bits(0xb33b_bd2e);
const PIO4_HI: f32 = f32::from_bits(0x3f49_0fdb);
const PIO4_LO: f32 = f32::from_bits(0xb2bb_bd2e);
/// `tan(pi / 8)` (rounded to `f32`).
const TAN_PI_8: f32 = 0.414_213_57;

/// `atan2(y, x)` in `f32`, in `[-pi, pi]` (within 3 ulp), with C's special values for zeros,
/// infinities and NaN.
///
/// Definition (the kernels' `surf_atan2`): NaN if either is NaN; for `x == y == 0`, `y` (a signed
/// zero) when `x` is `+0`, else `pi` with the sign of `y`. Otherwise with `ax = |x|`, `ay = |y|`,
/// `swap = ay > ax`, `(n, d) = swap ? (ax, ay) : (ay, ax)`: `t = n / d` (`t = 1` when both are
/// infinite, `0` when only `d` is), then `atan(t)` on `[0, 1]`: when `t > tan(pi/8)`,
/// `u = (t - 1) / (t + 1)` and `base = pi/4`, else `u = t` and no base; `z = u * u`,
/// `p = (((A4 * z + A3) * z + A2) * z + A1) * z * u + u` (Cephes' `atanf` coefficients),
/// `a = PIO4_HI + (p + PIO4_LO)` or `a = p`; then `a = (PIO2_HI - a) + PIO2_LO` if `swap`,
/// `a = (PI_HI - a) + PI_LO` if `x < 0`, and `-a` if `y`'s sign bit is set.
pub(crate) fn atan2f(y: f32, x: f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        return x + y;
    }
    let (ax, ay) = (fabsf(x), fabsf(y));
    if ax == 0.0 && ay == 0.0 {
        return if x.is_sign_negative() {
            if y.is_sign_negative() { -PI_HI } else { PI_HI }
        } else {
            y
        };
    }
    let swap = ay > ax;
    let (n, d) = if swap { (ax, ay) } else { (ay, ax) };
    let t = if d == f32::INFINITY {
        if n == f32::INFINITY { 1.0 } else { 0.0 }
    } else {
        n / d
    };
    let big = t > TAN_PI_8;
    let u = if big { (t - 1.0) / (t + 1.0) } else { t };
    let z = u * u;
    let p =
        (((8.053_744_5e-2 * z - 1.387_768_6e-1) * z + 1.997_771_1e-1) * z - 3.333_295e-1) * z * u
            + u;
    let mut a = if big { PIO4_HI + (p + PIO4_LO) } else { p };
    if swap {
        a = (PIO2_HI - a) + PIO2_LO;
    }
    if x < 0.0 {
        a = (PI_HI - a) + PI_LO;
    }
    if y.is_sign_negative() { -a } else { a }
}

/// [`atan2f`] for `y`, `x` finite and not both zero, with every branch turned into a select:
/// the same operations on the same values as [`atan2f`]'s path for such arguments (so the same
/// bits), written so that a loop over many arguments vectorises.
#[inline(always)]
pub(crate) fn atan2f_regular(y: f32, x: f32) -> f32 {
    let (ax, ay) = (fabsf(x), fabsf(y));
    let swap = ay > ax;
    let n = if swap { ax } else { ay };
    let d = if swap { ay } else { ax };
    let t = n / d;
    let big = t > TAN_PI_8;
    let folded = (t - 1.0) / (t + 1.0);
    let u = if big { folded } else { t };
    let z = u * u;
    let p =
        (((8.053_744_5e-2 * z - 1.387_768_6e-1) * z + 1.997_771_1e-1) * z - 3.333_295e-1) * z * u
            + u;
    let shifted = PIO4_HI + (p + PIO4_LO);
    let a = if big { shifted } else { p };
    let reflected = (PIO2_HI - a) + PIO2_LO;
    let a = if swap { reflected } else { a };
    let mirrored = (PI_HI - a) + PI_LO;
    let a = if x < 0.0 { mirrored } else { a };
    if y.is_sign_negative() { -a } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_conversion_rounds_like_the_i64_conversion() {
        let mut values = std::vec![i64::MIN, i64::MAX, i64::MIN + 1, 0, 1, -1];
        for k in 0..63 {
            let p = 1i64 << k;
            for d in [-3, -2, -1, 0, 1, 2, 3] {
                values.extend([p + d, -(p + d), p + (p >> 24) + d, p + (p >> 25) + d]);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Every magnitude, not only the top one.
            values.push((state as i64) >> (state % 64));
        }
        for v in values {
            assert_eq!(i64_to_f32_sticky(v).to_bits(), (v as f32).to_bits(), "{v}");
            assert_eq!(i64_to_f32(v).to_bits(), (v as f32).to_bits(), "{v}");
        }
    }
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// Error of `got` in units of the last place of the `f32` nearest to `exact`.
    fn ulps(got: f32, exact: f64) -> f64 {
        let e = exact as f32;
        if got == e {
            return 0.0;
        }
        let ulp = f64::from(f32::from_bits(e.abs().to_bits() + 1) - e.abs())
            .max(f64::from(f32::from_bits(1)));
        (f64::from(got) - exact).abs() / ulp
    }

    #[test]
    fn products_by_halves_are_the_i64_products() {
        let edges = [
            i32::MIN,
            i32::MIN + 1,
            -65537,
            -65536,
            -65535,
            -32769,
            -32768,
            -1,
            0,
            1,
        ];
        let edges = edges.iter().flat_map(|&v| [v, v.wrapping_neg(), !v]);
        let mut values: std::vec::Vec<i32> = edges.collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        values.extend((0..300).map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as i32
        }));
        for &a in &values {
            for &b in &values {
                let expected = i64::from(a) * i64::from(b);
                assert_eq!(mul_wide_by_halves(a, b), expected, "{a} {b}");
                assert_eq!(mul_wide(a, b), expected, "{a} {b}");
            }
        }
    }

    #[test]
    fn expf_is_within_one_and_a_half_ulp_and_has_the_special_values() {
        let mut worst = 0f64;
        let mut check = |x: f32| {
            let u = ulps(expf(x), f64::from(x).exp());
            assert!(
                u <= 1.5,
                "exp({x:e}): {} vs {}: {u} ulp",
                expf(x),
                f64::from(x).exp()
            );
            worst = worst.max(u);
        };
        let mut x = -103.97f32;
        while x < 88.72 {
            check(x);
            x += 1.37e-3;
        }
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..200_000 {
            check(rng.gen_range(-20.0f32..1.0));
        }
        for x in [
            0.0, -0.0, 1e-30, -1e-30, 88.72283, -87.33, -87.34, -100.0, -103.97,
        ] {
            check(x);
        }
        std::println!("expf: worst {worst} ulp");
        assert_eq!(expf(0.0), 1.0);
        assert_eq!(expf(89.0), f32::INFINITY);
        assert_eq!(expf(-104.0), 0.0);
        assert_eq!(expf(f32::NEG_INFINITY), 0.0);
        assert!(expf(f32::NAN).is_nan());
    }

    #[test]
    fn expf_in_const_context_equals_the_run_time() {
        const E: f32 = expf(-0.72);
        let x = core::hint::black_box(-0.72f32);
        assert_eq!(E.to_bits(), expf(x).to_bits());
    }

    #[test]
    fn sincosf_is_within_two_ulp() {
        let mut worst = 0f64;
        let mut check = |x: f32| {
            let (s, c) = sincosf(x);
            let (es, ec) = f64::from(x).sin_cos();
            // Near a zero of sin or cos the relative error of the reduction dominates: there the
            // bound is absolute.
            for (got, exact) in [(s, es), (c, ec)] {
                let u = ulps(got, exact);
                let abs = (f64::from(got) - exact).abs();
                assert!(
                    u <= 2.0 || abs < 6e-8,
                    "sincos({x:e}): {got} vs {exact}: {u} ulp"
                );
                if exact.abs() > 1e-3 {
                    worst = worst.max(u);
                }
            }
        };
        let mut x = 0f32;
        while x < core::f32::consts::TAU {
            check(x);
            check(-x);
            x += 1.1e-5;
        }
        let mut rng = StdRng::seed_from_u64(12);
        for _ in 0..200_000 {
            check(rng.gen_range(-4096.0f32..4096.0));
        }
        std::println!("sincosf: worst {worst} ulp (|value| > 1e-3)");
        assert_eq!(sincosf(0.0), (0.0, 1.0));
        let (s, c) = sincosf(1e6);
        assert!(s.abs() <= 1.0 && c.abs() <= 1.0 && (s * s + c * c - 1.0).abs() < 1e-6);
        assert!(sincosf(f32::INFINITY).0.is_nan() && sincosf(f32::NAN).1.is_nan());
    }

    #[test]
    fn the_regular_atan2f_gives_atan2f_bits() {
        let mut rng = StdRng::seed_from_u64(17);
        let check = |y: f32, x: f32| {
            if x.is_finite() && y.is_finite() && (x != 0.0 || y != 0.0) {
                assert_eq!(
                    atan2f_regular(y, x).to_bits(),
                    atan2f(y, x).to_bits(),
                    "atan2({y:e}, {x:e})"
                );
            }
        };
        for _ in 0..200_000 {
            check(rng.gen_range(-1.0f32..1.0), rng.gen_range(-1.0f32..1.0));
            let (a, b) = (rng.gen_range(-3000i32..3000), rng.gen_range(-3000i32..3000));
            check(a as f32 * 0.0123, b as f32 * 0.0123);
        }
        // Axes, diagonals, signed zeros and extremes.
        for v in [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            f32::MIN_POSITIVE,
            1e-40,
            f32::MAX,
            -f32::MAX,
        ] {
            for w in [0.0f32, -0.0, 1.0, -1.0, 3.0, -2.5, 1e-40, f32::MAX] {
                check(v, w);
            }
        }
    }

    #[test]
    fn atan2f_is_within_three_ulp_and_has_the_special_values() {
        let mut worst = 0f64;
        let mut check = |y: f32, x: f32| {
            let got = atan2f(y, x);
            let exact = f64::from(y).atan2(f64::from(x));
            let u = ulps(got, exact);
            assert!(u <= 3.0, "atan2({y:e}, {x:e}): {got} vs {exact}: {u} ulp");
            worst = worst.max(u);
        };
        let mut rng = StdRng::seed_from_u64(13);
        for _ in 0..400_000 {
            check(rng.gen_range(-1.0f32..1.0), rng.gen_range(-1.0f32..1.0));
        }
        for _ in 0..100_000 {
            // Integer-valued Haar sums times a weight, as the orientation sees them.
            let (a, b) = (rng.gen_range(-3000i32..3000), rng.gen_range(-3000i32..3000));
            check(a as f32 * 0.0123, b as f32 * 0.0123);
        }
        let mut t = 0f32;
        while t < core::f32::consts::TAU {
            check(t.sin(), t.cos());
            t += 1e-4;
        }
        std::println!("atan2f: worst {worst} ulp");
        let pi = core::f32::consts::PI;
        assert_eq!(atan2f(0.0, 0.0).to_bits(), 0f32.to_bits());
        assert_eq!(atan2f(-0.0, 0.0).to_bits(), (-0f32).to_bits());
        assert_eq!(atan2f(0.0, -0.0), pi);
        assert_eq!(atan2f(-0.0, -1.0), -pi);
        assert_eq!(atan2f(1.0, 0.0), pi / 2.0);
        assert_eq!(atan2f(-1.0, -0.0), -pi / 2.0);
        assert_eq!(atan2f(1.0, 1.0), pi / 4.0);
        assert_eq!(atan2f(f32::INFINITY, f32::INFINITY), pi / 4.0);
        assert_eq!(atan2f(1.0, f32::NEG_INFINITY), pi);
        assert!(atan2f(f32::NAN, 1.0).is_nan() && atan2f(1.0, f32::NAN).is_nan());
    }
}
