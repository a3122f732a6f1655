//! The fixed-point arithmetic of the detector ([`FixedPoint`](super::FixedPoint)): Hessian
//! responses in Q29 from the exact integer determinant, and the NMS decision and Newton step in
//! integers.
//!
//! - Response: `det = 100 Dxx Dyy - 81 Dxy^2` is exact (`i64`); the response
//!   `det / (100 L^4 255^2)` is formed as `((det >> pre) * mult) >> post` with per-filter
//!   constants computed at compile time ([`FixedNorm`]): `det >> pre` keeps 31 bits of the
//!   largest possible determinant of that filter, `mult < 2^30` is the normalisation's reciprocal.
//!   Near the default threshold this keeps about 18 significant bits, for every filter size.
//! - Newton step: the 3x3x3 cube is shifted right until its largest magnitude has 11 bits (the
//!   offset does not depend on a common scale of the cube), then the adjugate and determinant of
//!   `4 H` are exact `i64`, and the offsets are Q16 quotients.

use super::config::{INTERVALS, MAX_OCTAVES, SurfConfig};
use super::decide::{Refinement, SampleSite, strict_maximum};
use super::geometry::{filter_size, grid_size, sample_step};
use super::response::Filter;
use crate::fixed::arith::{
    POS_FRAC, Position, RESPONSE_FRAC, Response, f32_from_fixed, fixed_from_f32, position_to_f32,
};
use crate::integral::IntegralImage;
use crate::keypoint::Keypoint;
use crate::math;

/// A fixed-point response cube: `cube[ds][dy][dx]` as in [`super::ResponseCube`].
pub(crate) type FixedCube = [[[Response; 3]; 3]; 3];

/// Per-filter constants of the fixed-point response (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FixedNorm {
    /// Right shift of the determinant so that it fits 31 bits.
    pub(crate) pre: u32,
    /// Reciprocal of the normalisation, below `2^30`.
    pub(crate) mult: i64,
    /// Right shift after the multiplication.
    pub(crate) post: u32,
}

/// The [`FixedNorm`] of filter size `size` (`9..=771`), evaluated by the compiler for the
/// detector's filters.
pub(crate) const fn fixed_norm(size: u32) -> FixedNorm {
    let l = (size / 3) as u128;
    // |Dxx|, |Dyy| <= 3 * 255 (2l - 1) l, |Dxy| <= 2 * 255 l^2 (ARCHITECTURE.md's boxes).
    let a = 765 * (2 * l - 1) * l;
    let b = 510 * l * l;
    let bound = 100 * a * a + 81 * b * b;
    let bits = 128 - bound.leading_zeros();
    let pre = bits.saturating_sub(31);
    let size = size as u128;
    let denominator = 6_502_500 * size * size * size * size; // 100 * 255^2 * L^4
    let dbits = 128 - denominator.leading_zeros();
    let mult = (1u128 << (RESPONSE_FRAC + dbits)) / denominator;
    FixedNorm {
        pre,
        mult: mult as i64,
        post: dbits - pre,
    }
}

/// [`fixed_norm`] of every filter, `FIXED_NORMS[octave][interval]`.
pub(crate) const FIXED_NORMS: [[FixedNorm; INTERVALS as usize]; MAX_OCTAVES as usize] = {
    let zero = FixedNorm {
        pre: 0,
        mult: 0,
        post: 0,
    };
    let mut t = [[zero; INTERVALS as usize]; MAX_OCTAVES as usize];
    let mut o = 0;
    while o < MAX_OCTAVES as usize {
        let mut i = 0;
        while i < INTERVALS as usize {
            t[o][i] = fixed_norm(3 * ((i as u32 + 1) * (2 << o) + 1));
            i += 1;
        }
        o += 1;
    }
    t
};

/// The fixed-point response and Laplacian sign of `filter` at pixel `(row, col)`.
#[inline(always)]
pub(crate) fn response_fixed(
    filter: &Filter,
    norm: &FixedNorm,
    ii: &IntegralImage,
    row: i32,
    col: i32,
) -> (Response, i8) {
    let (det, laplacian) = filter.det(ii, row, col);
    // The integer `(det >> pre) * mult >> post` is the response's Q29 bits (the norm's
    // exponent varies per filter, so it is no fixed type of its own). `det >> pre` keeps 31
    // bits and `mult <= 2^30`: one 32x32-bit product.
    let value = math::mul_wide((det >> norm.pre) as i32, norm.mult as i32) >> norm.post;
    (
        Response::from_bits(value.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32),
        laplacian,
    )
}

/// The fixed-point response (Q29 bits) and Laplacian sign of filter `interval` of `octave` at
/// pixel `(row, col)` (boxes clipped to the image); `(0, 1)` for an octave or interval out of
/// range.
#[cfg(test)]
pub(crate) fn response_fixed_at(
    ii: &IntegralImage,
    octave: u32,
    interval: u32,
    row: i32,
    col: i32,
) -> (i32, i8) {
    let Some(norm) = FIXED_NORMS
        .get(octave as usize)
        .and_then(|r| r.get(interval as usize))
    else {
        return (0, 1);
    };
    let filter = Filter::octave(octave, interval, ii.width() + 1);
    let (response, laplacian) = response_fixed(&filter, norm, ii, row, col);
    (response.to_bits(), laplacian)
}

/// The threshold of `config` as a [`Response`] (integer conversion of the `f32`'s bits,
/// clamped to `[0, Response::MAX]`).
pub(crate) fn fixed_threshold(config: &SurfConfig) -> Response {
    let bits = fixed_from_f32(config.threshold, RESPONSE_FRAC).clamp(0, i64::from(i32::MAX));
    Response::from_bits(bits as i32)
}

/// The fixed-point detection decision: threshold, strict maximum over the 26 neighbours, then
/// the integer Newton step (module docs). The same rules as `refine_candidate`, on Q29
/// responses; `threshold` is [`fixed_threshold`].
pub(crate) fn refine_fixed(
    config: &SurfConfig,
    threshold: Response,
    site: SampleSite,
    cube: &FixedCube,
    laplacian: i8,
) -> Refinement {
    let v = cube[1][1][1];
    if v < threshold {
        return Refinement::BelowThreshold;
    }
    if !strict_maximum(cube) {
        return Refinement::NotMaximum;
    }
    let Some((ox, oy, os)) = newton_fixed(cube) else {
        return Refinement::Unstable;
    };
    let half = Position::from_bits(1 << (POS_FRAC - 1));
    if !(ox.abs() < half && oy.abs() < half && os.abs() < half) {
        return Refinement::Unstable;
    }
    let (o, i) = (u32::from(site.octave), u32::from(site.interval));
    let step = i64::from(sample_step(config, o));
    let size = i64::from(filter_size(o, i));
    let size_step = size - i64::from(filter_size(o, i.saturating_sub(1)));
    let x = (Position::from_num(site.sx) + ox) * step;
    let y = (Position::from_num(site.sy) + oy) * step;
    // 0.1333 (L + os dL), with 0.1333 as the exact fraction 1333 / 10000.
    let scale = (Position::from_num(size) + os * size_step) * 1333 / 10_000;
    Refinement::Keypoint(Keypoint {
        x: position_to_f32(x),
        y: position_to_f32(y),
        scale: position_to_f32(scale),
        orientation: f32::from_bits(0),
        response: f32_from_fixed(i64::from(v.to_bits()), RESPONSE_FRAC),
        laplacian,
        octave: site.octave,
        interval: site.interval,
        sample_x: site.sx,
        sample_y: site.sy,
    })
}

/// `-H^-1 d` of the cube (offsets in samples and intervals), or `None` when `H` is singular.
fn newton_fixed(c: &FixedCube) -> Option<(Position, Position, Position)> {
    // The offset does not depend on a common scale of the cube: the responses' bits as
    // integers, shifted down to 11 significant bits.
    let largest = c
        .iter()
        .flatten()
        .flatten()
        .map(|v| i64::from(v.to_bits()).unsigned_abs())
        .max()
        .unwrap_or(0);
    let shift = (64 - largest.leading_zeros()).saturating_sub(11);
    let g = |s: usize, y: usize, x: usize| i64::from(c[s][y][x].to_bits()) >> shift;
    let v = g(1, 1, 1);
    // Twice the gradient and four times the Hessian: all exact integers.
    let dx = g(1, 1, 2) - g(1, 1, 0);
    let dy = g(1, 2, 1) - g(1, 0, 1);
    let ds = g(2, 1, 1) - g(0, 1, 1);
    let hxx = 4 * (g(1, 1, 2) + g(1, 1, 0) - 2 * v);
    let hyy = 4 * (g(1, 2, 1) + g(1, 0, 1) - 2 * v);
    let hss = 4 * (g(2, 1, 1) + g(0, 1, 1) - 2 * v);
    let hxy = g(1, 2, 2) - g(1, 2, 0) - g(1, 0, 2) + g(1, 0, 0);
    let hxs = g(2, 1, 2) - g(2, 1, 0) - g(0, 1, 2) + g(0, 1, 0);
    let hys = g(2, 2, 1) - g(2, 0, 1) - g(0, 2, 1) + g(0, 0, 1);
    let a00 = hyy * hss - hys * hys;
    let a01 = hxs * hys - hxy * hss;
    let a02 = hxy * hys - hxs * hyy;
    let a11 = hxx * hss - hxs * hxs;
    let a12 = hxy * hxs - hxx * hys;
    let a22 = hxx * hyy - hxy * hxy;
    let det = hxx * a00 + hxy * a01 + hxs * a02;
    if det == 0 {
        return None;
    }
    // H = (4H) / 4 and d = (2d) / 2, so -H^-1 d = -2 adj(4H) (2d) / det(4H): the integer
    // numerator as a position, divided by the integer determinant.
    let offset = |a: i64, b: i64, c: i64| -Position::from_num(2 * (a * dx + b * dy + c * ds)) / det;
    Some((
        offset(a00, a01, a02),
        offset(a01, a11, a12),
        offset(a02, a12, a22),
    ))
}

/// Fills the four Q29 response maps of `octave`'s grid rows `rows` (clamped to the grid) into
/// `maps`, which holds those rows only (grid-major, 4 words per sample, as the `f32` maps), for
/// [`super::FixedPoint`] and the banded path.
pub(crate) fn fill_fixed(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    maps: &mut [u32],
) {
    let step = sample_step(config, octave);
    let (gw, gh) = grid_size(ii.width(), ii.height(), step);
    let stride = ii.width() + 1;
    let filters = [0, 1, 2, 3].map(|i| Filter::octave(octave, i, stride));
    let norms = FIXED_NORMS
        .get(octave as usize)
        .copied()
        .unwrap_or([FIXED_NORMS[0][0]; 4]);
    let step = step as i32;
    let rows = rows.start.min(gh)..rows.end.min(gh);
    for (sy, row) in rows.zip(maps.chunks_exact_mut(gw * 4)) {
        for (sx, words) in row.chunks_exact_mut(4).enumerate() {
            let (r, c) = (sy as i32 * step, sx as i32 * step);
            for ((word, filter), norm) in words.iter_mut().zip(&filters).zip(&norms) {
                *word = response_fixed(filter, norm, ii, r, c).0.to_bits() as u32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surf::response::{RESPONSE_NORMS, response_at};

    #[test]
    fn fixed_responses_match_the_f32_definition() {
        // A deterministic textured image: every filter sees positive and negative responses.
        let (w, h) = (120usize, 100usize);
        let pixels: alloc_free::Pixels = alloc_free::pixels(w, h);
        let image = crate::GrayImage::new(&pixels.0[..w * h], w, h).unwrap();
        let mut table = [0u32; 121 * 101];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        for o in 0..2u32 {
            for i in 0..4u32 {
                let size = filter_size(o, i);
                assert!(RESPONSE_NORMS[o as usize][i as usize] > 0.0);
                for r in (0..h as i32).step_by(7) {
                    for c in (0..w as i32).step_by(5) {
                        let (f, lap_f) = response_at(&ii, r, c, size);
                        let (q, lap_q) = response_fixed_at(&ii, o, i, r, c);
                        assert_eq!(lap_f, lap_q);
                        let q = f64::from(q) / f64::from(1u32 << RESPONSE_FRAC);
                        // Absolute error: a few units of Q29 plus f32's own rounding.
                        let err = (q - f64::from(f)).abs();
                        assert!(err <= 1e-8 + 1e-6 * f64::from(f).abs(), "{o} {i} {r} {c}");
                    }
                }
            }
        }
    }

    #[test]
    fn norms_fit_their_ranges() {
        for row in FIXED_NORMS.iter() {
            for n in row.iter() {
                assert!(n.mult > 1 << 29 && n.mult <= 1 << 30, "{n:?}");
                assert!(n.post > 0 && n.post < 64);
            }
        }
    }

    /// A fixed-size pixel buffer without an allocator (the core's tests run with std, but this
    /// keeps the helper usable from no_std doc contexts too).
    mod alloc_free {
        pub struct Pixels(pub [u8; 120 * 100]);
        pub fn pixels(w: usize, h: usize) -> Pixels {
            let mut p = [0u8; 120 * 100];
            let mut state = 12345u32;
            for y in 0..h {
                for x in 0..w {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    let blob = if ((x / 13) + (y / 11)) % 2 == 0 {
                        160
                    } else {
                        40
                    };
                    p[y * w + x] = (blob + (state >> 27) as i32) as u8;
                }
            }
            Pixels(p)
        }
    }
}
