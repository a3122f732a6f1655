//! The backend's input frames (pinned memory on the OpenCL backend) lent to the receive thread,
//! so that an image message is converted straight from its serialized bytes into memory the
//! backend uploads from by DMA: one host copy of a frame instead of two (into the message's
//! `data`, then into the backend's input area).
//!
//! The processing thread owns the backend, so it makes the frames
//! ([`crate::processor::Processor::input_frame`]) and puts them here ([`InputFrames::refill`],
//! after it has published a frame, so that allocating never delays one); the receive thread
//! takes one for each image that fits ([`InputFrames::take`]) and the frame comes back when the
//! node is done with it (its [`PooledFrame`] is dropped: processed, or replaced in the slot).
//! When none is free (the first frame of a size, a backend without frames such as the CPU one,
//! every frame lent) the receive thread deserialises into the node's own memory: frames are
//! never waited for.
//!
//! Bounded: at most [`InputFrames::FRAMES`] frames of one backend exist (one being received,
//! one waiting in the slot, one being detected), each of the largest frame size seen. A new
//! backend ([`InputFrames::reset`]) starts a new generation: the old one's frames are freed as
//! they come back.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::processor::{InputFrame, ProcessorError};

/// The pool of input frames shared by the receive and processing threads (clones share it).
#[derive(Clone, Default)]
pub struct InputFrames {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    free: Vec<Box<dyn InputFrame>>,
    /// Frames of this generation that exist (free or lent).
    alive: usize,
    /// Bumped by `reset`: frames of an earlier generation are not taken back.
    generation: u64,
    /// Bytes every frame of this generation holds at least (the largest frame refilled for).
    size: usize,
    /// The backend made no frame (it has none, or allocating failed): no more tries until the
    /// next `reset`.
    exhausted: bool,
}

impl std::fmt::Debug for InputFrames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("InputFrames")
            .field("free", &s.free.len())
            .field("alive", &s.alive)
            .field("generation", &s.generation)
            .field("size", &s.size)
            .field("exhausted", &s.exhausted)
            .finish()
    }
}

impl InputFrames {
    /// Frames of one backend at most: one being received, one waiting in the slot, one being
    /// detected.
    pub const FRAMES: usize = 3;

    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked while holding it: the state is a
        // list and counters, updated in single statements.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A free frame of at least `len` bytes, if there is one (never waits, never allocates).
    pub fn take(&self, len: usize) -> Option<PooledFrame> {
        let mut s = self.state();
        let i = s.free.iter().position(|f| f.capacity() >= len)?;
        let frame = s.free.swap_remove(i);
        Some(PooledFrame {
            frame: Some(frame),
            generation: s.generation,
            pool: self.clone(),
        })
    }

    /// Forgets the frames of the current backend (call when the processor is replaced or
    /// dropped): free ones are freed now, lent ones when they come back.
    pub fn reset(&self) {
        let freed = {
            let mut s = self.state();
            s.generation = s.generation.wrapping_add(1);
            s.alive = 0;
            s.size = 0;
            s.exhausted = false;
            std::mem::take(&mut s.free)
        };
        drop(freed);
    }

    /// Makes frames with `make` (the processor's `input_frame`) until [`Self::FRAMES`] of at
    /// least `len` bytes exist; smaller free ones are freed first. Returns how many it made. A
    /// `make` that gives no frame or fails ends the refilling until the next [`Self::reset`]
    /// (allocating pinned memory takes milliseconds: a failing backend is not asked every
    /// frame); the error is returned for the log.
    pub fn refill(
        &self,
        len: usize,
        mut make: impl FnMut(usize) -> Result<Option<Box<dyn InputFrame>>, ProcessorError>,
    ) -> Result<usize, ProcessorError> {
        let (generation, size, wanted, small) = {
            let mut s = self.state();
            let mut small = Vec::new();
            if len > s.size {
                s.size = len;
                let (keep, drop): (Vec<_>, Vec<_>) =
                    s.free.drain(..).partition(|f| f.capacity() >= len);
                s.free = keep;
                s.alive = s.alive.saturating_sub(drop.len());
                small = drop;
            }
            let wanted = if s.exhausted || s.size == 0 {
                0
            } else {
                Self::FRAMES.saturating_sub(s.alive)
            };
            (s.generation, s.size, wanted, small)
        };
        // Freed and allocated without the lock: the receive thread never waits for either.
        drop(small);
        let mut made = 0;
        for _ in 0..wanted {
            let result = make(size);
            let mut s = self.state();
            if s.generation != generation {
                break;
            }
            match result {
                Ok(Some(frame)) if frame.capacity() >= s.size => {
                    s.free.push(frame);
                    s.alive += 1;
                    made += 1;
                }
                Ok(_) => {
                    s.exhausted = true;
                    break;
                }
                Err(e) => {
                    s.exhausted = true;
                    return Err(e);
                }
            }
        }
        Ok(made)
    }

    /// Frames free to take now.
    pub fn available(&self) -> usize {
        self.state().free.len()
    }

    /// Frames of the current backend that exist, free or lent.
    pub fn alive(&self) -> usize {
        self.state().alive
    }

    /// Takes `frame` back, unless it belongs to an earlier generation or is smaller than the
    /// frames now made (then it is freed, outside the lock).
    fn give(&self, frame: Box<dyn InputFrame>, generation: u64) {
        let mut s = self.state();
        if s.generation != generation {
            drop(s);
            drop(frame);
            return;
        }
        if frame.capacity() >= s.size && s.free.len() < Self::FRAMES {
            s.free.push(frame);
        } else {
            s.alive = s.alive.saturating_sub(1);
            drop(s);
            drop(frame);
        }
    }

    /// Counts a frame of `generation` gone for good (see [`PooledFrame::discard`]).
    fn forget(&self, generation: u64) {
        let mut s = self.state();
        if s.generation == generation {
            s.alive = s.alive.saturating_sub(1);
        }
    }
}

/// A frame lent by [`InputFrames`]; it goes back when dropped.
pub struct PooledFrame {
    frame: Option<Box<dyn InputFrame>>,
    generation: u64,
    pool: InputFrames,
}

impl std::fmt::Debug for PooledFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledFrame")
            .field("capacity", &self.frame.as_ref().map(|f| f.capacity()))
            .field("generation", &self.generation)
            .finish()
    }
}

impl PooledFrame {
    /// The frame. `None` only after [`Self::discard`] (which consumes it), so never in practice.
    pub fn frame(&mut self) -> Option<&mut dyn InputFrame> {
        match &mut self.frame {
            Some(f) => Some(f.as_mut()),
            None => None,
        }
    }

    /// Frees the frame instead of giving it back (its memory could not be reached: a failed
    /// device); the pool makes another on its next refill.
    pub fn discard(mut self) {
        if let Some(frame) = self.frame.take() {
            drop(frame);
            self.pool.forget(self.generation);
        }
    }
}

impl Drop for PooledFrame {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            self.pool.give(frame, self.generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host memory standing in for a backend's frame.
    struct Heap(Vec<u8>);

    impl InputFrame for Heap {
        fn capacity(&self) -> usize {
            self.0.len()
        }
        fn pixels_mut(&mut self) -> Result<&mut [u8], ProcessorError> {
            Ok(&mut self.0)
        }
    }

    fn heap(len: usize) -> Result<Option<Box<dyn InputFrame>>, ProcessorError> {
        Ok(Some(Box::new(Heap(vec![0; len]))))
    }

    #[test]
    fn frames_are_lent_given_back_and_bounded() {
        let pool = InputFrames::default();
        assert!(pool.take(10).is_none(), "nothing before the first refill");
        assert_eq!(pool.refill(100, heap).unwrap(), InputFrames::FRAMES);
        assert_eq!(pool.refill(100, heap).unwrap(), 0, "full");
        let lent: Vec<_> = (0..InputFrames::FRAMES)
            .map(|_| pool.take(100).unwrap())
            .collect();
        assert!(pool.take(1).is_none(), "all lent: the caller falls back");
        assert_eq!(
            pool.refill(100, heap).unwrap(),
            0,
            "lent frames still count"
        );
        drop(lent);
        assert_eq!(pool.available(), InputFrames::FRAMES);
        assert!(pool.take(101).is_none(), "too small for this frame");
    }

    #[test]
    fn a_larger_frame_replaces_the_small_ones() {
        let pool = InputFrames::default();
        pool.refill(100, heap).unwrap();
        let lent = pool.take(100).unwrap();
        assert_eq!(
            pool.refill(200, heap).unwrap(),
            2,
            "the two free ones replaced"
        );
        assert_eq!(pool.alive(), 3);
        drop(lent);
        assert_eq!(
            pool.alive(),
            2,
            "the small lent one is freed when it comes back"
        );
        assert_eq!(pool.available(), 2);
        assert_eq!(pool.refill(200, heap).unwrap(), 1);
        assert!(pool.take(200).is_some());
        // A smaller frame size keeps the frames made for the larger one.
        assert_eq!(pool.refill(50, heap).unwrap(), 0);
        assert!(pool.take(50).is_some());
    }

    #[test]
    fn a_reset_frees_the_old_backends_frames_and_a_backend_without_frames_is_not_asked_again() {
        let pool = InputFrames::default();
        pool.refill(100, heap).unwrap();
        let lent = pool.take(100).unwrap();
        pool.reset();
        assert_eq!((pool.available(), pool.alive()), (0, 0));
        drop(lent);
        assert_eq!(
            pool.available(),
            0,
            "a frame of the old backend is not taken back"
        );

        let mut asked = 0;
        let none = |_| {
            asked += 1;
            Ok(None)
        };
        assert_eq!(pool.refill(100, none).unwrap(), 0);
        let mut asked_again = 0;
        pool.refill(100, |_| {
            asked_again += 1;
            heap(100)
        })
        .unwrap();
        assert_eq!((asked, asked_again), (1, 0));
        pool.reset();
        let failing = |_| Err(ProcessorError::Frame("no pinned memory".into()));
        assert!(pool.refill(100, failing).is_err());
        assert_eq!(pool.refill(100, heap).unwrap(), 0, "not asked again");
        pool.reset();
        assert_eq!(pool.refill(100, heap).unwrap(), InputFrames::FRAMES);
        // A discarded frame is made again.
        pool.take(100).unwrap().discard();
        assert_eq!(pool.alive(), 2);
        assert_eq!(pool.refill(100, heap).unwrap(), 1);
    }
}
