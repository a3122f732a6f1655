//! The Haar wavelets of the descriptor and the orientation: exact integer differences of two
//! half boxes of the integral table, one function per use (each wavelet alone, both at once from
//! the nine table corners they share, and the half boxes themselves for the Haar maps).

use crate::integral::IntegralImage;

/// Haar wavelet in x of (even or odd) size `s` at `(row, col)`: right half minus left half,
/// `box(row - s/2, col, s, s/2) - box(row - s/2, col - s/2, s, s/2)` (integer, clipped boxes).
#[inline]
pub fn haar_x(ii: &IntegralImage, row: i32, col: i32, s: i32) -> i64 {
    let h = s / 2;
    i64::from(ii.box_sum(row - h, col, s, h)) - i64::from(ii.box_sum(row - h, col - h, s, h))
}

/// Haar wavelet in y of size `s` at `(row, col)`: lower half minus upper half,
/// `box(row, col - s/2, s/2, s) - box(row - s/2, col - s/2, s/2, s)`.
#[inline]
pub fn haar_y(ii: &IntegralImage, row: i32, col: i32, s: i32) -> i64 {
    let h = s / 2;
    i64::from(ii.box_sum(row, col - h, h, s)) - i64::from(ii.box_sum(row - h, col - h, h, s))
}

/// Both Haar wavelets of size `s` at `(row, col)`, exactly [`haar_x`] and [`haar_y`]: for an
/// even size from the 9 table corners the two share, with their rows and columns clamped to
/// the table as [`IntegralImage::box_sum`] clamps each box's (a no-op inside the image; an
/// empty clamped box gives 0 either way, its wrapping corner sums cancelling); an odd size
/// through the clipped box sums.
#[inline(always)]
pub(crate) fn haar_pair(ii: &IntegralImage, row: i32, col: i32, s: i32) -> (i64, i64) {
    if s < 2 || s % 2 != 0 {
        return (haar_x(ii, row, col, s), haar_y(ii, row, col, s));
    }
    let h = s / 2;
    let (w, ht) = (ii.width() as i32, ii.height() as i32);
    let t = ii.table();
    let stride = w as usize + 1;
    let inside = row >= h && col >= h && row <= ht - h && col <= w - h;
    // Table offsets of rows `row - h, row, row + h` and columns `col - h, col, col + h`; the
    // clamping is skipped for the usual sample, inside the frame, where it is never needed.
    let ((r0, rc, r1), (c0, cc, c1)) = if inside {
        let (r, c, h) = (row as usize * stride, col as usize, h as usize);
        ((r - h * stride, r, r + h * stride), (c - h, c, c + h))
    } else {
        let clamp_row = |r: i32| r.clamp(0, ht) as usize * stride;
        let clamp_col = |c: i32| c.clamp(0, w) as usize;
        (
            (
                clamp_row(row.saturating_sub(h)),
                clamp_row(row),
                clamp_row(row.saturating_add(h)),
            ),
            (
                clamp_col(col.saturating_sub(h)),
                clamp_col(col),
                clamp_col(col.saturating_add(h)),
            ),
        )
    };
    haar_from_corners([
        t[r0 + c0],
        t[r0 + cc],
        t[r0 + c1],
        t[rc + c0],
        t[rc + c1],
        t[r1 + c0],
        t[r1 + cc],
        t[r1 + c1],
    ])
}

/// `(right - left, lower - upper)` of [`half_boxes`], in `i64` as [`haar_x`] and [`haar_y`].
#[inline(always)]
fn haar_from_corners(corners: [u32; 8]) -> (i64, i64) {
    let [right, left, lower, upper] = half_boxes(corners);
    (
        i64::from(right) - i64::from(left),
        i64::from(lower) - i64::from(upper),
    )
}

/// The four half boxes of a Haar pair from its nine table corners (rows `r0, row, r1` by columns
/// `c0, col, c1`, the centre unused), in wrapping `u32` as [`IntegralImage::box_sum`]: right,
/// left, lower and upper half.
#[inline(always)]
pub(crate) fn half_boxes([a, b, c, d, f, g, m, i]: [u32; 8]) -> [u32; 4] {
    [
        i.wrapping_sub(c).wrapping_sub(m).wrapping_add(b),
        m.wrapping_sub(b).wrapping_sub(g).wrapping_add(a),
        i.wrapping_sub(f).wrapping_sub(g).wrapping_add(d),
        f.wrapping_sub(c).wrapping_sub(d).wrapping_add(a),
    ]
}
