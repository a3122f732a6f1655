//! The firmware's memory: every large buffer is a `static` sized for the largest supported
//! frame, handed out once as `&'static mut` (no allocator, nothing large on the stack).

use core::sync::atomic::{AtomicBool, Ordering};

use surfcl_core::integral::integral_capacity;
use surfcl_core::keypoint::Keypoint;
use surfcl_core::surf::{Precision, scratch_capacity};

/// One descriptor: SURF-64 in `f32`, or Q7 bytes in the fixed-point variant.
#[cfg(not(feature = "fixed"))]
pub type Descriptor = surfcl_core::keypoint::Descriptor;
/// The all-zero descriptor (the statics' initial value).
#[cfg(not(feature = "fixed"))]
const ZERO_DESCRIPTOR: Descriptor = [0.0; 64];
/// One descriptor: SURF-64 in `f32`, or Q7 bytes in the fixed-point variant.
#[cfg(feature = "fixed")]
pub type Descriptor = surfcl_core::keypoint::DescriptorQ7;
/// The all-zero descriptor (the statics' initial value).
#[cfg(feature = "fixed")]
const ZERO_DESCRIPTOR: Descriptor = [0; 64];

/// Layout of the response maps: packed 8-bit words in the `f32` variant (its candidates are
/// recomputed exactly), four Q29 words per sample (the `F32` layout) in the fixed-point one.
#[cfg(not(feature = "fixed"))]
const MAPS: Precision = Precision::Packed8;
/// Layout of the response maps (see above).
#[cfg(feature = "fixed")]
const MAPS: Precision = Precision::F32;
/// Integral table entries of the largest frame.
const INTEGRAL: usize = integral_capacity(MAX_WIDTH, MAX_HEIGHT);
/// Scratch words of the largest frame (first sample step 2, `surfcl detect`'s default).
const SCRATCH: usize = scratch_capacity(MAX_WIDTH, MAX_HEIGHT, MAPS, 2);

/// Largest supported frame (a QVGA sensor; 640x480 needs about 2 MB of RAM).
pub const MAX_WIDTH: usize = 320;
/// Largest supported frame height.
pub const MAX_HEIGHT: usize = 240;
/// Keypoints kept (the strongest; the rest are counted as dropped).
pub const MAX_KEYPOINTS: usize = 512;
/// A PGM file of the largest frame: pixels plus a generous header.
pub const FILE_BYTES: usize = MAX_WIDTH * MAX_HEIGHT + 512;

/// Every buffer of one detect + describe run.
pub struct Buffers {
    /// The PGM file as read from the host (header and pixels).
    pub file: [u8; FILE_BYTES],
    /// The integral image, `(w + 1) (h + 1)` words.
    pub integral: [u32; INTEGRAL],
    /// The response maps of one octave (octave 0 is the largest).
    pub scratch: [u32; SCRATCH],
    /// Keypoint storage.
    pub keypoints: [Keypoint; MAX_KEYPOINTS],
    /// One descriptor per keypoint.
    pub descriptors: [Descriptor; MAX_KEYPOINTS],
}

static mut BUFFERS: Buffers = Buffers {
    file: [0; FILE_BYTES],
    integral: [0; INTEGRAL],
    scratch: [0; SCRATCH],
    keypoints: [Keypoint::ZERO; MAX_KEYPOINTS],
    descriptors: [ZERO_DESCRIPTOR; MAX_KEYPOINTS],
};

static TAKEN: AtomicBool = AtomicBool::new(false);

impl Buffers {
    /// The buffers, the first time only (`None` afterwards).
    pub fn take() -> Option<&'static mut Buffers> {
        // A load + store rather than a swap: thumbv6m has no atomic read-modify-write, and the
        // firmware is single-threaded without interrupts, so nothing can run in between.
        if TAKEN.load(Ordering::Acquire) {
            return None;
        }
        TAKEN.store(true, Ordering::Release);
        // SAFETY: `TAKEN` guarantees this reference is created once, so it is the only one.
        #[allow(unsafe_code)]
        Some(unsafe { &mut *core::ptr::addr_of_mut!(BUFFERS) })
    }
}
