//! Sample images for the runtime's tests and benches: the 8-bit grey PGM files of `data/`.
//!
//! The runtime reads no files; the tool's loader (with its size checks and colour rules) is
//! `surfcl_cli::io`. The sample images are grey already, so the `image` crate's luma is exact.
#![allow(dead_code)]

use std::path::Path;

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
    /// Borrows the image as the core's checked [`GrayImage`].
    pub fn view(&self) -> Result<GrayImage<'_>, ImageError> {
        GrayImage::new(&self.pixels, self.width, self.height)
    }
}

/// Loads an image file as 8-bit luminance.
pub fn load_gray(path: &Path) -> Result<OwnedGray, image::ImageError> {
    let gray = image::open(path)?.into_luma8();
    Ok(OwnedGray {
        width: gray.width() as usize,
        height: gray.height() as usize,
        pixels: gray.into_raw(),
    })
}
