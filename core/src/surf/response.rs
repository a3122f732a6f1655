//! Box-filter Hessian responses: exact integer terms, the bit-exact `f32` response, and whole
//! octaves in `f32` or packed 8-bit form.

use super::config::{INTERVALS, MAX_OCTAVES, Precision, SurfConfig, SurfError};
use super::geometry::{check_octave, filter_size, grid_size, sample_step, words_per_sample};
use super::packed::{PackedCodeTable, pack_byte};
use core::ops::Range;

use crate::integral::IntegralImage;
use crate::math;

/// `255^2`: responses are in OpenSURF units, i.e. on intensities scaled to `[0, 1]`.
const INTENSITY_SQ: f64 = 65025.0;

/// Normalisation of filter `filter`: `1 / (100 L^4 255^2)` computed in `f64` and rounded once to
/// `f32`. The 100 undoes the integer determinant's `100 Dxx Dyy - 81 Dxy^2` scaling, `L^4` is the
/// squared filter area, `255^2` the intensity scale. The kernels receive this value from the host,
/// so it has one definition. Returns 0 for a zero filter.
///
/// A `const fn`: the detector never calls it at run time (that would be `f64` arithmetic, soft
/// float on a single-precision FPU) but reads [`RESPONSE_NORMS`], which the compiler evaluates
/// with it.
pub const fn response_norm(filter: u32) -> f32 {
    if filter == 0 {
        return 0.0;
    }
    let l = filter as f64;
    (1.0 / (100.0 * l * l * l * l * INTENSITY_SQ)) as f32
}

/// [`response_norm`] of every filter of the detector, `RESPONSE_NORMS[octave][interval] =
/// response_norm(L(octave, interval))`, evaluated at compile time.
pub const RESPONSE_NORMS: [[f32; INTERVALS as usize]; MAX_OCTAVES as usize] = {
    let mut t = [[0f32; INTERVALS as usize]; MAX_OCTAVES as usize];
    let mut o = 0;
    while o < MAX_OCTAVES as usize {
        let mut i = 0;
        while i < INTERVALS as usize {
            t[o][i] = response_norm(3 * ((i as u32 + 1) * (2 << o) + 1));
            i += 1;
        }
        o += 1;
    }
    t
};

/// The norm of filter size `size`: [`RESPONSE_NORMS`] when it is one of the detector's sizes
/// (always, on the detection paths), else [`response_norm`] at run time (only [`response_at`]
/// with an arbitrary size can get there).
fn norm_of(size: u32) -> f32 {
    for (o, row) in RESPONSE_NORMS.iter().enumerate() {
        for (i, &norm) in row.iter().enumerate() {
            if filter_size(o as u32, i as u32) == size {
                return norm;
            }
        }
    }
    response_norm(size)
}

/// Largest filter size whose box sums and `Dxx`, `Dyy`, `Dxy` are below `2^31` in magnitude
/// for every 8-bit image: the largest of the detector (octave 5, interval 3). The biggest box
/// is `(2 l - 1) x L` pixels, `255 * 513 * 771 ~ 1.0e8`.
const MAX_I32_TERMS_SIZE: i32 = 771;

/// The eight boxes of one filter size and their integral-table offsets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Filter {
    /// Filter size `L` (at most `i32::MAX`).
    size: i32,
    /// Half-size `b = (L - 1) / 2`: the footprint is rows/columns `[-b, b]` around the sample.
    half: i32,
    /// For each rect of [`Filter::rects`], the table offsets of its corners `(r0,c0), (r0,c1),
    /// (r1,c0), (r1,c1)` relative to the sample's table index, for the unclamped fast path.
    offsets: [[isize; 4]; 8],
    /// [`response_norm`] of this size.
    norm: f32,
}

impl Filter {
    /// Geometry of filter size `size` with normalisation `norm` (its [`response_norm`]) for an
    /// integral table whose rows are `stride` entries.
    pub(crate) fn new(size: u32, norm: f32, stride: usize) -> Self {
        let size = size.min(i32::MAX as u32) as i32;
        let rects = Self::rects_of(size);
        let s = stride as isize;
        let mut offsets = [[0isize; 4]; 8];
        for (o, r) in offsets.iter_mut().zip(rects.iter()) {
            let (r0, c0) = (r[0] as isize, r[1] as isize);
            let (r1, c1) = (r0 + r[2] as isize, c0 + r[3] as isize);
            *o = [r0 * s + c0, r0 * s + c1, r1 * s + c0, r1 * s + c1];
        }
        Self {
            size,
            half: (size - 1).max(0) / 2,
            offsets,
            norm,
        }
    }

    /// `(row, col, rows, cols)` of the eight boxes of size `size` relative to the sample: Dxx
    /// outer, Dxx middle, Dyy outer, Dyy middle, then the four Dxy quadrants `+ + - -`. Recomputed
    /// where needed rather than stored, which halves the size of a `Filter` (stack on an MCU).
    fn rects_of(size: i32) -> [[i32; 4]; 8] {
        let l = size / 3;
        let b = (size - 1).max(0) / 2;
        [
            [-l + 1, -b, 2 * l - 1, size],
            [-l + 1, -(l / 2), 2 * l - 1, l],
            [-b, -l + 1, size, 2 * l - 1],
            [-(l / 2), -l + 1, l, 2 * l - 1],
            [-l, 1, l, l],
            [1, -l, l, l],
            [-l, -l, l, l],
            [1, 1, l, l],
        ]
    }

    /// Filter `interval` of `octave` (both in range: callers check the configuration), its norm
    /// from [`RESPONSE_NORMS`].
    pub(crate) fn octave(octave: u32, interval: u32, stride: usize) -> Self {
        let norm = RESPONSE_NORMS
            .get(octave as usize)
            .and_then(|row| row.get(interval as usize))
            .copied()
            .unwrap_or(0.0);
        Self::new(filter_size(octave, interval), norm, stride)
    }

    /// The exact integer terms `(Dxx, Dyy, Dxy)` at pixel `(row, col)`.
    #[inline(always)]
    pub(crate) fn terms(&self, ii: &IntegralImage, row: i32, col: i32) -> (i64, i64, i64) {
        let (w, h) = (ii.width() as i64, ii.height() as i64);
        let (r, c, b) = (i64::from(row), i64::from(col), i64::from(self.half));
        let t = ii.table();
        // The arrays below are written out element by element through `#[inline(always)]`
        // helpers: zeroed and filled in place, mapped by value or built by a closure, they were
        // a `memset`, a `memcpy` or eight calls per response in a size-optimised build.
        let s: [u32; 8] = if r - b >= 0 && r + b < h && c - b >= 0 && c + b < w {
            // Fast path: the whole footprint is inside, no clamping. Every index below is in the
            // table: the rows touched are r - b ..= r + b + 1 <= height, likewise the columns.
            let p = (r * (w + 1) + c) as isize;
            let o = &self.offsets;
            [
                corner_box(t, p, &o[0]),
                corner_box(t, p, &o[1]),
                corner_box(t, p, &o[2]),
                corner_box(t, p, &o[3]),
                corner_box(t, p, &o[4]),
                corner_box(t, p, &o[5]),
                corner_box(t, p, &o[6]),
                corner_box(t, p, &o[7]),
            ]
        } else if self.size >= 3 {
            // Every box is at least one row and column (`l >= 1`), so a clipped box is the four
            // corners with their rows and columns clamped to the table, as
            // `IntegralImage::box_sum` takes them (a box clipped to nothing gives 0 both ways).
            let q = Self::rects_of(self.size);
            [
                clipped_box(ii, row, col, &q[0]),
                clipped_box(ii, row, col, &q[1]),
                clipped_box(ii, row, col, &q[2]),
                clipped_box(ii, row, col, &q[3]),
                clipped_box(ii, row, col, &q[4]),
                clipped_box(ii, row, col, &q[5]),
                clipped_box(ii, row, col, &q[6]),
                clipped_box(ii, row, col, &q[7]),
            ]
        } else {
            Self::rects_of(self.size).map(|q| {
                ii.box_sum(
                    row.saturating_add(q[0]),
                    col.saturating_add(q[1]),
                    q[2],
                    q[3],
                )
            })
        };
        if self.size <= MAX_I32_TERMS_SIZE {
            let (dxx, dyy, dxy) = i32_terms(&s);
            return (i64::from(dxx), i64::from(dyy), i64::from(dxy));
        }
        let v = |k: usize| i64::from(s[k]);
        (v(0) - 3 * v(1), v(2) - 3 * v(3), v(4) + v(5) - v(6) - v(7))
    }

    /// The exact determinant `100 Dxx Dyy - 81 Dxy^2` and the Laplacian sign at pixel
    /// `(row, col)`.
    #[inline(always)]
    pub(crate) fn det(&self, ii: &IntegralImage, row: i32, col: i32) -> (i64, i8) {
        let (dxx, dyy, dxy) = self.terms(ii, row, col);
        let laplacian = if dxx + dyy >= 0 { 1 } else { -1 };
        if self.size <= MAX_I32_TERMS_SIZE {
            return (i32_det(dxx as i32, dyy as i32, dxy as i32), laplacian);
        }
        // Cannot overflow for L <= 771: |Dxx|, |Dyy| < 513 * 771 * 255 ~ 1.0e8, so
        // 100 Dxx Dyy < 1.1e18 < i64::MAX.
        (100 * dxx * dyy - 81 * dxy * dxy, laplacian)
    }

    /// The response of determinant `det`: `det as f32` times the norm, one `f32` multiply (the
    /// kernels do the same).
    #[inline(always)]
    pub(crate) fn scale(&self, det: i64) -> f32 {
        math::i64_to_f32(det) * self.norm
    }

    /// The bit-exact response and the Laplacian sign at pixel `(row, col)`.
    #[inline(always)]
    pub(crate) fn response(&self, ii: &IntegralImage, row: i32, col: i32) -> (f32, i8) {
        let (det, laplacian) = self.det(ii, row, col);
        (self.scale(det), laplacian)
    }

    /// The responses of consecutive samples `STEP` pixels apart, the first at table index `p`,
    /// into word `k` of each 4-word group of `words` (one group per sample, at most
    /// [`ROW_PASS_SAMPLES`]), for samples whose footprint is inside the image and a filter with
    /// `i32` terms ([`MAX_I32_TERMS_SIZE`]), with the box sums in `sums`. Returns how many
    /// samples it wrote: all, unless the table ends within the last sample's `STEP` columns
    /// (then none).
    #[inline(always)]
    fn responses_row<const STEP: usize>(
        &self,
        t: &[u32],
        p: usize,
        words: &mut [u32],
        k: usize,
        sums: &mut RowPassSums,
    ) -> usize {
        let n = (words.len() / 4).min(ROW_PASS_SAMPLES);
        for (row, o) in sums.iter_mut().zip(&self.offsets) {
            // Interior samples: every corner offset from `p` is at least `-p`.
            let at = |j: usize| {
                let start = (p as isize + o[j]) as usize;
                t.get(start..).unwrap_or(&[]).as_chunks::<STEP>().0
            };
            let corners = at(0).iter().zip(at(1)).zip(at(2)).zip(at(3));
            if corners.len() < n {
                return 0;
            }
            for (sum, (((a, b), c), d)) in row[..n].iter_mut().zip(corners) {
                *sum = d[0]
                    .wrapping_sub(b[0])
                    .wrapping_sub(c[0])
                    .wrapping_add(a[0]);
            }
        }
        let (groups, _) = words.as_chunks_mut::<4>();
        // `i < n <= ROW_PASS_SAMPLES`: no bounds check on the sums.
        for (i, group) in groups.iter_mut().enumerate().take(n) {
            let (dxx, dyy, dxy) = i32_terms(&core::array::from_fn(|q| sums[q][i]));
            // `k < 4`: the mask only spares the bounds check.
            group[k & 3] = self.scale(i32_det(dxx, dyy, dxy)).to_bits();
        }
        n
    }
}

/// `(Dxx, Dyy, Dxy)` from a filter's eight box sums ([`Filter::rects_of`]'s order), for a filter
/// of at most [`MAX_I32_TERMS_SIZE`]: every box sum and term is below 2^31 in magnitude, so
/// `i32` arithmetic, wrapping or not, gives the exact values.
#[inline(always)]
fn i32_terms(s: &[u32; 8]) -> (i32, i32, i32) {
    let dxx = s[0].wrapping_sub(s[1].wrapping_mul(3)) as i32;
    let dyy = s[2].wrapping_sub(s[3].wrapping_mul(3)) as i32;
    let dxy = s[4]
        .wrapping_add(s[5])
        .wrapping_sub(s[6])
        .wrapping_sub(s[7]) as i32;
    (dxx, dyy, dxy)
}

/// The determinant `100 Dxx Dyy - 81 Dxy^2` of [`i32_terms`]' terms. |Dxx|, |Dyy| <=
/// 3 * 255 (2 l - 1) l and |Dxy| <= 2 * 255 l^2 (l = L / 3 <= 257): 10 Dxx, 10 Dyy and 9 Dxy are
/// below 1.1e9 < 2^31, so it is two 32x32-bit products, `(10 Dxx)(10 Dyy) - (9 Dxy)^2`, with no
/// 64-bit multiply.
#[inline(always)]
fn i32_det(dxx: i32, dyy: i32, dxy: i32) -> i64 {
    math::mul_wide(10 * dxx, 10 * dyy) - math::mul_wide(9 * dxy, 9 * dxy)
}

/// The box whose table corners lie at offsets `o` (see [`Filter::offsets`]) from index `p`.
#[inline(always)]
fn corner_box(t: &[u32], p: isize, o: &[isize; 4]) -> u32 {
    t[(p + o[3]) as usize]
        .wrapping_sub(t[(p + o[1]) as usize])
        .wrapping_sub(t[(p + o[2]) as usize])
        .wrapping_add(t[(p + o[0]) as usize])
}

/// The box `q` (`(row, col, rows, cols)` relative to pixel `(row, col)`, at least one row and
/// column) clipped to the image: its corners clamped to the table.
#[inline(always)]
fn clipped_box(ii: &IntegralImage, row: i32, col: i32, q: &[i32; 4]) -> u32 {
    let (t, w, h) = (ii.table(), ii.width(), ii.height());
    let clamp_row = |v: i32| v.clamp(0, h as i32) as usize * (w + 1);
    let clamp_col = |v: i32| v.clamp(0, w as i32) as usize;
    let (top, left) = (row.saturating_add(q[0]), col.saturating_add(q[1]));
    let (r0, r1) = (clamp_row(top), clamp_row(top.saturating_add(q[2])));
    let (c0, c1) = (clamp_col(left), clamp_col(left.saturating_add(q[3])));
    t[r1 + c1]
        .wrapping_sub(t[r0 + c1])
        .wrapping_sub(t[r1 + c0])
        .wrapping_add(t[r0 + c0])
}

/// The response of filter size `filter` at pixel `(row, col)` and the sign of the Laplacian
/// (`1` when `Dxx + Dyy >= 0`, a dark blob; `-1` otherwise): `(100 Dxx Dyy - 81 Dxy^2) as f32 *
/// response_norm(filter)`, bit for bit what the kernels compute. Boxes are clipped to the image.
pub fn response_at(ii: &IntegralImage, row: i32, col: i32, filter: u32) -> (f32, i8) {
    Filter::new(filter, norm_of(filter), ii.width() + 1).response(ii, row, col)
}

/// The four filters of `octave`.
pub(crate) fn octave_filters(ii: &IntegralImage, octave: u32) -> [Filter; 4] {
    let stride = ii.width() + 1;
    [0, 1, 2, 3].map(|i| Filter::octave(octave, i, stride))
}

/// Calls `f(sample_index, responses)` for every sample of `octave`'s grid, row by row.
///
/// Only the grid rows in `rows` (clamped to the grid) are visited, and the sample index passed
/// to `f` counts from the first of them, so a band of rows can be filled into its own slice.
/// Intervals below `from` are not computed (`(0.0, 1)` in their place).
fn for_each_sample(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    from: usize,
    f: impl FnMut(usize, [(f32, i8); 4]),
) {
    let filters = octave_filters(ii, octave);
    for_each_sample_of(
        ii,
        config,
        octave,
        rows,
        from,
        &filters,
        f,
        |_, filter, row, col| filter.response(ii, row, col),
    );
}

/// [`for_each_sample`] with each sample's value for filter `k` from `eval(k, filter, row, col)`
/// (pixel row and column).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn for_each_sample_of<T: Copy + Default>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    from: usize,
    filters: &[Filter; 4],
    mut f: impl FnMut(usize, [T; 4]),
    eval: impl Fn(usize, &Filter, i32, i32) -> T,
) {
    let step = sample_step(config, octave);
    let (gw, gh) = grid_size(ii.width(), ii.height(), step);
    let step = step as i32;
    let first = rows.start;
    for sy in rows.start.min(gh)..rows.end.min(gh) {
        let row = sy as i32 * step;
        for sx in 0..gw {
            let col = sx as i32 * step;
            let mut r = [T::default(); 4];
            for (k, (out, filter)) in r.iter_mut().zip(filters.iter()).enumerate().skip(from) {
                *out = eval(k, filter, row, col);
            }
            f((sy - first) * gw + sx, r);
        }
    }
}

/// [`for_each_sample`] a grid row and a filter at a time, with the column sums of
/// [`ColumnFilter`] in `columns` (at least [`column_scratch_len`] words): calls
/// `f(sample_index, interval, response)` once per sample and interval. For each grid row and
/// filter, the five vertical differences of the integral table its boxes span are taken once
/// (contiguous, vectorised); a sample whose footprint is inside the image then costs 16 reads of
/// them instead of 32 scattered table reads. The box sums are the same `u32` values (wrapping
/// differences commute), so every response is bit-identical.
fn for_each_response(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    columns: &mut [u32],
    mut f: impl FnMut(usize, usize, (f32, i8)),
) {
    let step = sample_step(config, octave);
    let (gw, gh) = grid_size(ii.width(), ii.height(), step);
    let filters = octave_filters(ii, octave);
    let stride = ii.width() + 1;
    let Some(v) = columns.get_mut(..SPANS * stride) else {
        return for_each_sample(ii, config, octave, rows, 0, |i, r| {
            for (k, &resp) in r.iter().enumerate() {
                f(i, k, resp);
            }
        });
    };
    let step = step as i32;
    let first = rows.start;
    let last = ii.width() as i32;
    for sy in rows.start.min(gh)..rows.end.min(gh) {
        let row = sy as i32 * step;
        let base = (sy - first) * gw;
        for (k, filter) in filters.iter().enumerate() {
            let cf = ColumnFilter::new(filter);
            cf.column_sums(ii, row, v);
            for sx in 0..gw {
                let col = sx as i32 * step;
                let resp = if cf.cols_inside(ii, col) {
                    cf.response(v, stride, col, |c| c as usize)
                } else {
                    // Columns clipped as `IntegralImage::box_sum` clips them.
                    cf.response(v, stride, col, |c| c.clamp(0, last) as usize)
                };
                f(base + sx, k, resp);
            }
        }
    }
}

/// Grid-row-at-a-time `f32` responses of [`fill_f32_bits`] with column sums: like
/// [`for_each_response`], but the interior samples of a row (footprint columns inside the image)
/// are computed a whole row at a time by [`ColumnFilter::interior_row`] into a per-interval row of
/// `rows_out` (the scratch after the column sums), then interleaved into `out`. Same bits as
/// [`for_each_sample`]: see [`ColumnFilter::det_exact_in_f64`].
///
/// Intervals below `from` are left as `out` holds them (see [`fill_f32_bits`]).
#[inline(always)]
fn fill_f32_rows_with_columns<B: BoxSums>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    columns: &mut [u32],
    out: &mut [u32],
    from: usize,
) {
    let step = sample_step(config, octave);
    let (gw, gh) = grid_size(ii.width(), ii.height(), step);
    let stride = ii.width() + 1;
    if columns.len() < SPANS * stride + (INTERVALS as usize + BOXES) * gw {
        return for_each_response(ii, config, octave, rows, columns, |i, k, (v, _)| {
            out[i * 4 + k] = v.to_bits();
        });
    }
    let (v, rows_out) = columns.split_at_mut(SPANS * stride);
    let (rows_out, box_rows) = rows_out.split_at_mut(INTERVALS as usize * gw);
    let step = step as usize;
    // Per filter, once per octave: its column geometry, interior samples and whether its
    // determinant is exact in `f64`.
    let filters = octave_filters(ii, octave).map(|filter| {
        let cf = ColumnFilter::new(&filter);
        let inside = cf.interior_samples(ii.width(), step, gw);
        (cf, inside, cf.det_exact_in_f64())
    });
    let last = ii.width() as i32;
    let first = rows.start;
    for sy in rows.start.min(gh)..rows.end.min(gh) {
        let row = (sy * step) as i32;
        let computed = filters.iter().zip(rows_out.chunks_exact_mut(gw)).skip(from);
        for ((cf, inside, exact), responses) in computed {
            cf.column_sums(ii, row, v);
            let border = (0..inside.start).chain(inside.end..gw);
            for sx in border {
                // Columns clipped as `IntegralImage::box_sum` clips them.
                let col = (sx * step) as i32;
                responses[sx] = cf
                    .response(v, stride, col, |c| c.clamp(0, last) as usize)
                    .0
                    .to_bits();
            }
            let interior = &mut responses[inside.clone()];
            let first = inside.start;
            match step {
                _ if !exact => cf.interior_row_scalar(v, stride, step, first, interior),
                1 => cf.interior_row::<B, 1>(v, stride, first, box_rows, interior),
                2 => cf.interior_row::<B, 2>(v, stride, first, box_rows, interior),
                4 => cf.interior_row::<B, 4>(v, stride, first, box_rows, interior),
                8 => cf.interior_row::<B, 8>(v, stride, first, box_rows, interior),
                _ => cf.interior_row_scalar(v, stride, step, first, interior),
            }
        }
        // Interval-major row to the maps' sample-major layout.
        let base = (sy - first) * gw;
        let (r0, rest) = rows_out.split_at(gw);
        let (r1, rest) = rest.split_at(gw);
        let (r2, r3) = rest.split_at(gw);
        let dst = &mut out[base * 4..(base + gw) * 4];
        if from == 0 {
            for ((((d, &a), &b), &c), &e) in dst.chunks_exact_mut(4).zip(r0).zip(r1).zip(r2).zip(r3)
            {
                d.copy_from_slice(&[a, b, c, e]);
            }
        } else {
            // Intervals 0 and 1 came from the octave before (`from` is 0 or 2).
            for ((d, &c), &e) in dst.chunks_exact_mut(4).zip(r2).zip(r3) {
                d[2..].copy_from_slice(&[c, e]);
            }
        }
    }
}

/// The determinant `100 Dxx Dyy - 81 Dxy^2` in `f64`: the `i64` value whenever
/// `100 |Dxx Dyy| + 81 Dxy^2 <= 2^53` (see [`ColumnFilter::det_exact_in_f64`]).
#[inline(always)]
fn det_f64(dxx: i32, dyy: i32, dxy: i32) -> f64 {
    let det = 100.0 * f64::from(dxx) * f64::from(dyy) - 81.0 * f64::from(dxy) * f64::from(dxy);
    // `+ 0.0` turns the `-0.0` of `0 * negative` into the integer's `+0.0` and leaves every
    // other value as it is.
    det + 0.0
}

/// The box sums of the vector fill's interior rows: `out[i] = v[hi + i STEP] - v[lo + i STEP]`
/// (wrapping; `0` for a column beyond `v`, which the fill never reads), the sums of one box at
/// consecutive samples of a row of column sums `v`. A type, so that a std layer can hand in the
/// same loop compiled with wider vectors (and chosen at run time), as the matcher's `LaneSums`.
pub trait BoxSums {
    /// Writes the box sums into `out` (every implementation gives the same words).
    fn box_sums<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]);
}

/// The portable [`BoxSums`]: the loop out of line, for the target's baseline. As a function of
/// its own its two slices are known not to overlap, and LLVM vectorises the strided reads (loads
/// and shuffles); inlined into the fill, it kept the loop scalar.
#[derive(Debug, Clone, Copy)]
pub struct PortableBoxSums;

impl BoxSums for PortableBoxSums {
    #[inline(always)]
    fn box_sums<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]) {
        box_sums_out_of_line::<STEP>(v, lo, hi, out);
    }
}

#[inline(never)]
fn box_sums_out_of_line<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]) {
    InlineBoxSums::box_sums::<STEP>(v, lo, hi, out);
}

/// The [`BoxSums`] loop inlined into its caller: for a std layer's own out-of-line function
/// compiled with other target features (which calls it), not for the fill itself.
#[derive(Debug, Clone, Copy)]
pub struct InlineBoxSums;

impl BoxSums for InlineBoxSums {
    #[inline(always)]
    fn box_sums<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]) {
        let lows = v.get(lo..).unwrap_or(&[]).chunks_exact(STEP);
        let highs = v.get(hi..).unwrap_or(&[]).chunks_exact(STEP);
        let whole = out.len().min(lows.len()).min(highs.len());
        for ((o, a), b) in out[..whole].iter_mut().zip(lows).zip(highs) {
            *o = b[0].wrapping_sub(a[0]);
        }
        // The last samples of the last span, whose chunk of `STEP` columns would run past `v`.
        for (i, o) in out.iter_mut().enumerate().skip(whole) {
            let at = |base: usize| v.get(base + i * STEP).copied().unwrap_or(0);
            *o = at(hi).wrapping_sub(at(lo));
        }
    }
}

/// Row spans whose vertical differences a filter's eight boxes share: boxes 0 and 1 (Dxx), 2
/// and 3 (Dyy), 4 and 6, 5 and 7 (the Dxy quadrants above and below).
const SPANS: usize = 5;
/// The span of each box of [`Filter::rects_of`].
const SPAN_OF_BOX: [usize; 8] = [0, 0, 1, 2, 3, 4, 3, 4];

/// Words of the `columns` scratch of [`OctaveFill::fill_rows`](super::OctaveFill::fill_rows) for
/// an image `width` pixels wide: rows of the integral table's width, five for the column sums,
/// four for a grid row's responses per interval before they are interleaved, eight for its box
/// sums.
pub const fn column_scratch_len(width: usize) -> usize {
    (SPANS + INTERVALS as usize + BOXES) * (width + 1)
}

/// Boxes of a filter: one row of box sums each in [`ColumnFilter::interior_row`].
const BOXES: usize = 8;

/// A filter's boxes as column ranges of row-span differences ([`for_each_response`]).
#[derive(Debug, Clone, Copy)]
struct ColumnFilter {
    /// First table row (relative to the sample row) and row count of each span.
    spans: [(i32, i32); SPANS],
    /// Per box: its span and its first and one-past-last column relative to the sample.
    boxes: [(usize, i32, i32); 8],
    half: i32,
    norm: f32,
}

impl ColumnFilter {
    fn new(filter: &Filter) -> Self {
        let rects = Filter::rects_of(filter.size);
        let mut spans = [(0, 0); SPANS];
        let mut boxes = [(0, 0, 0); 8];
        for (q, r) in rects.iter().enumerate() {
            spans[SPAN_OF_BOX[q]] = (r[0], r[2]);
            boxes[q] = (SPAN_OF_BOX[q], r[1], r[1] + r[3]);
        }
        Self {
            spans,
            boxes,
            half: filter.half,
            norm: filter.norm,
        }
    }

    /// Whether the footprint's columns are inside the image at pixel column `col`.
    fn cols_inside(&self, ii: &IntegralImage, col: i32) -> bool {
        col - self.half >= 0 && i64::from(col + self.half) < ii.width() as i64
    }

    /// `v[span * stride + c] = T[r1][c] - T[r0][c]` (wrapping) for every column `c` of the
    /// table, the rows `r0 = row + first`, `r1 = r0 + count` of each span clipped to
    /// `0..=height` as [`IntegralImage::box_sum`] clips them. A box is then `v[c1] - v[c0]` with
    /// its columns clipped likewise: `box_sum`'s four corners regrouped (an empty box gives 0
    /// both ways), so samples at the borders take this path too, with the same bits.
    #[inline(always)]
    fn column_sums(&self, ii: &IntegralImage, row: i32, v: &mut [u32]) {
        let t = ii.table();
        let stride = ii.width() + 1;
        let clip = |r: i32| r.clamp(0, ii.height() as i32) as usize;
        for ((first, count), out) in self.spans.iter().zip(v.chunks_exact_mut(stride)) {
            let r0 = clip(row.saturating_add(*first));
            let r1 = clip(row.saturating_add(*first).saturating_add(*count));
            let (top, bottom) = (&t[r0 * stride..][..stride], &t[r1 * stride..][..stride]);
            for ((d, &a), &b) in out.iter_mut().zip(top).zip(bottom) {
                *d = b.wrapping_sub(a);
            }
        }
    }

    /// The grid columns `sx` of a row whose footprint columns are inside an image `width` wide
    /// ([`ColumnFilter::cols_inside`] at `col = sx * step`), within a grid `grid_w` wide.
    fn interior_samples(&self, width: usize, step: usize, grid_w: usize) -> Range<usize> {
        let half = self.half.max(0) as usize;
        let start = half.div_ceil(step.max(1));
        // `col + half < width`: `col <= width - 1 - half`.
        let end = match width.checked_sub(half + 1) {
            Some(last_col) => last_col / step.max(1) + 1,
            None => 0,
        };
        start.min(grid_w)..end.min(grid_w).max(start.min(grid_w))
    }

    /// Whether `100 Dxx Dyy - 81 Dxy^2` is computed exactly in `f64` for every 8-bit image at
    /// this filter size, so that rounding that `f64` to `f32` gives the bits of the `i64`
    /// determinant rounded to `f32` (one rounding to nearest even either way).
    ///
    /// Box 1 lies inside box 0 (same rows, middle columns), so `Dxx = (S0 - S1) - 2 S1` is
    /// within `255 max(A0 - A1, 2 A1)` of zero (`A` the box areas); likewise `Dyy` with boxes 2
    /// and 3, and `|Dxy| <= 255 max(A4 + A5, A6 + A7)`. Clipping at the image border only
    /// shrinks the boxes, and inside first. When `100 |Dxx Dyy| + 81 Dxy^2 <= 2^53` every
    /// product and the difference are integers that `f64` holds exactly. True for the filters
    /// up to `L = 195` (octaves 0-3, the first two of octave 4); larger ones stay in `i64`.
    fn det_exact_in_f64(&self) -> bool {
        let area = |q: usize| {
            let (span, c0, c1) = self.boxes[q];
            let rows = self.spans[span].1.max(0) as u128;
            rows * (c1 - c0).max(0) as u128
        };
        let lobe = |outer: usize, inner: usize| {
            255 * (area(outer).saturating_sub(area(inner))).max(2 * area(inner))
        };
        let (dxx, dyy) = (lobe(0, 1), lobe(2, 3));
        let dxy = 255 * (area(4) + area(5)).max(area(6) + area(7));
        100 * dxx * dyy + 81 * dxy * dxy <= 1u128 << 53
    }

    /// The responses of the interior samples `first..first + out.len()` of a row (all inside
    /// [`ColumnFilter::interior_samples`]) as `f32` bits, with the determinant in `f64`: only
    /// for a filter whose [`ColumnFilter::det_exact_in_f64`] holds, where it gives
    /// [`ColumnFilter::response`]'s bits. In two passes that each vectorise: the eight box sums
    /// of every sample into `box_rows` (eight rows of at least `out.len()` words; `STEP`, the
    /// octave's sample step, is a constant so that the strided column reads become LLVM's
    /// interleaved vector loads), then the determinants from those rows.
    #[inline(always)]
    fn interior_row<B: BoxSums, const STEP: usize>(
        &self,
        v: &[u32],
        stride: usize,
        first: usize,
        box_rows: &mut [u32],
        out: &mut [u32],
    ) {
        let n = out.len();
        if n == 0 {
            return;
        }
        let col = first * STEP;
        let mut rows = box_rows.chunks_exact_mut(n);
        for &(span, c0, c1) in &self.boxes {
            let Some(row) = rows.next() else {
                return self.interior_row_scalar(v, stride, STEP, first, out);
            };
            // In the interior `col + c0 >= 0` and `col + c1 <= width`.
            let lo = span * stride + (col as isize + c0 as isize) as usize;
            let hi = span * stride + (col as isize + c1 as isize) as usize;
            B::box_sums::<STEP>(v, lo, hi, &mut row[..n]);
        }
        let mut rows = box_rows.chunks_exact(n);
        let mut next = || rows.next().unwrap_or(&[]);
        let (s0, s1, s2, s3) = (next(), next(), next(), next());
        let (s4, s5, s6, s7) = (next(), next(), next(), next());
        let (s0, s1, s2, s3) = (&s0[..n], &s1[..n], &s2[..n], &s3[..n]);
        let (s4, s5, s6, s7) = (&s4[..n], &s5[..n], &s6[..n], &s7[..n]);
        for (i, r) in out.iter_mut().enumerate() {
            // The sums are below 2^31 for these filter sizes (255 A < 2^31), so are these.
            let dxx = s0[i] as i32 - 3 * s1[i] as i32;
            let dyy = s2[i] as i32 - 3 * s3[i] as i32;
            let dxy = s4[i] as i32 + s5[i] as i32 - s6[i] as i32 - s7[i] as i32;
            *r = ((det_f64(dxx, dyy, dxy) as f32) * self.norm).to_bits();
        }
    }

    /// [`ColumnFilter::interior_row`] one sample at a time in `i64`, for any filter and step.
    fn interior_row_scalar(
        &self,
        v: &[u32],
        stride: usize,
        step: usize,
        first: usize,
        out: &mut [u32],
    ) {
        for (i, r) in out.iter_mut().enumerate() {
            let col = ((first + i) * step) as i32;
            *r = self.response(v, stride, col, |c| c as usize).0.to_bits();
        }
    }

    /// [`Filter::response`] at pixel column `col` from the column sums `v` of its row; `column`
    /// maps a box's column to its index in `v` (the identity inside, clipping at the borders).
    #[inline(always)]
    fn response(
        &self,
        v: &[u32],
        stride: usize,
        col: i32,
        column: impl Fn(i32) -> usize,
    ) -> (f32, i8) {
        let mut s = [0i64; 8];
        for (sum, &(span, c0, c1)) in s.iter_mut().zip(self.boxes.iter()) {
            let base = span * stride;
            let a = v[base + column(col + c0)];
            let b = v[base + column(col + c1)];
            *sum = i64::from(b.wrapping_sub(a));
        }
        let (dxx, dyy, dxy) = (s[0] - 3 * s[1], s[2] - 3 * s[3], s[4] + s[5] - s[6] - s[7]);
        let det = 100 * dxx * dyy - 81 * dxy * dxy;
        let laplacian = if dxx + dyy >= 0 { 1 } else { -1 };
        ((det as f32) * self.norm, laplacian)
    }
}

/// Checks config and octave, returns the number of samples of the octave's grid.
fn octave_samples(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
) -> Result<usize, SurfError> {
    config.validate()?;
    check_octave(config, octave)?;
    let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(config, octave));
    Ok(gw * gh)
}

/// Computes the `f32` responses of all four intervals of `octave` into `out`, grid-major:
/// `out[(sy * grid_w + sx) * 4 + interval]` (grid from [`grid_size`] with the octave's
/// [`sample_step`]). `out` must hold at least `grid_w * grid_h * 4` values; the rest is untouched.
pub fn compute_octave_f32(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    out: &mut [f32],
) -> Result<(), SurfError> {
    let samples = octave_samples(ii, config, octave)?;
    let expected = samples * INTERVALS as usize;
    if out.len() < expected {
        return Err(SurfError::ScratchLength {
            expected,
            actual: out.len(),
        });
    }
    for_each_sample(ii, config, octave, 0..usize::MAX, 0, |i, r| {
        for (k, (v, _)) in r.iter().enumerate() {
            out[i * 4 + k] = *v;
        }
    });
    Ok(())
}

/// Computes the packed 8-bit responses of `octave` into `out`: one word per sample,
/// `out[sy * grid_w + sx]`, byte `i` = [`pack_byte`]`(table.code(response_i), laplacian_i)`.
/// `out` must hold at least `grid_w * grid_h` words; the rest is untouched.
pub fn compute_octave_packed(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    table: &PackedCodeTable,
    out: &mut [u32],
) -> Result<(), SurfError> {
    let expected = octave_samples(ii, config, octave)?;
    if out.len() < expected {
        return Err(SurfError::ScratchLength {
            expected,
            actual: out.len(),
        });
    }
    fill_packed(ii, config, octave, table, 0..usize::MAX, None, out);
    Ok(())
}

/// The `f32` responses of grid rows `rows` of `octave` stored as bits in `out` (the scratch is
/// `u32`; no unsafe casts). The caller has checked the length. Intervals below `from` (0 or 2)
/// are not computed: `out` already holds them (an octave's intervals 0 and 1 are the filters of
/// the octave before's intervals 1 and 3, on a grid of half its resolution, see
/// [`super::OctaveFill::starting_at`]).
#[inline(always)]
pub(crate) fn fill_f32_bits<B: BoxSums>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    columns: Option<&mut [u32]>,
    out: &mut [u32],
    from: usize,
) {
    debug_assert!(words_per_sample(Precision::F32) == 4);
    match columns {
        Some(columns) => {
            fill_f32_rows_with_columns::<B>(ii, config, octave, rows, columns, out, from)
        }
        None => fill_f32_rows_direct(ii, config, octave, rows, out, from),
    }
}

/// Samples of one row pass of [`fill_f32_rows_direct`]: eight rows of this many box sums live
/// on the stack (2 KB).
const ROW_PASS_SAMPLES: usize = 64;

/// A row pass's box sums: one row per box of [`Filter::rects_of`].
type RowPassSums = [[u32; ROW_PASS_SAMPLES]; 8];

/// [`fill_f32_bits`] without a column scratch: grid row by grid row and filter by filter, the
/// samples whose footprint is inside the image in passes of [`ROW_PASS_SAMPLES`]: each box's sums
/// for the whole pass (four table reads per sample, strided by the sample step, without a bounds
/// check each: the reads are zipped slices), then the determinants and responses from those
/// rows. The samples at the borders, rows whose filter leaves the table, and any sample step
/// other than 1, 2, 4 or 8 take [`Filter::response`]. The box sums, terms and determinant are
/// [`Filter::det`]'s integers (the terms in `i32` for the detector's filters), so the responses
/// are its bits.
#[inline(always)]
fn fill_f32_rows_direct(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    out: &mut [u32],
    from: usize,
) {
    let step = sample_step(config, octave) as usize;
    let (gw, gh) = grid_size(ii.width(), ii.height(), step as u32);
    let filters = octave_filters(ii, octave);
    let (w, h) = (ii.width(), ii.height());
    let first = rows.start;
    // Zeroed once per call: each pass writes the sums it reads.
    let mut sums: RowPassSums = [[0; ROW_PASS_SAMPLES]; 8];
    for sy in rows.start.min(gh)..rows.end.min(gh) {
        let row = sy * step;
        let base = (sy - first) * gw;
        for (k, filter) in filters.iter().enumerate().skip(from) {
            let half = filter.half.max(0) as usize;
            let rows_inside = row >= half && row + half < h;
            let inside = if rows_inside && filter.size <= MAX_I32_TERMS_SIZE {
                let start = half.div_ceil(step.max(1)).min(gw);
                let end = w.checked_sub(half + 1).map_or(0, |c| c / step.max(1) + 1);
                start..end.min(gw).max(start)
            } else {
                0..0
            };
            let mut done = inside.start;
            while done < inside.end {
                let n = (inside.end - done).min(ROW_PASS_SAMPLES);
                let p = row * (w + 1) + done * step;
                let words = &mut out[(base + done) * 4..(base + done + n) * 4];
                let written = match step {
                    1 => filter.responses_row::<1>(ii.table(), p, words, k, &mut sums),
                    2 => filter.responses_row::<2>(ii.table(), p, words, k, &mut sums),
                    4 => filter.responses_row::<4>(ii.table(), p, words, k, &mut sums),
                    8 => filter.responses_row::<8>(ii.table(), p, words, k, &mut sums),
                    _ => 0,
                };
                if written < n {
                    break;
                }
                done += n;
            }
            // The borders, and whatever the passes left.
            for sx in (0..inside.start).chain(done..gw) {
                let (v, _) = filter.response(ii, row as i32, (sx * step) as i32);
                out[(base + sx) * 4 + k] = v.to_bits();
            }
        }
    }
}

/// The packed words of `octave` into `out` (length checked by the caller).
pub(crate) fn fill_packed(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    table: &PackedCodeTable,
    rows: Range<usize>,
    columns: Option<&mut [u32]>,
    out: &mut [u32],
) {
    let byte = |v: f32, lap: i8| u32::from(pack_byte(table.code(v), lap));
    match columns {
        Some(columns) => {
            let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(config, octave));
            let visited = rows.end.min(gh).saturating_sub(rows.start.min(gh));
            // Interval by interval: each word gets its four bytes OR-ed in.
            out[..visited * gw].fill(0);
            for_each_response(ii, config, octave, rows, columns, |i, k, (v, lap)| {
                out[i] |= byte(v, lap) << (8 * k);
            });
        }
        None => {
            // Most samples are below the threshold: their determinant is below the filter's
            // cutoff, and their byte is the Laplacian sign alone, without the conversion to
            // `f32` (a library call on 32-bit targets) and the code's comparisons.
            let filters = octave_filters(ii, octave);
            let cutoffs = filters
                .each_ref()
                .map(|f| table.det_cutoff(|det| f.scale(det)));
            let eval = |k: usize, filter: &Filter, row: i32, col: i32| {
                let (det, lap) = filter.det(ii, row, col);
                if det < cutoffs[k] {
                    pack_byte(0, lap)
                } else {
                    pack_byte(table.code(filter.scale(det)), lap)
                }
            };
            for_each_sample_of(
                ii,
                config,
                octave,
                rows,
                0,
                &filters,
                |i, r: [u8; 4]| {
                    out[i] = u32::from_le_bytes(r);
                },
                eval,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `i64` determinant rounded to `f32`, as [`ColumnFilter::response`] computes it.
    fn det_i64_f32(dxx: i32, dyy: i32, dxy: i32) -> f32 {
        let (dxx, dyy, dxy) = (i64::from(dxx), i64::from(dyy), i64::from(dxy));
        (100 * dxx * dyy - 81 * dxy * dxy) as f32
    }

    #[test]
    fn det_cutoff_is_the_first_determinant_with_a_code() {
        for threshold in [0.0004f32, 0.0001, 0.00002, 0.013, 0.0] {
            let table = PackedCodeTable::new(threshold);
            for (o, norms) in RESPONSE_NORMS.iter().enumerate() {
                for (i, &norm) in norms.iter().enumerate() {
                    let response = |det: i64| (det as f32) * norm;
                    let cutoff = table.det_cutoff(response);
                    let code = |det: i64| table.code(response(det));
                    if cutoff == i64::MIN {
                        assert!(code(i64::MIN) > 0, "{threshold} {o} {i}");
                        continue;
                    }
                    assert!(code(cutoff) > 0, "{threshold} {o} {i} {cutoff}");
                    for below in [1, 2, 1000, cutoff.unsigned_abs() / 3 + 1] {
                        let det = cutoff.saturating_sub_unsigned(below);
                        assert_eq!(code(det), 0, "{threshold} {o} {i} {det}");
                    }
                }
            }
        }
        // No determinant reaches a NaN threshold, nor any with a zero norm and threshold > 0.
        let table = PackedCodeTable::new(f32::NAN);
        assert_eq!(table.det_cutoff(|d| d as f32), i64::MAX);
        let table = PackedCodeTable::new(0.0004);
        assert_eq!(table.det_cutoff(|d| d as f32 * 0.0), i64::MAX);
    }

    #[test]
    fn f64_determinant_is_taken_exactly_where_it_is_exact() {
        // Exactly the filters up to L = 195 (all of octaves 0-3, the first two of octave 4).
        for octave in 0..u32::from(MAX_OCTAVES) {
            for interval in 0..INTERVALS {
                let size = filter_size(octave, interval);
                let filter = ColumnFilter::new(&Filter::octave(octave, interval, 1000));
                assert_eq!(filter.det_exact_in_f64(), size <= 195, "L = {size}");
            }
        }
        // The largest filter that takes the `f64` path (octave 3, L = 195, l = 65): at the
        // extremes of its terms and around them, with every sign, and at random, `f64`
        // rounded to `f32` gives the `i64` determinant's bits.
        let dxx_max = 255 * 129 * 130;
        let dxy_max = 255 * 2 * 65 * 65;
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |max: i32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % (2 * max as u64 + 1)) as i32 - max
        };
        let mut cases = std::vec![(0, -5, 0), (0, 0, 0), (-7, 0, 3)];
        for (a, b, c) in [(1, 1, 1), (1, -1, 1), (-1, -1, 0), (1, -1, 0), (0, 0, 1)] {
            for delta in 0..3 {
                cases.push((
                    a * (dxx_max - delta),
                    b * (dxx_max - delta),
                    c * (dxy_max - delta),
                ));
            }
        }
        cases.extend((0..100_000).map(|_| (next(dxx_max), next(dxx_max), next(dxy_max))));
        for (dxx, dyy, dxy) in cases {
            assert_eq!(
                (det_f64(dxx, dyy, dxy) as f32).to_bits(),
                det_i64_f32(dxx, dyy, dxy).to_bits(),
                "{dxx} {dyy} {dxy}"
            );
        }
    }
}
