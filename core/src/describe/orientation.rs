//! Orientation assignment (Bay et al. 2008, as OpenSURF `getOrientation`): the Haar responses
//! of size `4s` at the 109 sample points of radius 6, Gaussian-weighted, summed as exact
//! integers in 42 angle bins; the orientation is the angle of the longest sum of 7 adjacent bins.

use core::f32::consts::PI;

use crate::haar::{haar_pair, half_boxes};
use crate::integral::IntegralImage;
use crate::keypoint::Keypoint;
use crate::math;

/// `atan2(y, x)` mapped into `[0, 2 pi)`, with the crate's own [`math::atan2f`] (the kernels
/// port it operation by operation).
#[inline]
pub(super) fn angle(x: f32, y: f32) -> f32 {
    to_turn(math::atan2f(y, x))
}

/// An angle of `[-pi, pi]` mapped into `[0, 2 pi)` (branch-free: both values are computed).
#[inline(always)]
pub(super) fn to_turn(a: f32) -> f32 {
    let b = a + 2.0 * PI;
    // a tiny negative angle rounds up to 2 pi exactly
    let wrapped = if b >= 2.0 * PI { 0.0 } else { b };
    if a < 0.0 { wrapped } else { a }
}

/// Number of orientation angle bins, each `2 pi / 42` wide.
pub(super) const BINS: usize = 42;

/// Bins per orientation window: `7 (2 pi / 42) = pi / 3`. One window starts at every bin.
pub(super) const WINDOW_BINS: usize = 7;

/// `42 / (2 pi)` in `f32` (bits 0x40d5e77c, which `surf.cl` uses): a sample at angle `a` in
/// `[0, 2 pi)` falls into bin `min(i32(a * ORIENTATION_BIN_SCALE), 41)`.
pub const ORIENTATION_BIN_SCALE: f32 = BINS as f32 / (2.0 * PI);

/// Partial bin sums of the SIMD path (see [`assign_orientation`]).
pub(super) const PARTIALS: usize = 4;

/// The orientation samples' Gaussian (sigma 2.5) over `|i|, |j|` in `0..=6`, in units of
/// `2^-16` without its constant factor: `i32(expf(-(i^2 + j^2) / 12.5) * 65536 + 0.5)` with the
/// crate's [`math::expf`], evaluated by the compiler (the same `f32` operations as at run time;
/// `core/src/math.rs` tests that).
pub(super) const ORIENTATION_WEIGHTS: [[i32; 7]; 7] = {
    let mut g = [[0i32; 7]; 7];
    let mut i = 0;
    while i < 7 {
        let mut j = 0;
        while j < 7 {
            let e = math::expf(-((i * i + j * j) as f32) / (2.0 * 2.5 * 2.5));
            g[i][j] = (e * 65536.0 + 0.5) as i32;
            j += 1;
        }
        i += 1;
    }
    g
};

/// Number of orientation samples: the `(i, j)` with `i^2 + j^2 < 36`.
pub const ORIENTATION_SAMPLES: usize = 109;

/// The orientation samples `(i, j)`, `i^2 + j^2 < 36`, in OpenSURF's order (`i` outer, `j`
/// inner, both `-6..=6`), for the `f32` and the fixed-point paths and the OpenCL kernels (which
/// get them as a table).
pub const ORIENTATION_OFFSETS: [(i8, i8); ORIENTATION_SAMPLES] = {
    let mut offsets = [(0i8, 0i8); ORIENTATION_SAMPLES];
    let mut n = 0;
    let mut i = -6i32;
    while i <= 6 {
        let mut j = -6i32;
        while j <= 6 {
            if i * i + j * j < 36 {
                offsets[n] = (i as i8, j as i8);
                n += 1;
            }
            j += 1;
        }
        i += 1;
    }
    offsets
};

/// [`ORIENTATION_OFFSETS`] `(i, j)` with their Gaussian weights in units of `2^-16`,
/// `i32(expf(-(i^2 + j^2) / 12.5) * 65536 + 0.5)` (the crate's `expf`), evaluated by the
/// compiler; as `f32` (integers up to 65536, exact) because the OpenCL kernels get them in a
/// `float4` table.
pub const ORIENTATION_GRID: [(i8, i8, f32); ORIENTATION_SAMPLES] = {
    let mut grid = [(0i8, 0i8, 0f32); ORIENTATION_SAMPLES];
    let mut n = 0;
    while n < ORIENTATION_SAMPLES {
        let (i, j) = ORIENTATION_OFFSETS[n];
        grid[n] = (
            i,
            j,
            ORIENTATION_WEIGHTS[i.unsigned_abs() as usize][j.unsigned_abs() as usize] as f32,
        );
        n += 1;
    }
    grid
};

/// [`ORIENTATION_GRID`]'s weights as the integers the sums use.
pub(crate) const ORIENTATION_WEIGHT_BY_SAMPLE: [i64; ORIENTATION_SAMPLES] = {
    let mut weights = [0i64; ORIENTATION_SAMPLES];
    let mut n = 0;
    while n < ORIENTATION_SAMPLES {
        let (i, j) = ORIENTATION_OFFSETS[n];
        weights[n] =
            ORIENTATION_WEIGHTS[i.unsigned_abs() as usize][j.unsigned_abs() as usize] as i64;
        n += 1;
    }
    weights
};

/// The bin of a sample at angle `a` (in `[0, 2 pi)`; a NaN, which only a `(0, 0)` response
/// gives on the SIMD path and which adds nothing to any bin, lands in bin 0).
///
/// `min(i32(a * ORIENTATION_BIN_SCALE), 41)` clamped at 0, NaN to 0, for every `a`, computed
/// with operations that vectorise: Rust's saturating `f32 as i32` became four scalar
/// conversions with NaN and overflow fix-ups per vector (a sixth of the orientation's time).
/// The product is clamped to `[0, 41]` first (a NaN fails `>= 0`), so truncation is `floor`,
/// taken exactly: adding `2^23` rounds to the nearest integer `r` (the spacing of floats there
/// is 1), `r - 1` when that rounded up; the integer is then the low bits of `t + 2^23`.
#[inline(always)]
pub(super) fn orientation_bin(a: f32) -> usize {
    const TWO_23: f32 = 8_388_608.0;
    let v = a * ORIENTATION_BIN_SCALE;
    let v = if v >= 0.0 { v } else { 0.0 };
    let v = if v < (BINS - 1) as f32 {
        v
    } else {
        (BINS - 1) as f32
    };
    let nearest = (v + TWO_23) - TWO_23;
    let floor = if nearest > v { nearest - 1.0 } else { nearest };
    ((floor + TWO_23).to_bits() - TWO_23.to_bits()) as usize
}

/// Assigns `kp.orientation` (radians in `[0, 2 pi)`) from Haar responses around the keypoint
/// (`docs/ARCHITECTURE.md`, orientation).
///
/// Each sample's weighted integer responses go to the bin of its angle; each of the 42 windows
/// is 7 consecutive bins (`pi / 3`), and the orientation is the angle of the longest window
/// sum. The sums are exact integers, so the order of the additions cannot change a bit: the
/// SIMD path adds consecutive samples into four partial sums (no chain of dependent additions
/// to one bin), microcontrollers add each sample as it is computed (no arrays on the stack).
// Not inlined: inside `describe_all` its locals would be added to `describe`'s in one frame.
#[inline(never)]
pub fn assign_orientation(ii: &IntegralImage, kp: &mut Keypoint) {
    assign_orientation_inlined(ii, kp);
}

/// The body of [`assign_orientation`], inlined where it is called (see [`describe_all_with_maps`]).
#[inline(always)]
pub(super) fn assign_orientation_inlined(ii: &IntegralImage, kp: &mut Keypoint) {
    let s = math::roundf(kp.scale) as i32;
    let r = math::roundf(kp.y) as i32;
    let c = math::roundf(kp.x) as i32;
    let mut bin_x = [0i64; BINS];
    let mut bin_y = [0i64; BINS];
    if !orientation_bins_from_lattice(ii, r, c, s, &mut bin_x, &mut bin_y) {
        orientation_bins_per_sample(ii, r, c, s, &mut bin_x, &mut bin_y);
    }
    // Window k is bins k..k+7 (mod 42): a sliding sum, exact in integers. The first window of
    // largest length (none when every length is 0), then its angle: one `atan2`.
    let (mut sum_x, mut sum_y) = (0i64, 0i64);
    for b in 0..WINDOW_BINS {
        sum_x += bin_x[b];
        sum_y += bin_y[b];
    }
    let mut best = 0f32;
    let mut winner = (0f32, 0f32);
    for k in 0..BINS {
        let (x, y) = (math::i64_to_f32(sum_x), math::i64_to_f32(sum_y));
        let len = x * x + y * y;
        if len > best {
            best = len;
            winner = (x, y);
        }
        let (leaving, entering) = (k, (k + WINDOW_BINS) % BINS);
        sum_x += bin_x[entering] - bin_x[leaving];
        sum_y += bin_y[entering] - bin_y[leaving];
    }
    kp.orientation = if best > 0.0 {
        angle(winner.0, winner.1)
    } else {
        0.0
    };
}

/// The bin sums of [`assign_orientation`]'s samples, added to `bin_x` and `bin_y`, one sample
/// at a time through [`haar_pair`] (any footprint, clipped at the image's edges).
#[inline(always)]
pub(super) fn orientation_bins_per_sample(
    ii: &IntegralImage,
    r: i32,
    c: i32,
    s: i32,
    bin_x: &mut [i64; BINS],
    bin_y: &mut [i64; BINS],
) {
    for (&(i, j, _), &g) in ORIENTATION_GRID.iter().zip(&ORIENTATION_WEIGHT_BY_SAMPLE) {
        let (i, j) = (i32::from(i), i32::from(j));
        let (hx, hy) = haar_pair(ii, r + j * s, c + i * s, 4 * s);
        let b = orientation_bin(angle(math::i64_to_f32(hx), math::i64_to_f32(hy)));
        bin_x[b] += g * hx;
        bin_y[b] += g * hy;
    }
}

/// Table rows (and columns) of the orientation samples' corners: offsets `-8 s ..= 8 s` in
/// steps of `s` from the keypoint.
pub(super) const LATTICE: usize = 17;

/// Rows (and columns) of the square of sample positions `-6..=6` that holds the disc.
pub(super) const SQUARE: usize = 13;

/// [`SQUARE`] rounded up to whole vectors of 4, 8 or 16 lanes.
pub(super) const LATTICE_LANES: usize = 16;

/// Largest keypoint step `s` whose orientation samples take the lattice path: a half box of
/// `4 s x 2 s` pixels then sums to less than `2^31` (`255 * 8 * 1024^2`).
pub(super) const MAX_LATTICE_STEP: i32 = 1024;

/// The bin sums of [`assign_orientation`]'s samples, added to `bin_x` and `bin_y` (all zero on
/// entry), when every footprint lies inside the image and the target has SIMD units (returns
/// `false`, and leaves the bins alone, otherwise, or for a step above [`MAX_LATTICE_STEP`]).
/// The samples sit at `(r + j s, c + i s)` with boxes of size `4 s`, so all their table corners
/// lie on one lattice of `17 x 17` rows and columns `r + m s`, `c + n s` (`m, n` in `-8..=8`):
/// read once, that is 289 table reads instead of 872. The Haar pairs of the whole 13 x 13
/// square of positions are then computed a row at a time as vectors (169 instead of 109, but
/// without a scalar gather of eight corners per sample: 10% less time for the orientation); the
/// same wrapping `u32` sums as [`haar_pair`] and, with every half below `2^31`, the same
/// integers. The disc's angles are computed in one branch-free loop that vectorises, and its
/// samples are added to [`PARTIALS`] partial bin arrays in turn.
#[inline(always)]
pub(super) fn orientation_bins_from_lattice(
    ii: &IntegralImage,
    r: i32,
    c: i32,
    s: i32,
    bin_x: &mut [i64; BINS],
    bin_y: &mut [i64; BINS],
) -> bool {
    // Microcontrollers add each sample as it comes: the lattice and the arrays below are 4 KB
    // of stack, and there the time goes to the arithmetic, not to table reads.
    if !math::SIMD_UNITS {
        return false;
    }
    let reach = 8 * i64::from(s);
    let (r, c) = (i64::from(r), i64::from(c));
    let (w, h) = (ii.width() as i64, ii.height() as i64);
    // Above MAX_LATTICE_STEP a half box (`4 s x 2 s` pixels of at most 255) may reach 2^31,
    // and the `i32` differences below would no longer be exact.
    if !(1..=MAX_LATTICE_STEP).contains(&s)
        || r - reach < 0
        || c - reach < 0
        || r + reach > h
        || c + reach > w
    {
        return false;
    }
    let t = ii.table();
    let stride = w as usize + 1;
    let step = s as usize;
    let (top, left) = ((r - reach) as usize, (c - reach) as usize);
    // Rows padded to `LATTICE_LANES + 4` columns (zeros), so that every row of responses below
    // is a whole number of vectors; the padding's responses are never read.
    let mut lattice = [[0u32; LATTICE_LANES + 4]; LATTICE];
    for (m, row) in lattice.iter_mut().enumerate() {
        let base = (top + m * step) * stride + left;
        for (n, v) in row[..LATTICE].iter_mut().enumerate() {
            *v = t[base + n * step];
        }
    }
    // The Haar pair of every `(i, j)` of the 13 x 13 square around the keypoint, a row of the
    // square at a time: sample `(i, j)` has its centre at lattice `(j + 8, i + 8)` and half-size
    // `2 s`, so for a fixed `j` its corners are contiguous runs of three lattice rows, and the
    // row's half boxes are vector arithmetic. The same wrapping `u32` sums as [`haar_pair`];
    // each half is below `2^31` here, so its `i32` difference is the `i64` one.
    let mut square_x = [[0i32; LATTICE_LANES]; SQUARE];
    let mut square_y = [[0i32; LATTICE_LANES]; SQUARE];
    for (row, (out_x, out_y)) in square_x.iter_mut().zip(square_y.iter_mut()).enumerate() {
        let (above, centre, below) = (&lattice[row], &lattice[row + 2], &lattice[row + 4]);
        for k in 0..LATTICE_LANES {
            let [right, left, lower, upper] = half_boxes([
                above[k],
                above[k + 2],
                above[k + 4],
                centre[k],
                centre[k + 4],
                below[k],
                below[k + 2],
                below[k + 4],
            ]);
            out_x[k] = (right as i32).wrapping_sub(left as i32);
            out_y[k] = (lower as i32).wrapping_sub(upper as i32);
        }
    }
    // The disc's samples, and their responses rounded to `f32` for the angles.
    let mut responses = [(0i32, 0i32); ORIENTATION_SAMPLES];
    let mut rounded_x = [0f32; ORIENTATION_SAMPLES];
    let mut rounded_y = [0f32; ORIENTATION_SAMPLES];
    for (n, &(i, j, _)) in ORIENTATION_GRID.iter().enumerate() {
        let (row, col) = ((j + 6) as usize, (i + 6) as usize);
        let (hx, hy) = (square_x[row][col], square_y[row][col]);
        responses[n] = (hx, hy);
        rounded_x[n] = hx as f32;
        rounded_y[n] = hy as f32;
    }
    // `atan2f_regular` is `atan2f` except for a (0, 0) response, where it gives NaN (bin 0):
    // such a sample adds 0 to its bin, so its bin does not matter. Branch-free: vectorises.
    let mut bins = [0u32; ORIENTATION_SAMPLES];
    for ((b, &x), &y) in bins.iter_mut().zip(&rounded_x).zip(&rounded_y) {
        *b = orientation_bin(to_turn(math::atan2f_regular(y, x))) as u32;
    }
    // (x, y) side by side: one index check and one cache line per addition.
    let mut parts = [[[0i64; 2]; BINS]; PARTIALS];
    let samples = responses
        .iter()
        .zip(&bins)
        .zip(&ORIENTATION_WEIGHT_BY_SAMPLE);
    for (n, ((&(hx, hy), &b), &g)) in samples.enumerate() {
        let sum = &mut parts[n % PARTIALS][b as usize];
        sum[0] += g * i64::from(hx);
        sum[1] += g * i64::from(hy);
    }
    for part in &parts {
        for (b, sum) in part.iter().enumerate() {
            bin_x[b] += sum[0];
            bin_y[b] += sum[1];
        }
    }
    true
}
