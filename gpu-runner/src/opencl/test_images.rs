//! Test images of the repository's data folder, for the unit tests that run kernels.

/// A gray test image: pixels, width, height.
pub(crate) struct TestImage {
    /// Row-major 8-bit pixels.
    pub pixels: Vec<u8>,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
}

/// Oxford boat img1 (850x680), the frame the unit tests compare GPU and core on.
pub(crate) fn boat() -> TestImage {
    load("img1.pgm")
}

/// Oxford boat image `name` of `data/oxford-boat`, as 8-bit luminance.
pub(crate) fn load(name: &str) -> TestImage {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/oxford-boat")
        .join(name);
    let gray = image::open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_luma8();
    let (width, height) = (gray.width() as usize, gray.height() as usize);
    TestImage {
        pixels: gray.into_raw(),
        width,
        height,
    }
}
