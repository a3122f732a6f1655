//! Output buffers reused from frame to frame (see [`BufferPool`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ros2_client::dds::rustdds::bytes::Bytes;

use crate::recycle::Recycler;

/// Output buffers reused from frame to frame. An encoded message goes to DDS as [`Bytes`] that
/// the writer keeps (its history) and drops later on another thread; made with
/// [`BufferPool::bytes`], the buffer then comes back here instead of being freed, so the next
/// frame encodes into memory that is already mapped.
///
/// How many come back at once depends on the writer. A best-effort writer drops each message
/// when the fifth after it is written (keep last 5): a few buffers go round. A reliable RustDDS
/// (0.15) writer keeps every acknowledged message until its cache cleaning, every 6 s, and then
/// drops them together: at 30 Hz about 180 buffers (200 MB at 1.1 MB, 4096 keypoints with f32
/// descriptors) come back at once and are used up over the next 6 s. The pool keeps them all,
/// up to its byte limit ([`BufferPool::new`], [`BufferPool::DEFAULT_MAX_BYTES`]) and
/// [`BufferPool::MAX_KEPT`] buffers; beyond, they are freed. A buffer is only made when none
/// waits, so the pool never holds more than what DDS held at once before: it keeps the memory
/// at that peak instead of giving it back and faulting it in again. What is not kept (before
/// the first cleaning, or past the limit) [`BufferPool::prepare`] makes and maps ahead, off the
/// frame's path.
#[derive(Debug, Clone)]
pub struct BufferPool {
    buffers: Recycler<POOL_MAX_KEPT>,
    counts: Arc<PoolCounts>,
}

/// [`BufferPool::MAX_KEPT`]: 6 s at 120 Hz and some.
const POOL_MAX_KEPT: usize = 1024;

/// Buffers a pool made.
#[derive(Debug, Default)]
struct PoolCounts {
    /// Handed out new by `take` (the message was encoded into fresh memory).
    new: AtomicU64,
    /// Made and mapped ahead by `prepare`.
    prepared: AtomicU64,
}

/// A pooled buffer while DDS holds it: goes back to its pool when dropped.
struct Pooled {
    buf: Vec<u8>,
    home: Recycler<POOL_MAX_KEPT>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.home.give(std::mem::take(&mut self.buf));
    }
}

impl Default for BufferPool {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_BYTES)
    }
}

impl BufferPool {
    /// Buffers kept for reuse at most.
    pub const MAX_KEPT: usize = POOL_MAX_KEPT;

    /// Bytes kept for reuse at most by default (256 MiB): what a reliable writer lets go at its
    /// 6 s cleaning at 30 Hz for messages up to 1.4 MB (4096 keypoints with f32 descriptors
    /// are 1.1 MB).
    pub const DEFAULT_MAX_BYTES: usize = 256 << 20;

    /// A pool that keeps at most `max_bytes` bytes (buffer capacities) for reuse.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            buffers: Recycler::with_max_bytes(max_bytes),
            counts: Arc::default(),
        }
    }

    /// A buffer to encode into: a returned one when there is one (the one returned last),
    /// else a new empty one.
    pub fn take(&self) -> Vec<u8> {
        let buf = self.buffers.take();
        if buf.capacity() == 0 {
            self.counts.new.fetch_add(1, Ordering::Relaxed);
        }
        buf
    }

    /// `buf` as [`Bytes`] that return it to this pool when the last reference is dropped.
    pub fn bytes(&self, buf: Vec<u8>) -> Bytes {
        Bytes::from_owner(Pooled {
            buf,
            home: self.buffers.clone(),
        })
    }

    /// Makes sure that the next [`BufferPool::take`] hands out a buffer of at least `capacity`
    /// bytes (pass the capacity of the buffer the last message was encoded into: the encoder
    /// reserves a little more than it writes) whose memory is mapped: when the one it would
    /// hand out is smaller (or none waits), allocates one and writes a byte of each 4 KiB page,
    /// so that the page faults happen here (between frames) instead of while the next message
    /// is encoded. Not when the pool would not keep it (its limits). Returns whether it made
    /// one.
    pub fn prepare(&self, capacity: usize) -> bool {
        if capacity == 0
            || self.buffers.next_capacity() >= capacity
            || !self.buffers.would_keep(capacity)
        {
            return false;
        }
        let mut buf = Vec::<u8>::with_capacity(capacity);
        for b in buf.spare_capacity_mut().iter_mut().step_by(4096) {
            b.write(0);
        }
        // The writes are what this is for: keep them.
        std::hint::black_box(buf.spare_capacity_mut().as_mut_ptr());
        self.buffers.give(buf);
        self.counts.prepared.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Buffers waiting for reuse.
    pub fn available(&self) -> usize {
        self.buffers.available()
    }

    /// Bytes (capacities) of the buffers waiting for reuse.
    pub fn kept_bytes(&self) -> usize {
        self.buffers.kept_bytes()
    }

    /// Buffers [`BufferPool::take`] handed out new (a message encoded into fresh memory).
    pub fn new_buffers(&self) -> u64 {
        self.counts.new.load(Ordering::Relaxed)
    }

    /// Buffers [`BufferPool::prepare`] made.
    pub fn prepared_buffers(&self) -> u64 {
        self.counts.prepared.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode::{encode_detection, encode_keypoint_array_into};
    use crate::wire::test_messages::{keypoints, serde_cdr};
    use surfcl_core::config::DescriptorKind;
    use surfcl_core::{DESCRIPTOR_LEN, Descriptor, Keypoint};

    #[test]
    fn pooled_buffers_come_back_and_are_reused() {
        let pool = BufferPool::default();
        let m = keypoints(50, "cam", false);
        let expected = serde_cdr(&m);
        let mut buf = pool.take();
        assert_eq!(buf.capacity(), 0, "an empty pool gives a new buffer");
        buf.extend_from_slice(&[9; 100]);
        let b = pool.bytes(buf);
        let b2 = b.clone();
        drop(b);
        assert_eq!(pool.available(), 0, "a clone still holds the buffer");
        drop(b2);
        assert_eq!(pool.available(), 1);
        // Reused: old contents gone, capacity kept, same bytes as a fresh encoding.
        let reused = pool.take();
        assert!(reused.capacity() >= 100);
        assert_eq!(encode_keypoint_array_into(reused, &m), expected);
        // Bounded: beyond MAX_KEPT, returned buffers are freed.
        let held: Vec<Bytes> = (0..BufferPool::MAX_KEPT + 3)
            .map(|_| pool.bytes(vec![1; 10]))
            .collect();
        drop(held);
        assert_eq!(pool.available(), BufferPool::MAX_KEPT);
    }

    /// A reliable RustDDS writer keeps every message until its cleaning (6 s) and then drops
    /// them all at once: the pool keeps all of them (within its byte limit), so that the next
    /// 6 s of messages are encoded into memory that is already mapped, and none is new.
    #[test]
    fn a_cleaning_s_worth_of_buffers_comes_back_whole() {
        const SIZE: usize = 10_000;
        const AT_ONCE: usize = 180; // 6 s at 30 Hz
        let pool = BufferPool::new(200 * SIZE);
        let cycle = |pool: &BufferPool| -> Vec<Bytes> {
            (0..AT_ONCE)
                .map(|i| {
                    let mut buf = pool.take();
                    buf.clear();
                    buf.resize(SIZE, i as u8);
                    pool.bytes(buf)
                })
                .collect()
        };
        let held = cycle(&pool);
        assert_eq!(
            pool.new_buffers(),
            AT_ONCE as u64,
            "the first period is new memory"
        );
        drop(held); // the cleaning
        assert_eq!(pool.available(), AT_ONCE);
        assert_eq!(pool.kept_bytes(), AT_ONCE * SIZE);
        for _ in 0..3 {
            drop(cycle(&pool));
        }
        assert_eq!(
            pool.new_buffers(),
            AT_ONCE as u64,
            "steady state: nothing new"
        );
        // The byte limit holds: a pool of 100 buffers' worth keeps 100 and frees the rest.
        let small = BufferPool::new(100 * SIZE);
        drop(cycle(&small));
        assert_eq!(small.available(), 100);
        assert_eq!(small.kept_bytes(), 100 * SIZE);
        drop(cycle(&small));
        assert_eq!(small.new_buffers(), (AT_ONCE + AT_ONCE - 100) as u64);
    }

    #[test]
    fn prepare_maps_one_buffer_ahead_within_the_limit() {
        let pool = BufferPool::new(3 << 20);
        assert!(!pool.prepare(0));
        assert!(pool.prepare(1 << 20), "empty: one is made");
        assert!(!pool.prepare(1 << 20), "one of the size waits already");
        assert!(pool.prepare(2 << 20), "the waiting one is too small");
        assert_eq!((pool.available(), pool.prepared_buffers()), (2, 2));
        assert!(!pool.prepare(3 << 20), "past the byte limit: not made");
        let buf = pool.take();
        assert!(buf.capacity() >= 2 << 20 && buf.is_empty());
        assert_eq!(pool.new_buffers(), 0, "a prepared buffer is not new");
        // Encoding into it gives the same bytes as into a fresh one.
        let m = keypoints(20, "cam", false);
        let kps: Vec<Keypoint> = m
            .keypoints
            .iter()
            .map(|k| Keypoint {
                x: k.x,
                y: k.y,
                scale: k.scale,
                orientation: k.orientation,
                response: k.response,
                laplacian: k.laplacian,
                ..Keypoint::default()
            })
            .collect();
        let descs: Vec<Descriptor> = m
            .descriptors
            .chunks_exact(DESCRIPTOR_LEN)
            .map(|c| core::array::from_fn(|j| c[j]))
            .collect();
        let fresh = encode_detection(Vec::new(), &m.header, &kps, &descs, DescriptorKind::F32, 0);
        let capacity = buf.capacity();
        let reused = encode_detection(buf, &m.header, &kps, &descs, DescriptorKind::F32, 0);
        assert_eq!(reused, fresh);
        assert_eq!(
            reused.capacity(),
            capacity,
            "encoded in place, not reallocated"
        );
        // A prepared buffer of a message's capacity takes the next one of that size as it is.
        let pool = BufferPool::new(16 << 20);
        assert!(pool.prepare(fresh.capacity()));
        let buf = pool.take();
        let capacity = buf.capacity();
        let again = encode_detection(buf, &m.header, &kps, &descs, DescriptorKind::F32, 0);
        assert_eq!((again.capacity(), &again), (capacity, &fresh));
        // A buffer a little short grows to the message, not to twice its size.
        let short = Vec::with_capacity(fresh.len() - 10);
        let grown = encode_detection(short, &m.header, &kps, &descs, DescriptorKind::F32, 0);
        assert!(grown.capacity() < fresh.len() + 100, "{}", grown.capacity());
    }
}
