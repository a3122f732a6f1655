//! Sample images for the runtime's tests and benches: the 8-bit grey PGM files of `data/`.
//!
//! The runtime reads no files; the tool's loader (with its size checks and colour rules) is
//! `surfcl_cli::io`. The sample images are grey already, so the `image` crate's luma is exact.
#![allow(dead_code)]

use std::path::Path;

pub use surfcl_gpu::OwnedGray;

/// Loads an image file as 8-bit luminance.
pub fn load_gray(path: &Path) -> Result<OwnedGray, image::ImageError> {
    let gray = image::open(path)?.into_luma8();
    Ok(OwnedGray {
        width: gray.width() as usize,
        height: gray.height() as usize,
        pixels: gray.into_raw(),
    })
}
