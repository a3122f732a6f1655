//! An owned 8-bit grey image: what the tool loads from files and the tests and benchmarks load
//! their samples into, borrowed by the backends as the core's [`GrayImage`].

use surfcl_core::{GrayImage, ImageError};

/// An owned 8-bit grayscale image, row-major and tightly packed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedGray {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height` luminance values.
    pub pixels: Vec<u8>,
}

impl OwnedGray {
    /// Borrows the image as the core's checked [`GrayImage`] (an error when the size is outside
    /// the core's limits or `pixels` is not `width * height` bytes).
    pub fn view(&self) -> Result<GrayImage<'_>, ImageError> {
        GrayImage::new(&self.pixels, self.width, self.height)
    }
}
