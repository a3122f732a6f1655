//! Dense maps of the descriptor's Haar responses, for frames with many keypoints of one size.
//!
//! A SURF-64 descriptor reads 576 Haar pairs, each from eight scattered integral-table values,
//! and its samples share no corners (they sit `scale` apart, the wavelets are `2 round(scale)`
//! wide). Most keypoints of a frame come from the first octave, where `round(scale)` is 2 or 3
//! (about 70% of them on a 640x480 or 1920x1080 photograph). For such a size, computing the Haar
//! pair once at every pixel, along whole table rows (contiguous reads, vector arithmetic), and
//! then reading one 4-byte cell per sample costs less than the scattered reads as soon as a few
//! hundred keypoints share the size. Which sizes get a map is the caller's choice (the std CPU
//! backend weighs keypoints against pixels); the results are the same bits either way.
//!
//! A map of half-size `h` covers the pixels where the wavelet lies inside the image, columns
//! `h ..= width - h` and rows `h ..= height - h` (the only samples the descriptor's whole-row
//! fast path takes; others keep the clamped table reads). Each cell holds `(dx, dy)`, the
//! integers [`crate::haar::haar_x`] and [`crate::haar::haar_y`] give for size `2 h`, as
//! `i16`: for 8-bit pixels a half wavelet is `2 h x h` pixels of at most 255, so the difference
//! of two halves fits while `2 h^2 255 < 2^15`, that is `h <= 8` ([`HaarMap::MAX_HALF`]).

use core::ops::Range;

use crate::haar::half_boxes;
use crate::integral::IntegralImage;

/// One cell of a [`HaarMap`]: `[dx, dy]`.
pub type HaarCell = [i16; 2];

/// Why a [`HaarMap`] could not be built or filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaarMapError {
    /// The half-size is 0 or above [`HaarMap::MAX_HALF`].
    Half(usize),
    /// The image is smaller than the wavelet (`2 half` pixels) in some direction.
    ImageTooSmall {
        /// Half-size of the map.
        half: usize,
        /// Image width.
        width: usize,
        /// Image height.
        height: usize,
    },
    /// The cell buffer does not have one cell per pixel of the requested rows.
    CellsLength {
        /// Cells required.
        expected: usize,
        /// Cells given.
        actual: usize,
    },
    /// The requested rows are not rows of the map.
    Rows {
        /// First row requested.
        start: usize,
        /// One past the last row requested.
        end: usize,
        /// Rows of the map.
        rows: usize,
    },
}

impl core::fmt::Display for HaarMapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            HaarMapError::Half(h) => write!(
                f,
                "Haar map half-size {h} is outside 1..={}",
                HaarMap::MAX_HALF
            ),
            HaarMapError::ImageTooSmall {
                half,
                width,
                height,
            } => write!(
                f,
                "a {width}x{height} image is smaller than a Haar wavelet of size {}",
                2 * half
            ),
            HaarMapError::CellsLength { expected, actual } => {
                write!(f, "Haar map buffer has {actual} cells, {expected} required")
            }
            HaarMapError::Rows { start, end, rows } => {
                write!(f, "rows {start}..{end} requested of a {rows}-row Haar map")
            }
        }
    }
}

impl core::error::Error for HaarMapError {}

/// The Haar pairs of half-size `half` at every pixel where the wavelet lies inside the image
/// (see the module docs), borrowed from a caller's buffer.
#[derive(Debug, Clone, Copy)]
pub struct HaarMap<'a> {
    half: usize,
    columns: usize,
    rows: usize,
    image_width: usize,
    image_height: usize,
    cells: &'a [HaarCell],
}

impl<'a> HaarMap<'a> {
    /// The largest half-size whose responses fit the `i16` cells.
    pub const MAX_HALF: usize = 8;

    /// `(columns, rows)` of the map of half-size `half` for a `width x height` image.
    pub fn dimensions(
        width: usize,
        height: usize,
        half: usize,
    ) -> Result<(usize, usize), HaarMapError> {
        if half == 0 || half > Self::MAX_HALF {
            return Err(HaarMapError::Half(half));
        }
        if width < 2 * half || height < 2 * half {
            return Err(HaarMapError::ImageTooSmall {
                half,
                width,
                height,
            });
        }
        Ok((width - 2 * half + 1, height - 2 * half + 1))
    }

    /// Cells of the map of half-size `half` for a `width x height` image.
    pub fn cells_len(width: usize, height: usize, half: usize) -> Result<usize, HaarMapError> {
        let (columns, rows) = Self::dimensions(width, height, half)?;
        Ok(columns * rows)
    }

    /// Computes the whole map of half-size `half` of `ii` into `cells` (exactly
    /// [`Self::cells_len`] long).
    pub fn compute(
        ii: &IntegralImage<'_>,
        half: usize,
        cells: &'a mut [HaarCell],
    ) -> Result<Self, HaarMapError> {
        let (_, rows) = Self::dimensions(ii.width(), ii.height(), half)?;
        fill_rows(ii, half, 0..rows, cells)?;
        Self::from_filled(ii, half, cells)
    }

    /// A map whose `cells` were filled by [`fill_rows`] over all its
    /// rows, for `ii` and `half` (for a caller that fills bands of rows on several threads).
    /// Cells filled otherwise give wrong descriptors, never a panic.
    pub fn from_filled(
        ii: &IntegralImage<'_>,
        half: usize,
        cells: &'a [HaarCell],
    ) -> Result<Self, HaarMapError> {
        let (columns, rows) = Self::dimensions(ii.width(), ii.height(), half)?;
        if cells.len() != columns * rows {
            return Err(HaarMapError::CellsLength {
                expected: columns * rows,
                actual: cells.len(),
            });
        }
        Ok(Self {
            half,
            columns,
            rows,
            image_width: ii.width(),
            image_height: ii.height(),
            cells,
        })
    }

    /// The half-size `h` of the map (wavelets of size `2 h`).
    pub fn half(&self) -> usize {
        self.half
    }

    /// Whether the map was computed for an image of `ii`'s size.
    pub(crate) fn fits(&self, ii: &IntegralImage<'_>) -> bool {
        self.image_width == ii.width() && self.image_height == ii.height()
    }

    /// `(dx, dy)` at pixel `(row, col)`, which must lie in the map (see the module docs): the
    /// caller checks `half <= row <= height - half` and the same for columns first.
    #[inline(always)]
    pub(crate) fn at(&self, row: usize, col: usize) -> HaarCell {
        let index = (row - self.half) * self.columns + (col - self.half);
        debug_assert!(row >= self.half && col - self.half < self.columns);
        debug_assert!(row - self.half < self.rows);
        self.cells[index]
    }
}

/// Fills map rows `rows` (map row `j` is image row `j + half`) of the map of half-size `half` of
/// `ii` into `cells`, which has one cell per pixel of those rows: a band of [`HaarMap`], so that
/// bands can be filled on several threads. Inlined into its caller, so that a std layer can
/// compile it with wider vector instructions.
#[inline(always)]
pub fn fill_rows(
    ii: &IntegralImage<'_>,
    half: usize,
    rows: Range<usize>,
    cells: &mut [HaarCell],
) -> Result<(), HaarMapError> {
    let (columns, map_rows) = HaarMap::dimensions(ii.width(), ii.height(), half)?;
    if rows.start > rows.end || rows.end > map_rows {
        return Err(HaarMapError::Rows {
            start: rows.start,
            end: rows.end,
            rows: map_rows,
        });
    }
    let expected = rows.len() * columns;
    if cells.len() != expected {
        return Err(HaarMapError::CellsLength {
            expected,
            actual: cells.len(),
        });
    }
    let table = ii.table();
    let stride = ii.width() + 1;
    // Table columns `0 ..= width` feed the map columns `0 .. columns` at offsets 0, h and 2 h.
    let span = columns + 2 * half;
    // `dimensions` makes `columns` at least 1 (`width >= 2 half`).
    for (j, out) in rows.zip(cells.chunks_exact_mut(columns)) {
        // Map row j: the wavelet rows are table rows j, j + h and j + 2 h.
        let line = |r: usize| &table[r * stride..r * stride + span];
        let (top, mid, bottom) = (line(j), line(j + half), line(j + 2 * half));
        fill_row(top, mid, bottom, half, out);
    }
    Ok(())
}

/// One map row from its three table rows: the [`half_boxes`] of the nine corners at columns
/// `i, i + half, i + 2 half`, differenced as the descriptor's fast path does (`i32`, exact, as
/// both halves are below `2^31`) and narrowed to `i16` (exact below [`HaarMap::MAX_HALF`]).
#[inline(always)]
fn fill_row(top: &[u32], mid: &[u32], bottom: &[u32], half: usize, out: &mut [HaarCell]) {
    let n = out.len();
    // Equal-length slices, so the loop has no bounds checks and vectorises.
    let (a, b, c) = (
        &top[..n],
        &top[half..half + n],
        &top[2 * half..2 * half + n],
    );
    let (d, f) = (&mid[..n], &mid[2 * half..2 * half + n]);
    let (g, m, i) = (
        &bottom[..n],
        &bottom[half..half + n],
        &bottom[2 * half..2 * half + n],
    );
    for k in 0..n {
        let [right, left, lower, upper] =
            half_boxes([a[k], b[k], c[k], d[k], f[k], g[k], m[k], i[k]]);
        out[k] = [
            (right as i32).wrapping_sub(left as i32) as i16,
            (lower as i32).wrapping_sub(upper as i32) as i16,
        ];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::haar::{haar_x, haar_y};
    use crate::image::GrayImage;
    use crate::integral::integral_len;

    fn noise(w: usize, h: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..w * h)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 56) as u8
            })
            .collect()
    }

    fn check_every_cell(pixels: &[u8], w: usize, h: usize) {
        let image = GrayImage::new(pixels, w, h).unwrap();
        let mut table = vec![0u32; integral_len(w, h).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        for half in 1..=HaarMap::MAX_HALF {
            let Ok(len) = HaarMap::cells_len(w, h, half) else {
                assert!(w < 2 * half || h < 2 * half);
                continue;
            };
            let mut cells = vec![[0i16; 2]; len];
            let map = HaarMap::compute(&ii, half, &mut cells).unwrap();
            for row in half..=h - half {
                for col in half..=w - half {
                    let (r, c, s) = (row as i32, col as i32, 2 * half as i32);
                    let expected = [haar_x(&ii, r, c, s), haar_y(&ii, r, c, s)];
                    let got = map.at(row, col).map(i64::from);
                    assert_eq!(got, expected, "half {half} at ({row}, {col}) of {w}x{h}");
                }
            }
        }
    }

    #[test]
    fn every_cell_is_the_wavelet_pair() {
        check_every_cell(&noise(37, 29, 1), 37, 29);
        check_every_cell(&noise(16, 16, 2), 16, 16);
        // 0/255 checkerboard blocks give the largest responses the `i16` cells must hold.
        let (w, h) = (40, 36);
        let blocks: Vec<u8> = (0..w * h)
            .map(|p| {
                if (p % w / 8 + p / w / 8) % 2 == 0 {
                    255
                } else {
                    0
                }
            })
            .collect();
        check_every_cell(&blocks, w, h);
        let halves: Vec<u8> = (0..w * h)
            .map(|p| if p % w < w / 2 { 255 } else { 0 })
            .collect();
        check_every_cell(&halves, w, h);
    }

    #[test]
    fn bands_equal_the_whole_map() {
        let (w, h) = (50, 41);
        let pixels = noise(w, h, 7);
        let image = GrayImage::new(&pixels, w, h).unwrap();
        let mut table = vec![0u32; integral_len(w, h).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        let half = 3;
        let (columns, rows) = HaarMap::dimensions(w, h, half).unwrap();
        let mut whole = vec![[0i16; 2]; columns * rows];
        HaarMap::compute(&ii, half, &mut whole).unwrap();
        let mut banded = vec![[7i16; 2]; columns * rows];
        for (band, chunk) in banded.chunks_mut(4 * columns).enumerate() {
            let start = band * 4;
            fill_rows(&ii, half, start..start + chunk.len() / columns, chunk).unwrap();
        }
        assert_eq!(whole, banded);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let pixels = noise(10, 8, 3);
        let image = GrayImage::new(&pixels, 10, 8).unwrap();
        let mut table = vec![0u32; integral_len(10, 8).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        assert_eq!(HaarMap::cells_len(10, 8, 0), Err(HaarMapError::Half(0)));
        assert_eq!(HaarMap::cells_len(10, 8, 9), Err(HaarMapError::Half(9)));
        assert!(matches!(
            HaarMap::cells_len(10, 8, 5),
            Err(HaarMapError::ImageTooSmall { .. })
        ));
        assert_eq!(HaarMap::cells_len(10, 8, 4), Ok(3));
        let mut short = vec![[0i16; 2]; 5];
        assert!(matches!(
            HaarMap::compute(&ii, 2, &mut short),
            Err(HaarMapError::CellsLength { .. })
        ));
        let (columns, _) = HaarMap::dimensions(10, 8, 2).unwrap();
        let mut band = vec![[0i16; 2]; columns];
        assert!(matches!(
            fill_rows(&ii, 2, 4..6, &mut band),
            Err(HaarMapError::Rows { .. })
        ));
        assert!(fill_rows(&ii, 2, 4..5, &mut band).is_ok());
    }
}
