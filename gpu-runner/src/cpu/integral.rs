//! The integral image on the backend's threads, in bands of rows. The core's
//! [`IntegralImage::compute`] runs along each row with a running sum, one row after the other:
//! a serial pass over every pixel, which on a frame of a few megapixels costs as much as a
//! parallel stage spread over several cores. Here each band of rows is first summed as if the
//! image began at its first row (the core's recurrence), all bands at once; then the table row
//! above each band (the sum of the bands above's last rows, a few thousand additions) is added
//! to every row of the band, rows spread over the threads. Entries are sums of the same pixels
//! in `u32` arithmetic that wraps as the core's release build does, so the table is the core's,
//! word for word.
//!
//! Bands of rows, not strips of columns: each thread writes whole rows, so no two threads
//! write the same cache line at the same time (strips of a row share a line at every strip
//! bound, on every row, while the threads go down the rows together).

use rayon::prelude::*;

use surfcl_core::{GrayImage, ImageError, IntegralImage};

use super::support::ensure_len;

/// Fewest rows of a band: below it the second pass's per-band start costs more than the band
/// spreads.
const MIN_BAND_ROWS: usize = 16;

/// Rows per task of the second pass.
const CARRY_ROWS_PER_TASK: usize = 16;

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
    let bands = pool.map_or(1, |p| p.current_num_threads().min(height / MIN_BAND_ROWS));
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
    pool.install(|| {
        rows.par_chunks_mut(band_rows * stride)
            .zip(pixels.par_chunks(band_rows * width))
            .for_each(|(band, band_pixels)| band_integral(band, band_pixels, width));
    });

    // `carries[b]`: the table row above band `b + 1`, the running sum of the bands' last rows.
    ensure_len(carries, bands * stride);
    let carries = &mut carries[..bands * stride];
    let mut above: Option<&[u32]> = None;
    for (carry, last_row) in carries.chunks_exact_mut(stride).zip(
        rows.chunks(band_rows * stride)
            .filter_map(|b| b.rchunks_exact(stride).next()),
    ) {
        carry.copy_from_slice(last_row);
        if let Some(above) = above {
            add_in_place(carry, above);
        }
        above = Some(carry);
    }

    let carries = &*carries;
    let below_first = rows.get_mut(band_rows * stride..).unwrap_or_default();
    pool.install(|| {
        below_first
            .par_chunks_mut(CARRY_ROWS_PER_TASK * stride)
            .enumerate()
            .for_each(|(task, chunk)| {
                for (k, row) in chunk.chunks_exact_mut(stride).enumerate() {
                    // Row `y` of the table below the zero row lies in band `y / band_rows`.
                    let y = band_rows + task * CARRY_ROWS_PER_TASK + k;
                    let carry = &carries[(y / band_rows - 1) * stride..][..stride];
                    add_in_place(row, carry);
                }
            });
    });
    IntegralImage::from_table(table, width, height)
}

/// The integral table of the rows of `pixels` (`width` wide) into `band`, as if the image began
/// at its first row: the core's recurrence (`entry = entry above + sum of the row up to here`).
fn band_integral(band: &mut [u32], pixels: &[u8], width: usize) {
    let stride = width + 1;
    let mut above: Option<&[u32]> = None;
    for (entries, row) in band
        .chunks_exact_mut(stride)
        .zip(pixels.chunks_exact(width))
    {
        entries[0] = 0;
        let mut row_sum = 0u32;
        match above {
            Some(above) => {
                for ((entry, &up), &p) in entries[1..].iter_mut().zip(&above[1..]).zip(row) {
                    row_sum = row_sum.wrapping_add(u32::from(p));
                    *entry = up.wrapping_add(row_sum);
                }
            }
            None => {
                for (entry, &p) in entries[1..].iter_mut().zip(row) {
                    row_sum = row_sum.wrapping_add(u32::from(p));
                    *entry = row_sum;
                }
            }
        }
        above = Some(entries);
    }
}

/// `row += carry`, word by word (wrapping, as the core's release build adds).
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
