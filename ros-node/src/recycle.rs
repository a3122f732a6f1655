//! Byte buffers handed back and forth between threads for reuse: the node's encoded outputs
//! ([`crate::wire::BufferPool`]) and the pixel buffers of received images
//! ([`crate::pixels::PixelBuffers`]).

use std::sync::{Arc, Mutex};

/// Byte buffers kept for reuse, shared between threads: at most `MAX` wait here; beyond,
/// returned buffers are freed. Memory that held an earlier message is already mapped, where a
/// fresh megabyte costs a page fault per 4 KiB.
#[derive(Debug, Clone, Default)]
pub struct Recycler<const MAX: usize> {
    free: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl<const MAX: usize> Recycler<MAX> {
    /// Buffers kept at most.
    pub const MAX_KEPT: usize = MAX;

    fn free(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A poisoned lock only means another thread panicked while pushing or popping: the
        // list is still a list of buffers.
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer to write into: a returned one when there is one (its contents are stale: the
    /// caller clears it), else a new empty one.
    pub fn take(&self) -> Vec<u8> {
        self.free().pop().unwrap_or_default()
    }

    /// Returns a buffer for reuse (one without memory is not kept).
    pub fn give(&self, buf: Vec<u8>) {
        if buf.capacity() == 0 {
            return;
        }
        let mut free = self.free();
        if free.len() < MAX {
            free.push(buf);
        }
    }

    /// Buffers waiting for reuse.
    pub fn available(&self) -> usize {
        self.free().len()
    }
}
