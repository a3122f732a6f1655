//! A borrowed 8-bit grayscale image with a checked constructor.

use core::fmt;

/// Largest number of pixels an image may have: every box sum of 8-bit pixels must fit in the
/// `u32` integral image, i.e. `255 * width * height <= u32::MAX` (about 4096 x 4112 pixels).
pub const MAX_PIXELS: usize = (u32::MAX / 255) as usize;

/// Largest width or height accepted (keeps `width + 1` and coordinates well inside `u16`/`i32`
/// arithmetic on every target, including the OpenCL kernels).
pub const MAX_DIMENSION: usize = 16384;

/// Why an image (or a buffer that goes with it) was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageError {
    /// Width or height is zero.
    Empty,
    /// `width * height` overflows, or exceeds [`MAX_PIXELS`], or a side exceeds [`MAX_DIMENSION`].
    TooLarge {
        /// Declared width.
        width: usize,
        /// Declared height.
        height: usize,
    },
    /// A buffer does not have the length the operation needs.
    BufferLength {
        /// Length required.
        expected: usize,
        /// Length given.
        actual: usize,
    },
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Empty => write!(f, "image has zero width or height"),
            ImageError::TooLarge { width, height } => write!(
                f,
                "image {width}x{height} is too large (at most {MAX_PIXELS} pixels and {MAX_DIMENSION} per side)"
            ),
            ImageError::BufferLength { expected, actual } => {
                write!(f, "buffer has {actual} elements, {expected} required")
            }
        }
    }
}

impl core::error::Error for ImageError {}

/// Checks a declared image size before anything is allocated or indexed with it.
///
/// Returns `width * height`.
pub fn check_dimensions(width: usize, height: usize) -> Result<usize, ImageError> {
    if width == 0 || height == 0 {
        return Err(ImageError::Empty);
    }
    let pixels = width
        .checked_mul(height)
        .ok_or(ImageError::TooLarge { width, height })?;
    if pixels > MAX_PIXELS || width > MAX_DIMENSION || height > MAX_DIMENSION {
        return Err(ImageError::TooLarge { width, height });
    }
    Ok(pixels)
}

/// Luminance of one RGB pixel, `round(0.299 R + 0.587 G + 0.114 B)` (ITU-R BT.601 weights)
/// computed exactly in integers: the conversion every front end (image files, ROS messages)
/// uses, so a colour frame gives the same gray pixels wherever it enters.
#[inline]
pub fn luminance(r: u8, g: u8, b: u8) -> u8 {
    let y = (299 * u32::from(r) + 587 * u32::from(g) + 114 * u32::from(b) + 500) / 1000;
    // 299 + 587 + 114 = 1000, so y <= (1000 * 255 + 500) / 1000 = 255.
    y as u8
}

/// A row-major, tightly packed 8-bit grayscale image borrowed from the caller.
#[derive(Debug, Clone, Copy)]
pub struct GrayImage<'a> {
    pixels: &'a [u8],
    width: usize,
    height: usize,
}

impl<'a> GrayImage<'a> {
    /// Wraps `pixels` (row-major, `width * height` bytes) after checking the size.
    pub fn new(pixels: &'a [u8], width: usize, height: usize) -> Result<Self, ImageError> {
        let len = check_dimensions(width, height)?;
        if pixels.len() != len {
            return Err(ImageError::BufferLength {
                expected: len,
                actual: pixels.len(),
            });
        }
        Ok(Self {
            pixels,
            width,
            height,
        })
    }
    /// Width in pixels.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Height in pixels.
    pub fn height(&self) -> usize {
        self.height
    }
    /// The pixels, row-major.
    pub fn pixels(&self) -> &'a [u8] {
        self.pixels
    }
}
