//! The firmware's memory: every large buffer is a `static` sized for the largest supported
//! frame, handed out once as `&'static mut` (no allocator, nothing large on the stack).

use core::sync::atomic::{AtomicBool, Ordering};

use surfcl_core::keypoint::{Descriptor, Keypoint};

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
    pub integral: [u32; (MAX_WIDTH + 1) * (MAX_HEIGHT + 1)],
    /// The packed response maps of one octave: one word per octave-0 sample (step 2).
    pub scratch: [u32; (MAX_WIDTH / 2) * (MAX_HEIGHT / 2)],
    /// Keypoint storage.
    pub keypoints: [Keypoint; MAX_KEYPOINTS],
    /// One descriptor per keypoint.
    pub descriptors: [Descriptor; MAX_KEYPOINTS],
}

static mut BUFFERS: Buffers = Buffers {
    file: [0; FILE_BYTES],
    integral: [0; (MAX_WIDTH + 1) * (MAX_HEIGHT + 1)],
    scratch: [0; (MAX_WIDTH / 2) * (MAX_HEIGHT / 2)],
    keypoints: [Keypoint::ZERO; MAX_KEYPOINTS],
    descriptors: [[0.0; 64]; MAX_KEYPOINTS],
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
