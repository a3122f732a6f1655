//! The integral image on the backend's threads, in strips of columns. The core's
//! [`IntegralImage::compute`] runs along each row with a running sum, one row after the other:
//! a serial pass over every pixel, which on a frame of a few megapixels costs as much as a
//! parallel stage spread over several cores. Here each thread fills a strip of columns of every
//! row, starting its running sum of a row at the sum of the row's pixels left of the strip
//! (computed first, by rows). Each table entry is written once, by the same recurrence as the
//! core's (`entry = entry above + sum of the row up to here`, exact integers), so the table is
//! the core's, word for word.

use rayon::prelude::*;

use surfcl_core::{GrayImage, ImageError, IntegralImage};

use super::support::ensure_len;

/// Narrowest strip worth a thread: below it the per-row start-up costs more than it spreads
/// (at 128, a 1920-pixel row gives 16 threads 15 strips).
const MIN_STRIP_COLUMNS: usize = 128;

/// Rows whose left-of-strip sums one task computes.
const ROWS_PER_TASK: usize = 64;

/// The integral image of `image` into `table` (exactly `integral_len` words), on `pool`'s
/// threads when there is one and the image is wide enough, else the core's serial pass.
/// `left_sums` is scratch kept between frames (rows x strips words).
pub(super) fn compute<'t>(
    image: &GrayImage<'_>,
    table: &'t mut [u32],
    pool: Option<&rayon::ThreadPool>,
    left_sums: &mut Vec<u32>,
) -> Result<IntegralImage<'t>, ImageError> {
    let (width, height) = (image.width(), image.height());
    let strips = pool.map_or(1, |p| {
        p.current_num_threads().min(width / MIN_STRIP_COLUMNS)
    });
    let (Some(pool), true) = (pool, strips > 1) else {
        return IntegralImage::compute(image, table);
    };
    // The core's checks of the size and the table's length.
    IntegralImage::from_table(table, width, height)?;
    let stride = width + 1;
    // Strip `k` holds the pixel columns `bounds[k]..bounds[k + 1]`.
    let bounds: Vec<usize> = (0..=strips).map(|k| k * width / strips).collect();
    ensure_len(left_sums, height * strips);
    let left_sums = &mut left_sums[..height * strips];
    let pixels = image.pixels();
    pool.install(|| {
        left_sums
            .par_chunks_mut(ROWS_PER_TASK * strips)
            .zip(pixels.par_chunks(ROWS_PER_TASK * width))
            .for_each(|(sums, rows)| {
                for (row_sums, row) in sums.chunks_exact_mut(strips).zip(rows.chunks_exact(width)) {
                    let mut total = 0u32;
                    for (k, sum) in row_sums.iter_mut().enumerate() {
                        *sum = total;
                        total += row[bounds[k]..bounds[k + 1]]
                            .iter()
                            .map(|&p| u32::from(p))
                            .sum::<u32>();
                    }
                }
            });
    });

    let (top, rows) = table.split_at_mut(stride);
    top.fill(0);
    // Every table row cut at the strip bounds: strip 0 also owns the zero column.
    let mut segments: Vec<Vec<&mut [u32]>> =
        (0..strips).map(|_| Vec::with_capacity(height)).collect();
    for row in rows.chunks_exact_mut(stride) {
        let mut rest = row;
        for (k, strip) in segments.iter_mut().enumerate() {
            let end = if k + 1 == strips {
                rest.len()
            } else {
                bounds[k + 1] - bounds[k] + usize::from(k == 0)
            };
            let (segment, tail) = rest.split_at_mut(end);
            strip.push(segment);
            rest = tail;
        }
    }
    let left_sums = &*left_sums;
    pool.install(|| {
        segments
            .par_iter_mut()
            .enumerate()
            .for_each(|(k, strip)| fill_strip(pixels, width, &bounds, k, strips, left_sums, strip));
    });
    IntegralImage::from_table(table, width, height)
}

/// Fills strip `k`'s segment of every table row (below the zero row): the core's recurrence,
/// the running sum of each row started at the row's pixels left of the strip.
fn fill_strip(
    pixels: &[u8],
    width: usize,
    bounds: &[usize],
    k: usize,
    strips: usize,
    left_sums: &[u32],
    strip: &mut [&mut [u32]],
) {
    let columns = bounds[k]..bounds[k + 1];
    let zero_column = usize::from(k == 0);
    let mut above: Option<&[u32]> = None;
    for (y, segment) in strip.iter_mut().enumerate() {
        let (zero, entries) = segment.split_at_mut(zero_column);
        zero.fill(0);
        let row = &pixels[y * width..][columns.clone()];
        let mut row_sum = left_sums[y * strips + k];
        match above {
            Some(above) => {
                for ((entry, &up), &p) in entries.iter_mut().zip(&above[zero_column..]).zip(row) {
                    row_sum += u32::from(p);
                    *entry = up + row_sum;
                }
            }
            None => {
                for (entry, &p) in entries.iter_mut().zip(row) {
                    row_sum += u32::from(p);
                    *entry = row_sum;
                }
            }
        }
        above = Some(&**segment);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use surfcl_core::integral::integral_len;

    /// The strips give the core's table word for word: widths below, at and above the strip
    /// minimum, uneven strips, saturated and varied pixels, one to several threads.
    #[test]
    fn strips_give_the_core_table() {
        for (width, height) in [(1, 1), (255, 3), (512, 7), (1031, 65), (2000, 130)] {
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
                let mut left = vec![9u32; 3];
                let got = compute(&image, &mut table, Some(&pool), &mut left).unwrap();
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
