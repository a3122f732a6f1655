//! What the node's threads and tasks share, and how they lock it.

use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::slot::Slot;
use super::stats::Stats;
use crate::frames::InputFrames;
use crate::params::NodeParams;
use crate::pixels::PixelBuffers;
use crate::processor::Processor;

/// What the node's threads and tasks share.
pub(super) struct Shared {
    pub(super) slot: Mutex<Slot>,
    /// Pixel buffers of finished frames, reused by the receive thread.
    pub(super) pixels: PixelBuffers,
    /// The backend's input frames: made by the processing thread, filled by the receive thread.
    pub(super) frames: InputFrames,
    pub(super) ready: Condvar,
    pub(super) stop: AtomicBool,
    pub(super) stats: Mutex<Stats>,
    pub(super) params: Mutex<NodeParams>,
    /// A processor opened while validating a `backend`/`device` change (or at start), handed to
    /// the thread.
    pub(super) staged: Mutex<Option<(NodeParams, Box<dyn Processor>)>>,
    /// Which outputs have subscribers (`graph`'s bits), for `lazy`.
    pub(super) subscribed: AtomicU8,
}

impl Shared {
    pub(super) fn new(params: &NodeParams) -> Self {
        Self {
            pixels: PixelBuffers::default(),
            frames: InputFrames::default(),
            slot: Mutex::new(Slot::default()),
            ready: Condvar::new(),
            stop: AtomicBool::new(false),
            stats: Mutex::new(Stats::default()),
            params: Mutex::new(params.clone()),
            staged: Mutex::new(None),
            subscribed: AtomicU8::new(0),
        }
    }
}

/// Locks, recovering the data if another thread panicked while holding the lock (the counters
/// and parameters stay meaningful; refusing to go on would take the whole node down).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
