//! Box-filter Hessian responses: exact integer terms, the bit-exact `f32` response, and whole
//! octaves in `f32` or packed 8-bit form.

use super::packed::{PackedCodeTable, pack_byte};
use super::{
    INTERVALS, MAX_OCTAVES, SurfConfig, SurfError, check_octave, filter_size, grid_size,
    sample_step, words_per_sample,
};
use core::ops::Range;

use crate::integral::IntegralImage;

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
        let mut s = [0i64; 8];
        let (w, h) = (ii.width() as i64, ii.height() as i64);
        let (r, c, b) = (i64::from(row), i64::from(col), i64::from(self.half));
        if r - b >= 0 && r + b < h && c - b >= 0 && c + b < w {
            // Fast path: the whole footprint is inside, no clamping. Every index below is in the
            // table: the rows touched are r - b ..= r + b + 1 <= height, likewise the columns.
            let t = ii.table();
            let p = (r * (w + 1) + c) as isize;
            for (sum, o) in s.iter_mut().zip(self.offsets.iter()) {
                let v = t[(p + o[3]) as usize]
                    .wrapping_sub(t[(p + o[1]) as usize])
                    .wrapping_sub(t[(p + o[2]) as usize])
                    .wrapping_add(t[(p + o[0]) as usize]);
                *sum = i64::from(v);
            }
        } else {
            for (sum, q) in s.iter_mut().zip(Self::rects_of(self.size).iter()) {
                *sum = i64::from(ii.box_sum(
                    row.saturating_add(q[0]),
                    col.saturating_add(q[1]),
                    q[2],
                    q[3],
                ));
            }
        }
        (s[0] - 3 * s[1], s[2] - 3 * s[3], s[4] + s[5] - s[6] - s[7])
    }

    /// The bit-exact response and the Laplacian sign at pixel `(row, col)`.
    #[inline(always)]
    pub(crate) fn response(&self, ii: &IntegralImage, row: i32, col: i32) -> (f32, i8) {
        let (dxx, dyy, dxy) = self.terms(ii, row, col);
        // Cannot overflow for L <= 771: |Dxx|, |Dyy| < 513 * 771 * 255 ~ 1.0e8, so
        // 100 Dxx Dyy < 1.1e18 < i64::MAX.
        let det = 100 * dxx * dyy - 81 * dxy * dxy;
        let laplacian = if dxx + dyy >= 0 { 1 } else { -1 };
        // `as f32` rounds to nearest even; one f32 multiply: the kernels do the same.
        ((det as f32) * self.norm, laplacian)
    }
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
fn for_each_sample(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    mut f: impl FnMut(usize, [(f32, i8); 4]),
) {
    let step = sample_step(config, octave);
    let (gw, gh) = grid_size(ii.width(), ii.height(), step);
    let filters = octave_filters(ii, octave);
    let step = step as i32;
    let first = rows.start;
    for sy in rows.start.min(gh)..rows.end.min(gh) {
        let row = sy as i32 * step;
        for sx in 0..gw {
            let col = sx as i32 * step;
            let mut r = [(0f32, 0i8); 4];
            for (out, filter) in r.iter_mut().zip(filters.iter()) {
                *out = filter.response(ii, row, col);
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
        return for_each_sample(ii, config, octave, rows, |i, r| {
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

/// Row spans whose vertical differences a filter's eight boxes share: boxes 0 and 1 (Dxx), 2
/// and 3 (Dyy), 4 and 6, 5 and 7 (the Dxy quadrants above and below).
const SPANS: usize = 5;
/// The span of each box of [`Filter::rects_of`].
const SPAN_OF_BOX: [usize; 8] = [0, 0, 1, 2, 3, 4, 3, 4];

/// Words of the `columns` scratch of [`fill_octave_rows_with_columns`](super::fill_octave_rows_with_columns)
/// for an image `width` pixels wide: five rows of the integral table's width.
pub const fn column_scratch_len(width: usize) -> usize {
    SPANS * (width + 1)
}

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
    for_each_sample(ii, config, octave, 0..usize::MAX, |i, r| {
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
/// `u32`; no unsafe casts). The caller has checked the length.
pub(crate) fn fill_f32_bits(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: Range<usize>,
    columns: Option<&mut [u32]>,
    out: &mut [u32],
) {
    debug_assert!(words_per_sample(super::Precision::F32) == 4);
    match columns {
        Some(columns) => for_each_response(ii, config, octave, rows, columns, |i, k, (v, _)| {
            out[i * 4 + k] = v.to_bits();
        }),
        None => for_each_sample(ii, config, octave, rows, |i, r| {
            for (k, (v, _)) in r.iter().enumerate() {
                out[i * 4 + k] = v.to_bits();
            }
        }),
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
        None => for_each_sample(ii, config, octave, rows, |i, r| {
            let mut word = 0u32;
            for (k, &(v, lap)) in r.iter().enumerate() {
                word |= byte(v, lap) << (8 * k);
            }
            out[i] = word;
        }),
    }
}
