//! What the core's benchmarks share: loading their sample image.

/// The Oxford boat image 1 shipped in `data/`, or the file named by `SURFCL_BOAT_IMG1` (so that
/// a copied benchmark binary finds it elsewhere), as 8-bit grey `(pixels, width, height)`.
/// Panics with the path when it cannot be read (benchmark support only).
pub fn boat_img1() -> (Vec<u8>, usize, usize) {
    let path = std::env::var("SURFCL_BOAT_IMG1").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../data/oxford-boat/img1.pgm").to_string()
    });
    // The sample is grey already: the `image` crate's luma is exact.
    let gray = image::open(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .into_luma8();
    let (w, h) = (gray.width() as usize, gray.height() as usize);
    (gray.into_raw(), w, h)
}
