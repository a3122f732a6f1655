//! Orientation assignment and SURF-64 descriptors (OpenSURF's "Modified SURF"), and Q7 quantisation.
//!
//! ## Theory
//! Orientation (Bay et al. 2008, as OpenSURF `getOrientation`): Haar wavelet responses of size
//! `4s` (`s = round(scale)`) at the 109 sample points `(i, j) s`, `i^2 + j^2 < 36`, weighted by a
//! Gaussian of sigma 2.5 (in units of `s`), are summed inside a window of `pi/3` that slides in
//! steps of `2 pi / 42` (as exact integers, in 42 angle bins of which a window takes 7); the
//! orientation is the angle of the longest sum.
//!
//! Descriptor (Agrawal et al.'s modification as implemented by OpenSURF `getDescriptor`): a
//! `24 s` window split into 4x4 overlapping sub-regions of 9x9 samples at spacing `s = scale`,
//! Haar responses of size `2 round(scale)`, each weighted by a Gaussian (sigma `2.5 s`) centred on
//! its sub-region and rotated into the keypoint frame (the weight taken on the sample grid, in
//! the keypoint's frame, so it is one constant per sample: [`SAMPLE_WEIGHTS`]); per sub-region
//! `(sum dx, sum dy, sum |dx|, sum |dy|)` weighted by a Gaussian (sigma 1.5) over the sub-region
//! grid; unit length. The exact loops are written out in `docs/ARCHITECTURE.md`.
//!
//! The Gaussians' constant factors `1 / (2 pi sigma^2)` are left out: they are common to all
//! samples that end up in one normalised vector or one angle.
//!
//! ```
//! use surfcl_core::{GrayImage, IntegralImage, Keypoint};
//! use surfcl_core::describe::{assign_orientation, describe, to_q7};
//! use surfcl_core::integral::integral_len;
//!
//! // A horizontal intensity ramp: the gradient points along +x, so the orientation is ~0.
//! let (w, h) = (64, 64);
//! let pixels: Vec<u8> = (0..w * h).map(|i| (i % w * 3) as u8).collect();
//! let image = GrayImage::new(&pixels, w, h).unwrap();
//! let mut table = vec![0u32; integral_len(w, h).unwrap()];
//! let ii = IntegralImage::compute(&image, &mut table).unwrap();
//! let mut kp = Keypoint { x: 32.0, y: 32.0, scale: 2.0, ..Keypoint::default() };
//! assign_orientation(&ii, &mut kp);
//! assert!(kp.orientation < 0.2 || kp.orientation > 6.1);
//! let d = describe(&ii, &kp, false);
//! let norm: f32 = d.iter().map(|v| v * v).sum::<f32>().sqrt();
//! assert!((norm - 1.0).abs() < 1e-5);
//! assert!(to_q7(&d).iter().all(|&q| q >= -127));
//! ```

use core::fmt;

use crate::haar::{haar_pair, half_boxes};
use crate::integral::IntegralImage;
use crate::keypoint::{DESCRIPTOR_LEN, Descriptor, Keypoint};
use crate::math;
use haar_map::HaarMap;

pub mod haar_map;
mod orientation;
mod q7;

pub(crate) use orientation::ORIENTATION_WEIGHT_BY_SAMPLE;
use orientation::assign_orientation_inlined;
pub use orientation::{
    ORIENTATION_BIN_SCALE, ORIENTATION_GRID, ORIENTATION_OFFSETS, ORIENTATION_SAMPLES,
    assign_orientation,
};
pub use q7::to_q7;

pub use crate::haar::{haar_x, haar_y};

/// Why [`describe_all`] was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescribeError {
    /// `out` does not have one descriptor per keypoint.
    OutputLength {
        /// Number of keypoints.
        expected: usize,
        /// Length of `out`.
        actual: usize,
    },
}

impl fmt::Display for DescribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DescribeError::OutputLength { expected, actual } => write!(
                f,
                "descriptor buffer has {actual} entries, one per keypoint ({expected}) required"
            ),
        }
    }
}

impl core::error::Error for DescribeError {}

/// Both Haar wavelets at once, as `f32` (each exact integer rounded once to `f32`).
#[inline(always)]
fn haar_xy(ii: &IntegralImage, row: i32, col: i32, s: i32) -> (f32, f32) {
    let (hx, hy) = haar_pair(ii, row, col, s);
    (math::i64_to_f32(hx), math::i64_to_f32(hy))
}

/// Start (in `0..24`) of the sample rows (and columns) of the descriptor's four sub-region rows:
/// OpenSURF's `i = -12, -7, -2, 3`, nine samples each, overlapping by four.
const SUBREGION_START: [usize; 4] = [0, 5, 10, 15];

/// The sub-region rows (or columns) `lo..=hi` whose nine samples include sample row `kk` (0..24).
#[inline]
fn subregions_of(kk: usize) -> core::ops::RangeInclusive<usize> {
    // Sub-region r covers kk in [5 r, 5 r + 9): r from ceil((kk - 8) / 5) to floor(kk / 5).
    (kk.saturating_sub(4) / 5)..=(kk / 5).min(3)
}

/// The SURF-64 descriptor of `kp` (oriented by `kp.orientation` unless `upright`), unit length;
/// all zeros when every Haar response in the window is zero (a flat patch).
///
/// The 24x24 samples are visited row by row (`k` outer, `l` inner): the 24 samples of a row are
/// computed first (position and rotated Haar responses), then added to the one or two sub-region
/// rows that contain that row, nine samples per sub-region. Each sub-region thus receives its 81
/// samples in OpenSURF's order, so its sums are those of the literal loop of
/// `docs/ARCHITECTURE.md`, with well under 1 KB of per-row arrays on the stack.
pub fn describe(ii: &IntegralImage, kp: &Keypoint, upright: bool) -> Descriptor {
    describe_inlined(ii, kp, upright, None)
}

/// [`describe`], reading the Haar pairs of whole rows of samples inside the image from `map`
/// when it is a map of `ii` for the keypoint's wavelet size (`2 round(scale)`); the same bits
/// as [`describe`] (the map holds the same integers), with one read per sample instead of
/// eight. Any other map is ignored.
pub fn describe_with_map(
    ii: &IntegralImage,
    kp: &Keypoint,
    upright: bool,
    map: Option<&HaarMap<'_>>,
) -> Descriptor {
    describe_inlined(ii, kp, upright, map)
}

/// The body of [`describe`], inlined where it is called (see [`describe_all_with_maps`]).
#[inline(always)]
fn describe_inlined(
    ii: &IntegralImage,
    kp: &Keypoint,
    upright: bool,
    map: Option<&HaarMap<'_>>,
) -> Descriptor {
    // Where there are SIMD units (desktop and robot CPUs), two instances: the upright one's
    // shortcuts (below) are compiled out of the rotated one, whose loop they otherwise slowed
    // by about 3%. On a microcontroller one instance, for flash.
    match (math::SIMD_UNITS, upright) {
        (true, true) => describe_with(ii, kp, true, map),
        (true, false) => describe_with(ii, kp, false, map),
        (false, _) => describe_with(ii, kp, upright, map),
    }
}

/// [`describe`]; inlined with a constant `upright` where [`describe_inlined`] wants an
/// instance per value.
#[inline(always)]
fn describe_with(
    ii: &IntegralImage,
    kp: &Keypoint,
    upright: bool,
    map: Option<&HaarMap<'_>>,
) -> Descriptor {
    let scale = kp.scale;
    let x = math::roundf(kp.x);
    let y = math::roundf(kp.y);
    let (co, si) = if upright {
        (1.0, 0.0)
    } else {
        let (s, c) = math::sincosf(kp.orientation);
        (c, s)
    };
    let haar_size = 2 * math::roundf(scale) as i32;
    let map = map.filter(|m| m.fits(ii) && 2 * m.half() as i64 == i64::from(haar_size));
    // A sample's position is `x + (-l s sin + k s cos)`, `y + (l s cos + k s sin)`; the products
    // depend on one index each, so they are computed once per index (same operations, same bits).
    let mut along_l_x = [0f32; 24];
    let mut along_l_y = [0f32; 24];
    let mut along_k = [(0f32, 0f32); 24];
    for idx in 0..24 {
        let f = (idx as i32 - 12) as f32;
        (along_l_x[idx], along_l_y[idx]) = (-f * scale * si, f * scale * co);
        along_k[idx] = (f * scale * co, f * scale * si);
    }
    // Every sample lies within `reach` of `(x, y)` along each axis (`|f| <= 12` sample spacings
    // in the rotated frame: `12 scale (|sin| + |cos|)`, plus 2 for the rounding of the products,
    // the sums and the position). Where that square, widened by the Haar half size, is inside
    // the image, every row passes `haar_row`'s inside test and rounds in the vector form, so
    // those per-row checks (8% of the orientation and description of a 1080p frame) are
    // skipped: the same paths, the same bits. NaN fails every comparison: the checks then stay.
    let reach = 12.0 * scale * (math::fabsf(si) + math::fabsf(co)) + 2.0;
    let (half, w, ht) = (
        (haar_size / 2) as f32,
        ii.width() as f32,
        ii.height() as f32,
    );
    let known_inside = math::SIMD_UNITS
        && row_path_size(haar_size)
        && x - reach >= half
        && y - reach >= half
        && x + reach <= w - half
        && y + reach <= ht - half
        && math::fabsf(x) + reach < math::NEAR_LIMIT
        && math::fabsf(y) + reach < math::NEAR_LIMIT;
    // (sum dx, sum dy, sum |dx|, sum |dy|) of sub-region (a, b), at [a][b]: the four
    // sub-regions of one sub-region row side by side, so that one row's nine samples are added
    // to all four as 4-lane vectors (each lane in its own sample order).
    let mut sums = SubregionSums::default();
    let mut row = SampleRow::default();
    for (kk, &(k_x, k_y)) in along_k.iter().enumerate() {
        if upright && kk > 0 {
            // Upright, `along_l_x` and `k_y` are signed zeros, so a row's samples share the
            // column `x + k_x` and every row has row 0's sample rows `row.y`.
            row.x = [math::round_to_i32(x + k_x); 24];
        } else {
            // The positions in f32 go through `u` and `v` (overwritten by the responses next).
            for l in 0..24 {
                row.u[l] = x + (along_l_x[l] + k_x);
                row.v[l] = y + (along_l_y[l] + k_y);
            }
            if known_inside {
                math::round_to_i32_each_near(&row.u, &mut row.x);
                math::round_to_i32_each_near(&row.v, &mut row.y);
            } else {
                math::round_to_i32_each(&row.u, &mut row.x);
                math::round_to_i32_each(&row.v, &mut row.y);
            }
        }
        haar_row(ii, map, &mut row, haar_size, known_inside);
        if upright {
            // Rotated by 0: `-rx * 0 + ry * 1` is `ry` and `rx * 1 + ry * 0` is `rx` (the
            // responses are integers, never `-0.0`, so the signed zeros added vanish).
            core::mem::swap(&mut row.u, &mut row.v);
        } else {
            // Rotated into the keypoint frame (OpenSURF's rrx, rry before the weight).
            for (u, v) in row.u.iter_mut().zip(row.v.iter_mut()) {
                let (rx, ry) = (*u, *v);
                *u = -rx * si + ry * co;
                *v = rx * co + ry * si;
            }
        }
        for a in subregions_of(kk) {
            // Row `kk` is row `kk - 5 a` of sub-region row `a`, and sample `l = 5 b + j` is
            // column `j` of sub-region `(a, b)`: the weight depends on `(kk - 5 a, j)` only.
            add_row(&mut sums, a, &row, &SAMPLE_WEIGHTS[kk - SUBREGION_START[a]]);
        }
    }
    let mut desc = [0f32; DESCRIPTOR_LEN];
    for (r, acc) in desc.chunks_exact_mut(4).enumerate() {
        let (a, b) = (r / 4, r % 4);
        acc.copy_from_slice(&[sums.dx[a][b], sums.dy[a][b], sums.mdx[a][b], sums.mdy[a][b]]);
    }
    let mut len = 0f32;
    for (acc, &gauss2) in desc.chunks_exact_mut(4).zip(SUBREGION_WEIGHTS.iter()) {
        let (dx, dy, mdx, mdy) = (acc[0], acc[1], acc[2], acc[3]);
        acc.copy_from_slice(&[dx * gauss2, dy * gauss2, mdx * gauss2, mdy * gauss2]);
        len += (dx * dx + dy * dy + mdx * mdx + mdy * mdy) * gauss2 * gauss2;
    }
    let len = math::sqrtf(len);
    if len > 0.0 && len.is_finite() {
        for v in desc.iter_mut() {
            *v /= len;
        }
    } else {
        desc = [0.0; DESCRIPTOR_LEN];
    }
    desc
}

/// Adds the samples of one descriptor row to the four sub-regions of sub-region row `a`, as
/// 4-lane vectors: lane `b` takes samples `5 b .. 5 b + 9` in order, so each sub-region's sums
/// are those of the sample-by-sample loop. `weights[j]` is the Gaussian weight of the row's
/// `j`-th sample in each of the four sub-regions (a row of [`SAMPLE_WEIGHTS`]).
#[inline(always)]
fn add_row(sums: &mut SubregionSums, a: usize, row: &SampleRow, weights: &[f32; 9]) {
    if !math::SIMD_UNITS {
        // One sub-region at a time: its four sums stay in registers (as 4-lane arrays they
        // went through the stack at every addition on a Cortex-M4F). Each sum gets the same
        // products in the same order.
        for b in 0..4 {
            let (mut dx, mut dy) = (sums.dx[a][b], sums.dy[a][b]);
            let (mut mdx, mut mdy) = (sums.mdx[a][b], sums.mdy[a][b]);
            let samples = row.u[5 * b..].iter().zip(&row.v[5 * b..]);
            for (&g, (&u, &v)) in weights.iter().zip(samples) {
                let rrx = g * u;
                let rry = g * v;
                dx += rrx;
                dy += rry;
                mdx += math::fabsf(rrx);
                mdy += math::fabsf(rry);
            }
            (sums.dx[a][b], sums.dy[a][b]) = (dx, dy);
            (sums.mdx[a][b], sums.mdy[a][b]) = (mdx, mdy);
        }
        return;
    }
    let (mut dx, mut dy) = (sums.dx[a], sums.dy[a]);
    let (mut mdx, mut mdy) = (sums.mdx[a], sums.mdy[a]);
    for (j, &g) in weights.iter().enumerate() {
        let mut u = [0f32; 4];
        let mut v = [0f32; 4];
        for b in 0..4 {
            let l = 5 * b + j;
            u[b] = row.u[l];
            v[b] = row.v[l];
        }
        for b in 0..4 {
            let rrx = g * u[b];
            let rry = g * v[b];
            dx[b] += rrx;
            dy[b] += rry;
            mdx[b] += math::fabsf(rrx);
            mdy[b] += math::fabsf(rry);
        }
    }
    (sums.dx[a], sums.dy[a]) = (dx, dy);
    (sums.mdx[a], sums.mdy[a]) = (mdx, mdy);
}

/// The 24 samples of one descriptor row: pixels, then Haar responses (`u`, `v` hold the
/// positions in `f32` until they are rounded, then `dx`, `dy` until they are rotated into the
/// keypoint frame in place).
#[derive(Debug, Clone, Copy, Default)]
struct SampleRow {
    x: [i32; 24],
    y: [i32; 24],
    u: [f32; 24],
    v: [f32; 24],
    /// [`haar_row`]'s table corners of one chunk of samples. Every entry is written before it
    /// is read, so it is zeroed once per descriptor here instead of once per chunk there (a
    /// `memset` call each: 2% of a 640x480 frame).
    corners: [[u32; ROW_CHUNK]; 8],
}

/// The descriptor's sums per sub-region `(a, b)`, at `[a][b]`.
#[derive(Debug, Clone, Copy, Default)]
struct SubregionSums {
    dx: [[f32; 4]; 4],
    dy: [[f32; 4]; 4],
    mdx: [[f32; 4]; 4],
    mdy: [[f32; 4]; 4],
}

/// Largest Haar half-size of [`haar_row`]'s fast path: a half box (`2 h x h` pixels of at most
/// 255) then sums to less than `2^31`, so the difference of two halves is exact in `i32`.
const MAX_ROW_HALF: i32 = 2048;

/// The Haar pairs of [`haar_xy`] for one descriptor row of samples at `(row.y[l], row.x[l])`,
/// size `s`, into `row.u` (x) and `row.v` (y). When every footprint of the row lies inside the image (the usual row), the
/// nine table corners of each sample are read first and the box arithmetic runs over the whole
/// row at once (the same wrapping `u32` sums; their `i32` difference is the `i64` one, as both
/// halves are below `2^31`, and converts to the same `f32`), or, with a `map` of size `s`, read
/// from the map (the same integers). Otherwise sample by sample.
#[inline(always)]
fn haar_row(
    ii: &IntegralImage,
    map: Option<&HaarMap<'_>>,
    row: &mut SampleRow,
    s: i32,
    known_inside: bool,
) {
    let SampleRow {
        x: xs,
        y: ys,
        u: hx,
        v: hy,
        corners,
    } = row;
    let (xs, ys) = (&*xs, &*ys);
    let h = s / 2;
    let (w, ht) = (ii.width() as i32, ii.height() as i32);
    if !math::SIMD_UNITS && map.is_none() {
        return haar_row_each(ii, row, s);
    }
    let inside = known_inside || {
        let (mut x_min, mut x_max, mut y_min, mut y_max) = (xs[0], xs[0], ys[0], ys[0]);
        for (&x, &y) in xs.iter().zip(ys) {
            x_min = x_min.min(x);
            x_max = x_max.max(x);
            y_min = y_min.min(y);
            y_max = y_max.max(y);
        }
        row_path_size(s) && x_min >= h && y_min >= h && x_max <= w - h && y_max <= ht - h
    };
    if !inside {
        for l in 0..24 {
            (hx[l], hy[l]) = haar_xy(ii, ys[l], xs[l], s);
        }
        return;
    }
    if let Some(map) = map {
        // Inside, so every sample lies in the map's rows and columns `h ..= size - h`.
        for l in 0..24 {
            let [dx, dy] = map.at(ys[l] as usize, xs[l] as usize);
            (hx[l], hy[l]) = (f32::from(dx), f32::from(dy));
        }
        return;
    }
    let t = ii.table();
    let stride = w as usize + 1;
    let (h_rows, h_cols) = (h as usize * stride, h as usize);
    // In two chunks of 12 samples (384 bytes of stack): the nine
    // corners of each sample, rows y - h, y, y + h by columns x - h, x, x + h, then the box
    // arithmetic over the chunk.
    for chunk in 0..24 / ROW_CHUNK {
        let samples = chunk * ROW_CHUNK..(chunk + 1) * ROW_CHUNK;
        for (l, (&x, &y)) in xs[samples.clone()].iter().zip(&ys[samples]).enumerate() {
            let centre = y as usize * stride + x as usize;
            let row_corners = corners_at(t, centre, h_rows, h_cols);
            for (k, &v) in row_corners.iter().enumerate() {
                corners[k][l] = v;
            }
        }
        let [a, b, c, d, f, g, m, i] = &*corners;
        for l in 0..ROW_CHUNK {
            let [right, left, lower, upper] =
                half_boxes([a[l], b[l], c[l], d[l], f[l], g[l], m[l], i[l]]);
            hx[chunk * ROW_CHUNK + l] = (right as i32).wrapping_sub(left as i32) as f32;
            hy[chunk * ROW_CHUNK + l] = (lower as i32).wrapping_sub(upper as i32) as f32;
        }
    }
}

/// [`haar_row`] without vector units: each sample straight from its eight table corners when
/// its footprint is inside the image (so a row at the image's border takes the clamped path
/// only for the samples that need it), else through [`haar_xy`]. The same integers either way.
#[inline(always)]
fn haar_row_each(ii: &IntegralImage, row: &mut SampleRow, s: i32) {
    let h = s / 2;
    let (w, ht) = (ii.width() as i32, ii.height() as i32);
    let t = ii.table();
    let stride = w as usize + 1;
    let (h_rows, h_cols) = (h as usize * stride, h as usize);
    let table_path = row_path_size(s);
    let samples = row
        .x
        .iter()
        .zip(&row.y)
        .zip(row.u.iter_mut().zip(row.v.iter_mut()));
    for ((&x, &y), (hx, hy)) in samples {
        if table_path && x >= h && y >= h && x <= w - h && y <= ht - h {
            let centre = y as usize * stride + x as usize;
            let [right, left, lower, upper] = half_boxes(corners_at(t, centre, h_rows, h_cols));
            *hx = (right as i32).wrapping_sub(left as i32) as f32;
            *hy = (lower as i32).wrapping_sub(upper as i32) as f32;
        } else {
            (*hx, *hy) = haar_xy(ii, y, x, s);
        }
    }
}

/// The eight table corners of a Haar pair centred at table index `centre` (the centre itself
/// unused), `h_rows` and `h_cols` the half size in table rows and columns: rows above, at and
/// below by columns left, at and right, as [`half_boxes`] takes them.
#[inline(always)]
fn corners_at(t: &[u32], centre: usize, h_rows: usize, h_cols: usize) -> [u32; 8] {
    let (top, bottom) = (centre - h_rows, centre + h_rows);
    [
        t[top - h_cols],
        t[top],
        t[top + h_cols],
        t[centre - h_cols],
        t[centre + h_cols],
        t[bottom - h_cols],
        t[bottom],
        t[bottom + h_cols],
    ]
}

/// Whether Haar size `s` can take [`haar_row`]'s table path: even, at least 2, and a half
/// size of at most [`MAX_ROW_HALF`].
#[inline(always)]
fn row_path_size(s: i32) -> bool {
    s >= 2 && s % 2 == 0 && s / 2 <= MAX_ROW_HALF
}

/// Samples per chunk of [`haar_row`].
const ROW_CHUNK: usize = 12;

/// The descriptor's sample Gaussian (sigma `2.5 scale`, centred on the sub-region) along one
/// axis, on the sample grid: `expf(-(f32((p - 5)^2)) / 12.5)` for the sample `p` (`0..9`) of a
/// sub-region row or column, whose centre is its sample 5 (OpenSURF's `i + 5`). Offsets are in
/// sample spacings, so the weight does not depend on the scale (`(d scale)^2 / (2 (2.5 scale)^2)`
/// is `d^2 / 12.5`) nor on the orientation. Evaluated by the compiler with [`math::expf`].
const SAMPLE_WEIGHT_1D: [f32; 9] = {
    let mut e = [0f32; 9];
    let mut p = 0;
    while p < 9 {
        let d = p as i32 - 5;
        e[p] = math::expf(-((d * d) as f32) / 12.5);
        p += 1;
    }
    e
};

/// The weight of sample `(p, q)` of a sub-region (row `p`, column `q`, both `0..9`):
/// `SAMPLE_WEIGHT_1D[p] * SAMPLE_WEIGHT_1D[q]` (one `f32` product, as the kernel computes it),
/// evaluated by the compiler. The Gaussian's constant factor is left out: it cancels in the
/// unit vector.
pub const SAMPLE_WEIGHTS: [[f32; 9]; 9] = {
    let mut w = [[0f32; 9]; 9];
    let mut p = 0;
    while p < 9 {
        let mut q = 0;
        while q < 9 {
            w[p][q] = SAMPLE_WEIGHT_1D[p] * SAMPLE_WEIGHT_1D[q];
            q += 1;
        }
        p += 1;
    }
    w
};

/// The sub-regions' Gaussian (sigma 1.5 over the 4x4 grid, centres `(a + 0.5, b + 0.5)`, mean 2):
/// `expf(-((a + 0.5 - 2)^2 + (b + 0.5 - 2)^2) / (2 * 1.5 * 1.5))` with [`math::expf`], evaluated
/// by the compiler; sub-region `(a, b)` at `a * 4 + b`.
const SUBREGION_WEIGHTS: [f32; 16] = {
    let mut g = [0f32; 16];
    let mut r = 0;
    while r < 16 {
        let gx = (r / 4) as f32 + 0.5 - 2.0;
        let gy = (r % 4) as f32 + 0.5 - 2.0;
        g[r] = math::expf(-(gx * gx + gy * gy) / (2.0 * 1.5 * 1.5));
        r += 1;
    }
    g
};

/// Describes every keypoint: assigns orientations first (unless `upright`, which sets them to 0),
/// then writes `out[k]` for `keypoints[k]`. `out` must have exactly one entry per keypoint.
pub fn describe_all(
    ii: &IntegralImage,
    keypoints: &mut [Keypoint],
    upright: bool,
    out: &mut [Descriptor],
) -> Result<(), DescribeError> {
    describe_each(ii, keypoints, upright, out, assign_orientation, describe)
}

/// [`describe_all`], each keypoint described with the map of `maps` for its wavelet size, if
/// there is one ([`describe_with_map`]): the same descriptors, faster where many keypoints share
/// a size (see [`crate::haar_map`]).
///
/// The orientation and descriptor loops are inlined into the caller, so that a caller compiled
/// with wider vector instructions than the target's baseline runs them wider: the std layer
/// calls it from a function with `#[target_feature(enable = "avx2")]` chosen after run-time
/// detection, and the loops written for SIMD (the orientation windows, the rows of samples) run
/// 8 lanes wide instead of SSE2's 4. The results are the same bits: the same IEEE operations in
/// the same order per element, and Rust never contracts a multiply and an add into an FMA.
#[inline(always)]
pub fn describe_all_with_maps(
    ii: &IntegralImage,
    keypoints: &mut [Keypoint],
    upright: bool,
    out: &mut [Descriptor],
    maps: &[HaarMap<'_>],
) -> Result<(), DescribeError> {
    describe_each(
        ii,
        keypoints,
        upright,
        out,
        assign_orientation_inlined,
        |ii, kp, upright| {
            let half = math::roundf(kp.scale);
            let map = maps.iter().find(|m| m.half() as f32 == half);
            describe_inlined(ii, kp, upright, map)
        },
    )
}

/// The loop of [`describe_all`] for any orientation and descriptor functions (the fixed-point
/// path passes its own): checks `out`'s length, then per keypoint sets the orientation (0 when
/// `upright`) and writes its descriptor.
#[inline(always)]
pub(crate) fn describe_each<D>(
    ii: &IntegralImage,
    keypoints: &mut [Keypoint],
    upright: bool,
    out: &mut [D],
    orient: impl Fn(&IntegralImage, &mut Keypoint),
    describe_one: impl Fn(&IntegralImage, &Keypoint, bool) -> D,
) -> Result<(), DescribeError> {
    if out.len() != keypoints.len() {
        return Err(DescribeError::OutputLength {
            expected: keypoints.len(),
            actual: out.len(),
        });
    }
    for (kp, d) in keypoints.iter_mut().zip(out.iter_mut()) {
        if upright {
            // +0.0 from its bits: no float operation for the fixed-point path.
            kp.orientation = f32::from_bits(0);
        } else {
            orient(ii, kp);
        }
        *d = describe_one(ii, kp, upright);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use super::orientation::*;
    use super::*;
    use crate::surf::test_util::{Owned, blobs, boat, detect_vec};
    use crate::surf::{Precision, SurfConfig};
    use core::f32::consts::PI;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// The definition `to_q7` implements, value by value.
    fn q7_reference(f: f32) -> i8 {
        // `as` saturates and maps NaN to 0; the clamp keeps -128 out.
        math::roundf(127.0 * f).clamp(-127.0, 127.0) as i8
    }

    #[test]
    fn q7_quantisation_is_the_rounding_definition_everywhere() {
        // Every tie of 127 f (k + 1/2 for each k) and the 64 floats on either side of where it
        // falls, the special values, and a million random values in and beyond [-1, 1], placed
        // at every lane of the descriptor.
        let mut values = Vec::new();
        for k in -130..=130 {
            let centre = (k as f32 + 0.5) / 127.0;
            let bits = centre.to_bits();
            for delta in 0..=64u32 {
                values.push(f32::from_bits(bits.wrapping_add(delta)));
                values.push(f32::from_bits(bits.wrapping_sub(delta)));
            }
        }
        values.extend([
            0.0,
            -0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::MAX,
            f32::MIN,
            1.0,
            -1.0,
            33_000.0 / 127.0,
            5e7,
            -5e7,
        ]);
        let mut rng = StdRng::seed_from_u64(127);
        for _ in 0..1_000_000 {
            values.push(rng.gen_range(-1.5f32..1.5));
        }
        for chunk in values.chunks(DESCRIPTOR_LEN - 3) {
            // Rows that hold a NaN or a huge value take the element-wise path, the others the
            // vector one: both are covered.
            let mut d = [0.25f32; DESCRIPTOR_LEN];
            d[3..3 + chunk.len()].copy_from_slice(chunk);
            let q = to_q7(&d);
            for (i, (&f, &got)) in d.iter().zip(q.iter()).enumerate() {
                assert_eq!(
                    got,
                    q7_reference(f),
                    "lane {i}, value {f:e} ({:#x})",
                    f.to_bits()
                );
            }
        }
    }

    fn distance(a: &Descriptor, b: &Descriptor) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f32>()
            .sqrt()
    }

    fn angle_diff(a: f32, b: f32) -> f32 {
        let d = (a - b).rem_euclid(2.0 * PI);
        d.min(2.0 * PI - d)
    }

    /// A textured square patch of random smooth blobs.
    fn texture(n: usize, seed: u64) -> Owned {
        let mut rng = StdRng::seed_from_u64(seed);
        let spots: Vec<(f32, f32, f32, f32)> = (0..(n * n / 60))
            .map(|_| {
                (
                    rng.gen_range(0.0..n as f32),
                    rng.gen_range(0.0..n as f32),
                    rng.gen_range(1.5..5.0),
                    rng.gen_range(-60.0..60.0),
                )
            })
            .collect();
        blobs(n, n, 128.0, &spots)
    }

    /// Rotates a square image by 90 degrees: pixel (x, y) goes to (n - 1 - y, x), so a gradient
    /// direction theta becomes theta + pi/2.
    fn rotate90(img: &Owned) -> Owned {
        let n = img.width;
        let mut out = std::vec![0u8; n * n];
        for y in 0..n {
            for x in 0..n {
                out[x * n + (n - 1 - y)] = img.pixels[y * n + x];
            }
        }
        Owned::new(out, n, n)
    }

    /// ARCHITECTURE.md's orientation transcribed window by window, testing every sample's bin
    /// against every window (the reference for the bin sums of `assign_orientation`).
    fn reference_orientation(ii: &IntegralImage, kp: &Keypoint) -> f32 {
        let s = kp.scale.round() as i32;
        let (r, c) = (kp.y.round() as i32, kp.x.round() as i32);
        let bin_scale = core::hint::black_box(42.0f32) / (2.0 * PI);
        let mut samples = Vec::new();
        for i in -6i32..=6 {
            for j in -6i32..=6 {
                if i * i + j * j < 36 {
                    let d2 = core::hint::black_box((i * i + j * j) as f32);
                    let g = (math::expf(-d2 / 12.5) * 65536.0 + 0.5) as i32;
                    let hx = haar_x(ii, r + j * s, c + i * s, 4 * s);
                    let hy = haar_y(ii, r + j * s, c + i * s, 4 * s);
                    let a = angle(hx as f32, hy as f32);
                    let bin = ((a * bin_scale) as i32).min(41);
                    samples.push((i64::from(g) * hx, i64::from(g) * hy, bin));
                }
            }
        }
        let (mut best, mut orientation) = (0f32, 0f32);
        for k in 0..42 {
            let (mut sx, mut sy) = (0i64, 0i64);
            for &(x, y, bin) in &samples {
                if (bin - k).rem_euclid(42) < 7 {
                    sx += x;
                    sy += y;
                }
            }
            let (x, y) = (sx as f32, sy as f32);
            if x * x + y * y > best {
                best = x * x + y * y;
                orientation = angle(x, y);
            }
        }
        orientation
    }

    /// OpenSURF's getDescriptor, transcribed with clipped box sums, sub-region by sub-region.
    /// With `definition`, the sample weight is ARCHITECTURE.md's: the product of two 1-D
    /// Gaussians of the sample's offset from its sub-region centre on the sample grid, and the
    /// sub-region weight its `exp` without the constant factor (`describe` must give the same
    /// bits); otherwise OpenSURF's 2-D Gaussians of the offsets between rounded pixels.
    fn reference_descriptor(
        ii: &IntegralImage,
        kp: &Keypoint,
        upright: bool,
        definition: bool,
    ) -> Descriptor {
        let scale = kp.scale;
        let (x, y) = (kp.x.round(), kp.y.round());
        let (co, si) = if upright {
            (1.0f32, 0.0f32)
        } else {
            let (s, c) = math::sincosf(kp.orientation);
            (c, s)
        };
        let gaussian = |x: f32, y: f32, sig: f32| {
            math::expf(-(x * x + y * y) / (2.0 * sig * sig)) / (2.0 * PI * sig * sig)
        };
        let mut desc = [0f32; DESCRIPTOR_LEN];
        let (mut count, mut len) = (0, 0f32);
        let (mut i, mut cx) = (-8i32, -0.5f32);
        while i < 12 {
            let mut j = -8i32;
            i -= 4;
            cx += 1.0;
            let mut cy = -0.5f32;
            while j < 12 {
                let (mut dx, mut dy, mut mdx, mut mdy) = (0f32, 0f32, 0f32, 0f32);
                cy += 1.0;
                j -= 4;
                let (ix, jx) = ((i + 5) as f32, (j + 5) as f32);
                let xs = (x + (-jx * scale * si + ix * scale * co)).round() as i32;
                let ys = (y + (jx * scale * co + ix * scale * si)).round() as i32;
                for k in i..i + 9 {
                    for l in j..j + 9 {
                        let (kf, lf) = (k as f32, l as f32);
                        let sx = (x + (-lf * scale * si + kf * scale * co)).round() as i32;
                        let sy = (y + (lf * scale * co + kf * scale * si)).round() as i32;
                        let g = if definition {
                            // Offsets from the centre sample (i + 5, j + 5), in sample spacings.
                            let e = |d: i32| math::expf(-((d * d) as f32) / 12.5);
                            e(k - (i + 5)) * e(l - (j + 5))
                        } else {
                            gaussian((xs - sx) as f32, (ys - sy) as f32, 2.5 * scale)
                        };
                        let s = 2 * scale.round() as i32;
                        let rx = haar_x(ii, sy, sx, s) as f32;
                        let ry = haar_y(ii, sy, sx, s) as f32;
                        let rrx = g * (-rx * si + ry * co);
                        let rry = g * (rx * co + ry * si);
                        dx += rrx;
                        dy += rry;
                        mdx += rrx.abs();
                        mdy += rry.abs();
                    }
                }
                let g2 = if definition {
                    let (gx, gy) = (cx - 2.0, cy - 2.0);
                    math::expf(-(gx * gx + gy * gy) / (2.0 * 1.5 * 1.5))
                } else {
                    gaussian(cx - 2.0, cy - 2.0, 1.5)
                };
                desc[count..count + 4].copy_from_slice(&[dx * g2, dy * g2, mdx * g2, mdy * g2]);
                count += 4;
                len += (dx * dx + dy * dy + mdx * mdx + mdy * mdy) * g2 * g2;
                j += 9;
            }
            i += 9;
        }
        let len = len.sqrt();
        if len > 0.0 {
            desc.map(|v| v / len)
        } else {
            [0.0; DESCRIPTOR_LEN]
        }
    }

    #[test]
    fn fast_paths_equal_the_opensurf_transcription() {
        let img = boat(1);
        let ii = img.ii();
        let (kps, _) = detect_vec(&img, &SurfConfig::default());
        let (mut worst, mut total) = (0f32, 0f32);
        let mut rng = StdRng::seed_from_u64(4);
        // Detected keypoints, plus random ones near the borders (clipped boxes) and large scales.
        let mut points: Vec<Keypoint> = kps.iter().step_by(5).copied().collect();
        for _ in 0..100 {
            points.push(Keypoint {
                x: rng.gen_range(-5.0..860.0),
                y: rng.gen_range(-5.0..690.0),
                scale: rng.gen_range(1.2..60.0),
                ..Keypoint::default()
            });
        }
        for kp in &points {
            let mut a = *kp;
            assign_orientation(&ii, &mut a);
            assert_eq!(
                a.orientation.to_bits(),
                reference_orientation(&ii, kp).to_bits()
            );
            for upright in [false, true] {
                let fast = describe(&ii, &a, upright);
                let definition = reference_descriptor(&ii, &a, upright, true);
                assert_eq!(
                    fast.map(f32::to_bits),
                    definition.map(f32::to_bits),
                    "{a:?} upright {upright}"
                );
                let d = distance(&fast, &reference_descriptor(&ii, &a, upright, false));
                worst = worst.max(d);
                total += d;
            }
        }
        let mean = total / (2 * points.len()) as f32;
        std::println!(
            "{} points: equal to the definition; L2 distance to OpenSURF's weights of rounded \
             pixel offsets: mean {mean:e}, worst {worst:e}",
            points.len()
        );
        // The weights on the sample grid are OpenSURF's without its rounding of sample and
        // centre to pixels: close (measured mean 1.7e-2, worst 7.8e-2), not equal.
        assert!(mean < 0.03 && worst < 0.15, "mean {mean}, worst {worst}");
    }

    #[test]
    fn orientation_lattice_gives_the_per_sample_bins() {
        let img = boat(1);
        let ii = img.ii();
        let mut rng = StdRng::seed_from_u64(9);
        let (mut taken, mut refused) = (0, 0);
        for _ in 0..2000 {
            let (r, c) = (rng.gen_range(-10..700), rng.gen_range(-10..870));
            let s = rng.gen_range(1..40);
            let (mut lattice_x, mut lattice_y) = ([0i64; BINS], [0i64; BINS]);
            let (mut per_sample_x, mut per_sample_y) = ([0i64; BINS], [0i64; BINS]);
            orientation_bins_per_sample(&ii, r, c, s, &mut per_sample_x, &mut per_sample_y);
            let inside = r - 8 * s >= 0 && c - 8 * s >= 0 && r + 8 * s <= 680 && c + 8 * s <= 850;
            assert_eq!(
                orientation_bins_from_lattice(&ii, r, c, s, &mut lattice_x, &mut lattice_y),
                inside,
                "{r} {c} {s}"
            );
            if inside {
                taken += 1;
                assert_eq!(
                    (lattice_x, lattice_y),
                    (per_sample_x, per_sample_y),
                    "{r} {c} {s}"
                );
                // Not a vacuous comparison: the samples spread over several bins.
                assert!(per_sample_x.iter().filter(|&&v| v != 0).count() > 2);
            } else {
                refused += 1;
                assert_eq!((lattice_x, lattice_y), ([0; BINS], [0; BINS]));
            }
        }
        assert!(taken > 200 && refused > 200, "{taken} {refused}");
    }

    #[test]
    fn flat_and_zero_samples_add_nothing_to_any_bin() {
        let centre = Keypoint {
            x: 50.0,
            y: 50.0,
            scale: 2.0,
            ..Keypoint::default()
        };
        // A flat image: every response is (0, 0), on both paths; the orientation is 0.
        let flat = Owned::new(vec![90u8; 100 * 100], 100, 100);
        let mut kp = centre;
        assign_orientation(&flat.ii(), &mut kp);
        assert_eq!(kp.orientation.to_bits(), 0);
        // A half-flat patch: the (0, 0) samples of the flat half must not move the others'
        // sums (the SIMD path gives them NaN angles).
        let mut half = vec![90u8; 100 * 100];
        for (k, p) in half.iter_mut().enumerate() {
            let (x, y) = (k % 100, k / 100);
            if x > 50 {
                *p = (90 + 3 * (x - 50) + (y % 7)) as u8;
            }
        }
        let half = Owned::new(half, 100, 100);
        let ii = half.ii();
        let (mut lattice_x, mut lattice_y) = ([0i64; BINS], [0i64; BINS]);
        let (mut per_sample_x, mut per_sample_y) = ([0i64; BINS], [0i64; BINS]);
        orientation_bins_per_sample(&ii, 50, 50, 2, &mut per_sample_x, &mut per_sample_y);
        let taken = orientation_bins_from_lattice(&ii, 50, 50, 2, &mut lattice_x, &mut lattice_y);
        assert_eq!(taken, math::SIMD_UNITS);
        if taken {
            assert_eq!((lattice_x, lattice_y), (per_sample_x, per_sample_y));
        }
        assert!(per_sample_x.iter().any(|&v| v != 0));
        let mut kp = centre;
        assign_orientation(&ii, &mut kp);
        assert_eq!(
            kp.orientation.to_bits(),
            reference_orientation(&ii, &kp).to_bits()
        );
    }

    /// The bin's vectorisable arithmetic is the definition `min(i32(a * scale), 41)` (clamped
    /// at 0, NaN to 0; ARCHITECTURE "Orientation", what surf.cl computes) for every angle a
    /// sample can have, checked on every float of `[0, 2 pi]` near each bin edge, on a dense
    /// sweep of the whole range, and on values no angle has.
    #[test]
    fn orientation_bin_is_the_saturating_definition() {
        let definition =
            |a: f32| ((a * ORIENTATION_BIN_SCALE) as i32).clamp(0, BINS as i32 - 1) as usize;
        let mut checked = 0usize;
        let mut check = |a: f32| {
            assert_eq!(
                orientation_bin(a),
                definition(a),
                "angle {a:e} (bits {:#x})",
                a.to_bits()
            );
            checked += 1;
        };
        for edge in 0..=BINS {
            // The floats around the angle whose product is the edge.
            let centre = (edge as f32 / ORIENTATION_BIN_SCALE).to_bits();
            for bits in centre.saturating_sub(300)..=centre + 300 {
                check(f32::from_bits(bits));
            }
        }
        let end = (2.0 * PI).to_bits() + 300;
        for bits in (0..end).step_by(997) {
            check(f32::from_bits(bits));
        }
        for a in [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            -1e-30,
            -3.0,
            7.0,
            1e30,
            f32::MAX,
            f32::MIN,
        ] {
            check(a);
        }
        assert!(checked > 1_000_000);
    }

    #[test]
    fn compile_time_weights_are_the_run_time_ones_and_the_kernel_constant() {
        // surf.cl multiplies by this constant's bits; the const tables use the run-time
        // operations.
        assert_eq!(ORIENTATION_BIN_SCALE.to_bits(), 0x40d5_e77c);
        assert_eq!(
            (core::hint::black_box(42.0f32) / (2.0 * PI)).to_bits(),
            0x40d5_e77c
        );
        // The largest angle below 2 pi lands in the last bin, not past it.
        let largest = f32::from_bits((2.0 * PI).to_bits() - 1);
        assert_eq!(orientation_bin(largest), BINS - 1);
        assert_eq!((largest * ORIENTATION_BIN_SCALE) as i32, 41);
        assert_eq!(orientation_bin(0.0), 0);
        assert_eq!(orientation_bin(f32::NAN), 0);
        for (i, row) in ORIENTATION_WEIGHTS.iter().enumerate() {
            for (j, &w) in row.iter().enumerate() {
                let n = core::hint::black_box((i * i + j * j) as f32);
                assert_eq!(w, (math::expf(-n / 12.5) * 65536.0 + 0.5) as i32);
            }
        }
        assert_eq!(ORIENTATION_WEIGHTS[0][0], 65536);
        for (r, &w) in SUBREGION_WEIGHTS.iter().enumerate() {
            let gx = core::hint::black_box((r / 4) as f32 + 0.5 - 2.0);
            let gy = (r % 4) as f32 + 0.5 - 2.0;
            assert_eq!(
                w.to_bits(),
                math::expf(-(gx * gx + gy * gy) / 4.5).to_bits()
            );
        }
        assert_eq!(
            ORIENTATION_GRID[0],
            (-5, -3, ORIENTATION_WEIGHTS[5][3] as f32)
        );
        for (&(_, _, w), &g) in ORIENTATION_GRID.iter().zip(&ORIENTATION_WEIGHT_BY_SAMPLE) {
            assert_eq!(w as i64, g);
        }
    }

    #[test]
    fn round_to_i32_is_roundf() {
        let mut rng = StdRng::seed_from_u64(8);
        let halves = (-20..20).map(|k| k as f32 + 0.5);
        let near = (-20..20).flat_map(|k| {
            let h = k as f32 + 0.5;
            [
                f32::from_bits(h.to_bits() - 1),
                f32::from_bits(h.to_bits() + 1),
            ]
        });
        let random = (0..10_000).map(|_| rng.gen_range(-3000.0..3000.0f32));
        for v in halves
            .chain(near)
            .chain(random)
            .chain([0.49999997, -0.49999997, 8388609.0])
        {
            assert_eq!(math::round_to_i32(v), math::roundf(v) as i32, "{v}");
        }
        assert_eq!(math::round_to_i32(f32::NAN), 0);
        // The row form: its f32 path on rows of ordinary values (halves, their neighbours,
        // random), its element-wise path on rows with a huge or NaN entry.
        let mut values: Vec<f32> = (-40..40)
            .flat_map(|k| {
                let h = k as f32 * 0.5;
                [
                    h,
                    f32::from_bits(h.to_bits() + 1),
                    f32::from_bits(h.to_bits().max(1) - 1),
                ]
            })
            .chain((0..2000).map(|_| rng.gen_range(-5000.0..5000.0f32)))
            .chain([
                0.49999997,
                -0.49999997,
                -0.0,
                4194303.5,
                -4194303.5,
                2097151.5,
            ])
            .collect();
        values.extend([1e20, f32::NAN, -3e9, 4194304.5]);
        for row in values.chunks(24) {
            let mut xs = [0.25f32; 24];
            xs[..row.len()].copy_from_slice(row);
            let mut out = [7i32; 24];
            math::round_to_i32_each(&xs, &mut out);
            for (&x, &r) in xs.iter().zip(&out) {
                assert_eq!(r, math::round_to_i32(x), "{x}");
            }
        }
        assert_eq!(math::round_to_i32(1e20), i32::MAX);
        assert_eq!(math::round_to_i32(-1e20), i32::MIN);
        // Saturated truncations whose "fraction" is beyond one: no step past the limits.
        for v in [
            2147483648.0f32,
            2147483904.0,
            3e9,
            -2147483648.0,
            -2147483904.0,
            -3e9,
        ] {
            assert_eq!(math::round_to_i32(v), math::roundf(v) as i32, "{v}");
        }
    }

    #[test]
    fn rotation_by_90_degrees_is_undone_by_the_orientation() {
        let img = texture(241, 9);
        let rot = rotate90(&img);
        let n = img.width as f32;
        let (kps, _) = detect_vec(&img, &SurfConfig::default());
        let (mut oriented, mut upright, mut angles) = (Vec::new(), Vec::new(), Vec::new());
        let mut forced = Vec::new();
        for kp in kps.iter().filter(|k| {
            // Whole descriptor window inside the image (24 s diagonal half-width ~ 17 s).
            let m = 18.0 * k.scale;
            k.x > m && k.y > m && k.x < n - 1.0 - m && k.y < n - 1.0 - m
        }) {
            let mut a = *kp;
            let mut b = Keypoint {
                x: n - 1.0 - kp.y,
                y: kp.x,
                ..*kp
            };
            assign_orientation(&img.ii(), &mut a);
            assign_orientation(&rot.ii(), &mut b);
            angles.push(angle_diff(b.orientation, a.orientation + PI / 2.0));
            oriented.push(distance(
                &describe(&img.ii(), &a, false),
                &describe(&rot.ii(), &b, false),
            ));
            let mut c = b;
            c.orientation = (a.orientation + PI / 2.0).rem_euclid(2.0 * PI);
            forced.push(distance(
                &describe(&img.ii(), &a, false),
                &describe(&rot.ii(), &c, false),
            ));
            upright.push(distance(
                &describe(&img.ii(), &a, true),
                &describe(&rot.ii(), &b, true),
            ));
        }
        let median = |v: &mut Vec<f32>| {
            v.sort_by(f32::total_cmp);
            v[v.len() / 2]
        };
        let count = oriented.len();
        let (mo, mu, ma) = (
            median(&mut oriented),
            median(&mut upright),
            median(&mut angles),
        );
        let mf = median(&mut forced);
        let close = oriented.iter().filter(|&&d| d < 0.25).count();
        std::println!(
            "{count} keypoints: median descriptor distance oriented {mo:.4}, upright {mu:.4}; \
             median orientation error {ma:.4} rad; oriented < 0.25: {close}; max oriented {:.4}; \
             with the orientation forced to the unrotated one + pi/2: median {mf:.4}",
            oriented[count - 1]
        );
        assert!(count >= 20, "{count}");
        // Measured: oriented 0.123, upright 0.62, angle error 0.083 rad, forced 0.075. The
        // residue comes from the sliding window (its 0.15 rad steps do not divide pi/2, so the
        // rotated point sees other windows), the half-pixel asymmetry of even Haar wavelets and
        // the rounding of sample positions.
        assert!(mo < 0.2, "oriented {mo}");
        assert!(mf < 0.12, "forced {mf}");
        assert!(mu > 0.5, "upright {mu}");
        assert!(ma < 0.15, "angle {ma}");
        // Most oriented pairs are close; a few differ where two windows compete.
        assert!(close * 4 >= count * 3, "{close} of {count}");
    }

    #[test]
    fn ramps_give_their_gradient_direction() {
        let (w, h) = (64usize, 64usize);
        for (dir, expected) in [
            ((1.0f32, 0.0f32), 0.0f32),
            ((0.0, 1.0), PI / 2.0),
            ((-1.0, 0.0), PI),
            ((1.0, 1.0), PI / 4.0),
        ] {
            let pixels: Vec<u8> = (0..w * h)
                .map(|i| {
                    let (x, y) = ((i % w) as f32, (i / w) as f32);
                    (128.0 + 1.5 * (dir.0 * (x - 32.0) + dir.1 * (y - 32.0))) as u8
                })
                .collect();
            let img = Owned::new(pixels, w, h);
            let mut kp = Keypoint {
                x: 32.0,
                y: 32.0,
                scale: 2.0,
                ..Keypoint::default()
            };
            assign_orientation(&img.ii(), &mut kp);
            assert!(
                angle_diff(kp.orientation, expected) < 0.1,
                "{dir:?}: {}",
                kp.orientation
            );
            assert!((0.0..2.0 * PI).contains(&kp.orientation));
        }
    }

    #[test]
    fn haar_maps_give_the_same_descriptors() {
        use crate::haar_map::HaarMap;
        let img = boat(1);
        let ii = img.ii();
        let (mut detected, _) = detect_vec(&img, &SurfConfig::default());
        // Every map size at many positions (inside, along the borders and partly outside), as
        // well as the detected keypoints (mostly half-sizes 2 and 3).
        let mut rng = StdRng::seed_from_u64(11);
        for half in 1..=HaarMap::MAX_HALF {
            for _ in 0..60 {
                detected.push(Keypoint {
                    x: rng.gen_range(-5.0..img.width as f32 + 5.0),
                    y: rng.gen_range(-5.0..img.height as f32 + 5.0),
                    scale: half as f32 + rng.gen_range(-0.45..0.45),
                    orientation: 0.0,
                    ..Keypoint::default()
                });
            }
        }
        let mut cells: std::vec::Vec<std::vec::Vec<_>> = (1..=HaarMap::MAX_HALF)
            .map(|half| {
                std::vec![[0i16; 2]; HaarMap::cells_len(img.width, img.height, half).unwrap()]
            })
            .collect();
        let maps: std::vec::Vec<_> = cells
            .iter_mut()
            .enumerate()
            .map(|(i, c)| HaarMap::compute(&ii, i + 1, c).unwrap())
            .collect();
        let mut used = 0;
        for upright in [false, true] {
            let mut plain_kps = detected.clone();
            let mut mapped_kps = detected.clone();
            let mut plain = std::vec![[0f32; DESCRIPTOR_LEN]; detected.len()];
            let mut mapped = plain.clone();
            describe_all(&ii, &mut plain_kps, upright, &mut plain).unwrap();
            describe_all_with_maps(&ii, &mut mapped_kps, upright, &mut mapped, &maps).unwrap();
            assert_eq!(plain_kps, mapped_kps);
            for (k, (p, m)) in plain.iter().zip(&mapped).enumerate() {
                let (p, m) = (p.map(f32::to_bits), m.map(f32::to_bits));
                assert_eq!(p, m, "keypoint {k} {:?} upright {upright}", detected[k]);
            }
            // A map of another wavelet size, or of another image, is not used.
            let kp = &mapped_kps[0];
            let other_half = maps
                .iter()
                .find(|m| m.half() as f32 != math::roundf(kp.scale))
                .unwrap();
            let small = Owned::new(std::vec![9; 300 * 200], 300, 200);
            let small_ii = small.ii();
            let mut small_cells = std::vec![[0i16; 2]; HaarMap::cells_len(300, 200, 2).unwrap()];
            let other_image = HaarMap::compute(&small_ii, 2, &mut small_cells).unwrap();
            for wrong in [other_half, &other_image] {
                assert_eq!(
                    describe_with_map(&ii, kp, upright, Some(wrong)).map(f32::to_bits),
                    describe(&ii, kp, upright).map(f32::to_bits)
                );
            }
            used += mapped_kps
                .iter()
                .filter(|kp| math::roundf(kp.scale) <= HaarMap::MAX_HALF as f32)
                .count();
        }
        assert!(used > 1000, "{used}");
    }

    #[test]
    fn descriptors_on_boat_are_unit_length() {
        let img = boat(1);
        let config = SurfConfig {
            precision: Precision::Packed8,
            ..Default::default()
        };
        let (mut kps, _) = detect_vec(&img, &config);
        kps.truncate(300);
        for upright in [false, true] {
            let mut out = std::vec![[0f32; DESCRIPTOR_LEN]; kps.len()];
            describe_all(&img.ii(), &mut kps, upright, &mut out).unwrap();
            for (kp, d) in kps.iter().zip(&out) {
                let norm = d.iter().map(|v| v * v).sum::<f32>().sqrt();
                assert!((norm - 1.0).abs() < 1e-5, "{norm}");
                assert!((0.0..2.0 * PI).contains(&kp.orientation));
                if upright {
                    assert_eq!(kp.orientation, 0.0);
                }
                // Q7 of a unit vector: every entry in range, and round-trips within half a step.
                let q = to_q7(d);
                for (&qi, &f) in q.iter().zip(d) {
                    assert!(qi >= -127);
                    assert!((f32::from(qi) / 127.0 - f).abs() <= 0.5 / 127.0 + 1e-6);
                }
            }
            if !upright {
                // Orientations vary on a real image (the test would pass vacuously if all were 0).
                assert!(kps.iter().filter(|k| k.orientation != 0.0).count() > kps.len() / 2);
            }
        }
    }

    #[test]
    fn describe_all_checks_the_output_length() {
        let img = texture(64, 1);
        let mut kps = [Keypoint {
            x: 30.0,
            y: 30.0,
            scale: 2.0,
            ..Keypoint::default()
        }; 3];
        let mut out = [[0f32; DESCRIPTOR_LEN]; 2];
        assert_eq!(
            describe_all(&img.ii(), &mut kps, false, &mut out),
            Err(DescribeError::OutputLength {
                expected: 3,
                actual: 2
            })
        );
        let mut empty: [Descriptor; 0] = [];
        assert!(describe_all(&img.ii(), &mut [], false, &mut empty).is_ok());
    }

    #[test]
    fn flat_patch_and_q7_edge_cases() {
        // Large enough that no box of the 24 s window is clipped (clipping makes borders look like edges).
        let img = Owned::new(std::vec![77u8; 200 * 200], 200, 200);
        let kp = Keypoint {
            x: 100.0,
            y: 100.0,
            scale: 2.0,
            ..Keypoint::default()
        };
        assert_eq!(describe(&img.ii(), &kp, false), [0.0; DESCRIPTOR_LEN]);
        let mut d = [0f32; DESCRIPTOR_LEN];
        d[0] = 1.0;
        d[1] = -1.5;
        d[2] = 0.5 / 127.0; // half a step rounds away from zero
        d[3] = -0.5 / 127.0;
        d[4] = f32::NAN;
        let q = to_q7(&d);
        assert_eq!(&q[..6], &[127, -127, 1, -1, 0, 0]);
    }
}
