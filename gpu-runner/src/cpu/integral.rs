//! The integral image on the backend's threads, in bands of rows. The core's
//! [`IntegralImage::compute`] runs along each row with a running sum, one row after the other:
//! a serial pass over every pixel, which on a frame of a few megapixels costs as much as a
//! parallel stage spread over several cores. Here the table is written in one pass, all bands
//! at once, each band starting from the table row above it. That row is found first, from
//! the pixels alone: each band sums its pixels left of every column (what its rows add to the
//! table row below it, a pass over the pixels that writes one row), and the rows above the
//! bands are the running sums of those, a few thousand additions. The table, the largest
//! buffer of the frame, is thus written once and not read back. Entries are sums of the same
//! pixels in `u32` arithmetic that wraps as the core's release build does, so the table is the
//! core's, word for word.
//!
//! Bands of rows, not strips of columns: each thread writes whole rows, so no two threads
//! write the same cache line at the same time (strips of a row share a line at every strip
//! bound, on every row, while the threads go down the rows together).

use rayon::prelude::*;

use surfcl_core::{GrayImage, ImageError, IntegralImage};

use super::support::{ensure_len, keep_awake};

/// Fewest rows of a band: below it the rows above the bands cost more than the bands spread.
const MIN_BAND_ROWS: usize = 16;

/// Bands per thread: a thread on a busier core then holds up the others for half a band.
const BANDS_PER_THREAD: usize = 2;

/// The integral image of `image` into `table` (exactly `integral_len` words), on `pool`'s
/// threads when there is one and the image has rows enough, else the core's serial pass.
/// `carries` is scratch kept between frames (one table row per band).
pub(super) fn compute<'t>(
    image: &GrayImage<'_>,
    table: &'t mut [u32],
    pool: Option<&rayon::ThreadPool>,
    carries: &mut Vec<u32>,
) -> Result<IntegralImage<'t>, ImageError> {
    let (width, height) = (image.width(), image.height());
    let bands = pool.map_or(1, |p| {
        (p.current_num_threads() * BANDS_PER_THREAD).min(height / MIN_BAND_ROWS)
    });
    let (Some(pool), true) = (pool, bands > 1) else {
        return IntegralImage::compute(image, table);
    };
    // The core's checks of the size and the table's length.
    IntegralImage::from_table(table, width, height)?;
    let stride = width + 1;
    let band_rows = height.div_ceil(bands);
    let bands = height.div_ceil(band_rows);
    let (top, rows) = table.split_at_mut(stride);
    top.fill(0);
    let pixels = image.pixels();

    // `carries[b]`: the table row above band `b`. First `carries[b + 1]` gets what band `b`'s
    // rows add to the row below them, then the running sum down the bands makes it the row.
    ensure_len(carries, bands * stride);
    let carries = &mut carries[..bands * stride];
    let (first, below_first) = carries.split_at_mut(stride);
    first.fill(0);
    pool.install(|| {
        below_first
            .par_chunks_mut(stride)
            .zip(pixels.par_chunks(band_rows * width))
            .for_each(|(added, band_pixels)| band_row_sums(added, band_pixels, width));
    });
    keep_awake(Some(pool), || {
        for b in 1..bands {
            let (above, rest) = carries.split_at_mut(b * stride);
            let previous = &above[(b - 1) * stride..];
            add_in_place(&mut rest[..stride], previous);
        }
    });

    let carries = &*carries;
    pool.install(|| {
        rows.par_chunks_mut(band_rows * stride)
            .zip(pixels.par_chunks(band_rows * width))
            .zip(carries.par_chunks(stride))
            .for_each(|((band, band_pixels), above)| {
                band_integral(band, band_pixels, width, above);
            });
    });
    IntegralImage::from_table(table, width, height)
}

/// `added[x]`: the sum of the pixels of the rows of `pixels` (`width` wide) left of column `x`,
/// for `x` in `0..=width`: what these rows add to every entry of the table row below them.
fn band_row_sums(added: &mut [u32], pixels: &[u8], width: usize) {
    added.fill(0);
    let Some((_, columns)) = added.split_first_mut() else {
        return;
    };
    for row in pixels.chunks_exact(width) {
        for (sum, &p) in columns.iter_mut().zip(row) {
            *sum = sum.wrapping_add(u32::from(p));
        }
    }
    let mut left = 0u32;
    for entry in columns {
        left = left.wrapping_add(*entry);
        *entry = left;
    }
}

/// The integral table of the rows of `pixels` (`width` wide) into `band`, below the table row
/// `above`: the core's recurrence (`entry = entry above + sum of the row up to here`).
fn band_integral(band: &mut [u32], pixels: &[u8], width: usize, above: &[u32]) {
    let stride = width + 1;
    let mut above = above;
    for (entries, row) in band
        .chunks_exact_mut(stride)
        .zip(pixels.chunks_exact(width))
    {
        entries[0] = 0;
        let mut row_sum = 0u32;
        for ((entry, &up), &p) in entries[1..].iter_mut().zip(&above[1..]).zip(row) {
            row_sum = row_sum.wrapping_add(u32::from(p));
            *entry = up.wrapping_add(row_sum);
        }
        above = entries;
    }
}

/// `row += carry`, word by word (wrapping).
fn add_in_place(row: &mut [u32], carry: &[u32]) {
    for (entry, &c) in row.iter_mut().zip(carry) {
        *entry = entry.wrapping_add(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use surfcl_core::integral::integral_len;

    /// The bands give the core's table word for word: heights below, at and above the band
    /// minimum, a last band shorter than the others, saturated and varied pixels, one to
    /// several threads.
    #[test]
    fn bands_give_the_core_table() {
        for (width, height) in [
            (1, 1),
            (255, 3),
            (512, 16),
            (7, 33),
            (1031, 65),
            (2000, 130),
            (300, 1001),
        ] {
            let pixels: Vec<u8> = (0..width * height)
                .map(|i| {
                    if i % 7 == 0 {
                        255
                    } else {
                        (i * 31 % 251) as u8
                    }
                })
                .collect();
            let image = GrayImage::new(&pixels, width, height).unwrap();
            let len = integral_len(width, height).unwrap();
            let mut expected = vec![0u32; len];
            IntegralImage::compute(&image, &mut expected).unwrap();
            for threads in [2, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                // A dirty table and scratch, as a previous frame leaves them.
                let mut table = vec![7u32; len];
                let mut carries = vec![9u32; 3];
                let got = compute(&image, &mut table, Some(&pool), &mut carries).unwrap();
                assert_eq!(
                    got.table(),
                    &expected[..],
                    "{width}x{height}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn a_table_of_the_wrong_length_is_refused() {
        let pixels = vec![1u8; 600 * 2];
        let image = GrayImage::new(&pixels, 600, 2).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut table = vec![0u32; 10];
        let result = compute(&image, &mut table, Some(&pool), &mut Vec::new());
        assert!(matches!(result, Err(ImageError::BufferLength { .. })));
    }
}
