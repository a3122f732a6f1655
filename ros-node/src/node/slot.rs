//! The newest-frame slot between the receive thread and the processing thread, and the frame
//! it holds.

use std::time::Instant;

use crate::convert::Layout;
use crate::frames::PooledFrame;
use crate::msg::Image;
use crate::pixels::PixelBuffers;

/// When and how a frame arrived.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrival {
    pub(super) taken: Instant,
    pub(super) transport_ms: f64,
    pub(super) deserialise_ms: f64,
    pub(super) receive_convert_ms: f64,
}

/// A validated frame waiting for the processing thread. Dropped (processed, or replaced in the
/// slot), it gives its pixel buffer back for the next image to be received into, and its input
/// frame back to the pool.
pub(super) struct Frame {
    /// The message; without `data` when the pixels are in `gray`.
    pub(super) image: Image,
    pub(super) layout: Layout,
    pub(super) arrival: Arrival,
    pub(super) pixels: PixelBuffers,
    /// The gray pixels in one of the backend's input frames, converted on receipt.
    pub(super) gray: Option<PooledFrame>,
}

impl Drop for Frame {
    fn drop(&mut self) {
        self.pixels.give(std::mem::take(&mut self.image.data));
    }
}

/// The newest valid frame waiting for the processing thread.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) frame: Option<Frame>,
}
