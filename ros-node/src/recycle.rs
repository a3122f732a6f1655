//! Byte buffers handed back and forth between threads for reuse: the node's encoded outputs
//! ([`crate::wire::BufferPool`]) and the pixel buffers of received images
//! ([`crate::pixels::PixelBuffers`]).

use std::sync::{Arc, Mutex};

/// Byte buffers kept for reuse, shared between threads: at most `MAX` buffers, and at most
/// [`Recycler::with_max_bytes`] bytes of them (their capacities; no byte limit by default),
/// wait here; beyond, returned buffers are freed. Memory that held an earlier message is
/// already mapped, where a fresh megabyte costs a page fault per 4 KiB.
#[derive(Debug, Clone, Default)]
pub struct Recycler<const MAX: usize> {
    free: Arc<Mutex<Free>>,
}

/// The buffers waiting, and what they hold.
#[derive(Debug)]
struct Free {
    buffers: Vec<Vec<u8>>,
    /// Sum of the capacities of `buffers`.
    bytes: usize,
    /// The most `bytes` may reach.
    max_bytes: usize,
}

impl Default for Free {
    fn default() -> Self {
        Self {
            buffers: Vec::new(),
            bytes: 0,
            max_bytes: usize::MAX,
        }
    }
}

impl<const MAX: usize> Recycler<MAX> {
    /// Buffers kept at most.
    pub const MAX_KEPT: usize = MAX;

    /// A recycler that keeps at most `max_bytes` bytes (buffer capacities) as well as at most
    /// `MAX` buffers.
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            free: Arc::new(Mutex::new(Free {
                max_bytes,
                ..Free::default()
            })),
        }
    }

    fn free(&self) -> std::sync::MutexGuard<'_, Free> {
        // A poisoned lock only means another thread panicked while pushing or popping: the
        // list is still a list of buffers (and `bytes` is updated with the list, under the
        // lock, by code that cannot panic in between).
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer to write into: the one returned last when there is one (its contents are
    /// stale: the caller clears it), else a new empty one.
    pub fn take(&self) -> Vec<u8> {
        let mut free = self.free();
        match free.buffers.pop() {
            Some(buf) => {
                free.bytes -= buf.capacity();
                buf
            }
            None => Vec::new(),
        }
    }

    /// Returns a buffer for reuse (one without memory is not kept). Beyond the limits it is
    /// freed, after the lock is released (freeing a large buffer unmaps it: no thread should
    /// wait for that).
    pub fn give(&self, buf: Vec<u8>) {
        if buf.capacity() == 0 {
            return;
        }
        let refused = {
            let mut free = self.free();
            if free.buffers.len() < MAX && free.bytes + buf.capacity() <= free.max_bytes {
                free.bytes += buf.capacity();
                free.buffers.push(buf);
                None
            } else {
                Some(buf)
            }
        };
        drop(refused);
    }

    /// Whether a buffer of `capacity` bytes given back now would be kept.
    pub fn would_keep(&self, capacity: usize) -> bool {
        let free = self.free();
        free.buffers.len() < MAX && free.bytes + capacity <= free.max_bytes
    }

    /// Capacity of the buffer [`Recycler::take`] would hand out now (0 when none waits).
    pub fn next_capacity(&self) -> usize {
        self.free().buffers.last().map_or(0, Vec::capacity)
    }

    /// Buffers waiting for reuse.
    pub fn available(&self) -> usize {
        self.free().buffers.len()
    }

    /// Bytes (capacities) of the buffers waiting for reuse.
    pub fn kept_bytes(&self) -> usize {
        self.free().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_by_count_and_bytes() {
        let r = Recycler::<4>::with_max_bytes(250);
        for _ in 0..3 {
            r.give(Vec::with_capacity(100));
        }
        // The third would pass 250 bytes: freed.
        assert_eq!((r.available(), r.kept_bytes()), (2, 200));
        assert!(!r.would_keep(51) && r.would_keep(50));
        r.give(Vec::with_capacity(50));
        assert_eq!((r.available(), r.kept_bytes()), (3, 250));
        assert_eq!(r.next_capacity(), 50);
        assert_eq!(r.take().capacity(), 50, "the last one given comes first");
        assert_eq!(r.kept_bytes(), 200);
        r.give(Vec::new());
        assert_eq!(r.available(), 2, "a buffer without memory is not kept");
        let counted = Recycler::<2>::default();
        for _ in 0..3 {
            counted.give(vec![1; 10]);
        }
        assert_eq!(counted.available(), 2);
        assert_eq!(counted.take().capacity(), 10);
        assert_eq!(counted.take().capacity(), 10);
        assert_eq!(counted.take().capacity(), 0, "empty: a new buffer");
        assert_eq!(counted.kept_bytes(), 0);
    }
}
