//! The firmware's memory: every large buffer is a `static` sized for the largest supported
//! frame with the core's `const fn`s, handed out once as `&'static mut` (no allocator, nothing
//! large on the stack). The frame itself is never held whole: its rows go one at a time from
//! [`Buffers::row`] into the integral band of the banded path (`surfcl_core::banded`).
//!
//! Two memory maps (`make firmware MEMORY=256K|192K`, the `ram192k` feature): with 256 KB the
//! band holds 130 rows (3 octaves, every octave-0 descriptor window whole) and 512 keypoints;
//! with 192 KB 104 rows (2 octaves, descriptor windows clipped to 48 rows each side) and 256.

use core::sync::atomic::{AtomicBool, Ordering};

use surfcl_core::banded::{band_maps_len, band_table_len, detection_rows};
use surfcl_core::keypoint::{DescriptorQ7, Keypoint};

/// Largest supported frame (a QVGA sensor).
pub const MAX_WIDTH: usize = 320;
/// Largest supported frame height (only the band's rows are held, so any height up to the
/// core's limits would do; the PGM reader keeps QVGA's).
pub const MAX_HEIGHT: usize = 240;
/// First sample step (`surfcl detect`'s default).
pub const INIT_SAMPLE_STEP: u8 = 2;
/// Rows the band advances by (a multiple of the largest sample step).
pub const ADVANCE: usize = 8;

/// Octaves detected: as many as the band of this memory map holds the filters of.
#[cfg(not(feature = "ram192k"))]
pub const OCTAVES: u8 = 3;
/// Band rows: detection's, and every octave-0 descriptor window whole.
#[cfg(not(feature = "ram192k"))]
pub const BAND_ROWS: usize = surfcl_core::banded::band_rows_for(OCTAVES, INIT_SAMPLE_STEP, ADVANCE);
/// Keypoints kept (the strongest; the rest are counted as dropped).
#[cfg(not(feature = "ram192k"))]
pub const MAX_KEYPOINTS: usize = 512;

/// Octaves detected in the 192 KB map.
#[cfg(feature = "ram192k")]
pub const OCTAVES: u8 = 2;
/// Band rows in the 192 KB map: more than detection needs, fewer than whole descriptor windows.
#[cfg(feature = "ram192k")]
pub const BAND_ROWS: usize = 104;
/// Keypoints kept in the 192 KB map.
#[cfg(feature = "ram192k")]
pub const MAX_KEYPOINTS: usize = 256;

const _: () = assert!(BAND_ROWS >= detection_rows(OCTAVES, INIT_SAMPLE_STEP, ADVANCE));

/// Integral band entries.
const TABLE: usize = band_table_len(MAX_WIDTH, BAND_ROWS);
/// Response map words of every octave.
const MAPS: usize = band_maps_len(MAX_WIDTH, OCTAVES, INIT_SAMPLE_STEP, ADVANCE);

/// Every buffer of one detect + describe run.
pub struct Buffers {
    /// One row of the frame as read from the host.
    pub row: [u8; MAX_WIDTH],
    /// The integral band, `(w + 1) (BAND_ROWS + 1)` words.
    pub table: [u32; TABLE],
    /// The response maps of the rows being scanned, every octave.
    pub maps: [u32; MAPS],
    /// Keypoint storage.
    pub keypoints: [Keypoint; MAX_KEYPOINTS],
    /// One Q7 descriptor per keypoint (both variants: the `f32` one quantises its descriptors).
    pub descriptors: [DescriptorQ7; MAX_KEYPOINTS],
}

static mut BUFFERS: Buffers = Buffers {
    row: [0; MAX_WIDTH],
    table: [0; TABLE],
    maps: [0; MAPS],
    keypoints: [Keypoint::ZERO; MAX_KEYPOINTS],
    descriptors: [[0; 64]; MAX_KEYPOINTS],
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
