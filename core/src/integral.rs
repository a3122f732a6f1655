//! Exact `u32` integral image (summed-area table) and clamped box sums.
//!
//! The table has one zero row and one zero column in front, so it is `(width + 1) x (height + 1)`
//! and entry `(y, x)` holds the sum of all pixels above and left of pixel `(y, x)`, exclusive.
//! A box sum then needs four reads and no branches. Every sum is exact because images are limited
//! to [`MAX_PIXELS`](crate::image::MAX_PIXELS) pixels (`255 * pixels <= u32::MAX`).
//!
//! ```
//! use surfcl_core::{image::GrayImage, integral::{IntegralImage, integral_len}};
//! let pixels = [1u8, 2, 3, 4, 5, 6];
//! let image = GrayImage::new(&pixels, 3, 2).unwrap();
//! let mut table = [0u32; 12];
//! assert_eq!(integral_len(3, 2).unwrap(), 12);
//! let integral = IntegralImage::compute(&image, &mut table).unwrap();
//! assert_eq!(integral.box_sum(0, 0, 2, 3), 21);
//! assert_eq!(integral.box_sum(1, 1, 1, 2), 11);
//! ```

use crate::image::{GrayImage, ImageError, check_dimensions};

/// Number of `u32` entries of the integral image of a `width x height` image (checked: the size
/// must be a valid image size). See [`integral_capacity`] for sizing a static buffer.
pub fn integral_len(width: usize, height: usize) -> Result<usize, ImageError> {
    check_dimensions(width, height)?;
    Ok(integral_capacity(width, height))
}

/// `(max_width + 1) * (max_height + 1)`: the `u32` entries of the integral image of the largest
/// frame, as a `const fn` so that firmware can size a `static` with it
/// (`static mut TABLE: [u32; integral_capacity(320, 240)]`). Every image of at most
/// `max_width x max_height` pixels needs at most this many (its [`integral_len`]; pass
/// `&mut table[..len]`). Saturates instead of overflowing; no size checks (see [`integral_len`]).
pub const fn integral_capacity(max_width: usize, max_height: usize) -> usize {
    max_width
        .saturating_add(1)
        .saturating_mul(max_height.saturating_add(1))
}

/// An integral image borrowed from a caller-provided buffer.
#[derive(Debug, Clone, Copy)]
pub struct IntegralImage<'a> {
    table: &'a [u32],
    width: usize,
    height: usize,
}

impl<'a> IntegralImage<'a> {
    /// Computes the integral image of `image` into `table`, which must have exactly
    /// [`integral_len`] entries.
    pub fn compute(image: &GrayImage<'_>, table: &'a mut [u32]) -> Result<Self, ImageError> {
        let (width, height) = (image.width(), image.height());
        let len = integral_len(width, height)?;
        if table.len() != len {
            return Err(ImageError::BufferLength {
                expected: len,
                actual: table.len(),
            });
        }
        let stride = width + 1;
        table[..stride].fill(0);
        for (y, row) in image.pixels().chunks_exact(width).enumerate() {
            let (above, current) = table[y * stride..(y + 2) * stride].split_at_mut(stride);
            current[0] = 0;
            let mut row_sum = 0u32;
            for (x, &p) in row.iter().enumerate() {
                row_sum += u32::from(p);
                current[x + 1] = above[x + 1] + row_sum;
            }
        }
        Ok(Self {
            table,
            width,
            height,
        })
    }

    /// Wraps an already computed table (for example one read back from a GPU).
    pub fn from_table(table: &'a [u32], width: usize, height: usize) -> Result<Self, ImageError> {
        let len = integral_len(width, height)?;
        if table.len() != len {
            return Err(ImageError::BufferLength {
                expected: len,
                actual: table.len(),
            });
        }
        Ok(Self {
            table,
            width,
            height,
        })
    }

    /// Image width.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Image height.
    pub fn height(&self) -> usize {
        self.height
    }
    /// The raw table, `(width + 1) * (height + 1)` entries, row-major.
    pub fn table(&self) -> &'a [u32] {
        self.table
    }

    /// Sum of the pixels in rows `row..row + rows` and columns `col..col + cols`, with the box
    /// clipped to the image (parts outside count as zero, as in OpenSURF's `BoxIntegral`).
    /// Negative or empty boxes give 0.
    #[inline]
    pub fn box_sum(&self, row: i32, col: i32, rows: i32, cols: i32) -> u32 {
        let clamp_row = |r: i32| r.clamp(0, self.height as i32) as usize;
        let clamp_col = |c: i32| c.clamp(0, self.width as i32) as usize;
        let (r0, r1) = (clamp_row(row), clamp_row(row.saturating_add(rows)));
        let (c0, c1) = (clamp_col(col), clamp_col(col.saturating_add(cols)));
        if r1 <= r0 || c1 <= c0 {
            return 0;
        }
        let stride = self.width + 1;
        let t = self.table;
        // Wrapping arithmetic: the true result is a non-negative sum that fits in u32, so the
        // intermediate wrap-around cancels exactly (the OpenCL kernels do the same).
        t[r1 * stride + c1]
            .wrapping_sub(t[r0 * stride + c1])
            .wrapping_sub(t[r1 * stride + c0])
            .wrapping_add(t[r0 * stride + c0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_direct_sum_on_random_images() {
        use rand::{Rng, SeedableRng, rngs::StdRng};
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..20 {
            let (w, h) = (rng.gen_range(1..40), rng.gen_range(1..40));
            let pixels: std::vec::Vec<u8> = (0..w * h).map(|_| rng.r#gen()).collect();
            let image = GrayImage::new(&pixels, w, h).unwrap();
            let mut table = std::vec![0u32; integral_len(w, h).unwrap()];
            let ii = IntegralImage::compute(&image, &mut table).unwrap();
            for _ in 0..50 {
                let (r, c) = (
                    rng.gen_range(-5..h as i32 + 5),
                    rng.gen_range(-5..w as i32 + 5),
                );
                let (rows, cols) = (rng.gen_range(0..20), rng.gen_range(0..20));
                let mut direct = 0u32;
                for y in r.max(0)..(r + rows).min(h as i32) {
                    for x in c.max(0)..(c + cols).min(w as i32) {
                        direct += u32::from(pixels[y as usize * w + x as usize]);
                    }
                }
                assert_eq!(ii.box_sum(r, c, rows, cols), direct);
            }
        }
    }

    #[test]
    fn capacity_is_the_checked_length_and_bounds_smaller_images() {
        const QVGA: usize = integral_capacity(320, 240);
        assert_eq!(QVGA, 321 * 241);
        for (w, h) in [(1, 1), (320, 240), (17, 400), (4096, 4112)] {
            assert_eq!(integral_len(w, h).unwrap(), integral_capacity(w, h));
            assert!(integral_len(w / 2 + 1, h).unwrap() <= integral_capacity(w, h));
        }
        assert_eq!(integral_capacity(usize::MAX, 2), usize::MAX);
    }

    #[test]
    fn largest_image_sums_exactly_and_larger_is_rejected() {
        // A white image of the largest allowed size: the full sum is 255 * MAX_PIXELS <= u32::MAX.
        let w = 4096;
        let h = crate::image::MAX_PIXELS / w;
        let pixels = std::vec![255u8; w * h];
        let image = GrayImage::new(&pixels, w, h).unwrap();
        let mut table = std::vec![0u32; integral_len(w, h).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        assert_eq!(ii.box_sum(0, 0, h as i32, w as i32) as usize, 255 * w * h);
        assert!(matches!(
            integral_len(w, h + 1),
            Err(ImageError::TooLarge { .. })
        ));
        assert!(matches!(
            integral_len(usize::MAX, 2),
            Err(ImageError::TooLarge { .. })
        ));
        assert_eq!(integral_len(0, 5), Err(ImageError::Empty));
        let mut small = [0u32; 3];
        assert!(matches!(
            IntegralImage::compute(&image, &mut small),
            Err(ImageError::BufferLength { .. })
        ));
    }
}
