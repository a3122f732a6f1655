//! Links surfcl-core into a `#![no_std]` static library with its own panic handler.
//!
//! What this checks: that surfcl-core and every crate it depends on build and link without `std`
//! (a second `panic_impl` from std would collide with ours) and without an allocator (no
//! `#[global_allocator]` is defined here, so any use of `alloc` fails to link in a final binary).
//! What it does not check: code generation for a bare-metal target (rustup cannot add those on
//! these machines); the host target is used.
#![no_std]

#[cfg(feature = "prove-failure")]
extern crate std;

use surfcl_core::GrayImage;
use surfcl_core::describe::describe_all;
use surfcl_core::integral::{IntegralImage, integral_capacity};
use surfcl_core::keypoint::{Descriptor, KeypointSet, KeypointSink};
use surfcl_core::surf::{Precision, SurfConfig, detect, scratch_capacity};

/// Scratch for a 64x64 image in f32 mode, sized by the core's `const fn` (what firmware does).
const SCRATCH_WORDS: usize = scratch_capacity(64, 64, Precision::F32, 2);

/// Runs SURF detection and description on a caller's 64x64 image, returning the number of
/// keypoints (or -1 on error). Exported so that the code is really linked.
///
/// # Safety
/// `pixels` is null or points to 64 * 64 readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn surfcl_nostd_detect(pixels: *const u8) -> i32 {
    if pixels.is_null() {
        return -1;
    }
    // SAFETY: the C caller promises 64 * 64 readable bytes.
    let pixels = unsafe { core::slice::from_raw_parts(pixels, 64 * 64) };
    let Ok(image) = GrayImage::new(pixels, 64, 64) else {
        return -1;
    };
    let mut table = [0u32; integral_capacity(64, 64)];
    let Ok(integral) = IntegralImage::compute(&image, &mut table) else {
        return -1;
    };
    let config = SurfConfig::default();
    let mut scratch = [0u32; SCRATCH_WORDS];
    let mut keypoints = KeypointSet::<32>::new();
    if detect(&integral, &config, &mut scratch, &mut keypoints).is_err() {
        return -1;
    }
    let mut descriptors = [[0f32; 64] as Descriptor; 32];
    let n = keypoints.len();
    if describe_all(
        &integral,
        keypoints.points_mut(),
        false,
        &mut descriptors[..n],
    )
    .is_err()
    {
        return -1;
    }
    n as i32
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
