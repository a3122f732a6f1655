//! The banded path's output: the strongest keypoints with their descriptors side by side, each
//! keypoint waiting for its descriptor until the band holds the rows its windows reach.

use core::cmp::Ordering;

use crate::keypoint::{Keypoint, KeypointSink};

/// The orientation of a keypoint not yet described: a NaN no orientation assignment gives
/// (they give angles in `[0, 2 pi)` or `+0.0`), so waiting keypoints need no extra storage.
const PENDING: u32 = 0x7fc0_5eed;

/// The strongest keypoints under [`Keypoint::rank_cmp`] (as every [`KeypointSink`] keeps them)
/// and one descriptor per keypoint, in two caller-owned slices of equal length.
#[derive(Debug)]
pub struct BandedKeypoints<'a, D> {
    keypoints: &'a mut [Keypoint],
    descriptors: &'a mut [D],
    len: usize,
    dropped: usize,
}

impl<'a, D: Copy> BandedKeypoints<'a, D> {
    /// An empty set over `keypoints` and `descriptors` (capacity: the shorter length).
    pub fn new(keypoints: &'a mut [Keypoint], descriptors: &'a mut [D]) -> Self {
        Self {
            keypoints,
            descriptors,
            len: 0,
            dropped: 0,
        }
    }

    /// Capacity: the shorter of the two slices.
    pub fn capacity(&self) -> usize {
        self.keypoints.len().min(self.descriptors.len())
    }

    /// The kept keypoints (strongest first once the frame is complete).
    pub fn keypoints(&self) -> &[Keypoint] {
        &self.keypoints[..self.len]
    }

    /// Their descriptors, `descriptors()[k]` for `keypoints()[k]`.
    pub fn descriptors(&self) -> &[D] {
        &self.descriptors[..self.len]
    }

    /// Candidates not kept because the set was full.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// Offers a keypoint, waiting for its descriptor: kept while there is room, else in place
    /// of the weakest kept one if it is stronger.
    pub fn offer(&mut self, mut kp: Keypoint) {
        kp.orientation = f32::from_bits(PENDING);
        if self.len < self.capacity() {
            self.keypoints[self.len] = kp;
            self.len += 1;
            return;
        }
        self.dropped += 1;
        let weakest =
            (0..self.len).reduce(
                |a, b| match self.keypoints[a].rank_cmp(&self.keypoints[b]) {
                    Ordering::Greater => a,
                    _ => b,
                },
            );
        if let Some(w) = weakest
            && kp.rank_cmp(&self.keypoints[w]) == Ordering::Less
        {
            self.keypoints[w] = kp;
        }
    }

    /// Calls `describe(kp)` for each waiting keypoint that `ready(kp)` accepts, storing the
    /// descriptor (the keypoint's orientation is set by `describe`, or `+0.0` if it leaves it).
    pub fn describe_waiting<E>(
        &mut self,
        mut ready: impl FnMut(&Keypoint) -> bool,
        mut describe: impl FnMut(&mut Keypoint) -> Result<D, E>,
    ) -> Result<(), E> {
        let pairs = self.keypoints[..self.len]
            .iter_mut()
            .zip(self.descriptors.iter_mut());
        for (kp, d) in pairs {
            if kp.orientation.to_bits() == PENDING && ready(kp) {
                kp.orientation = f32::from_bits(0);
                *d = describe(kp)?;
            }
        }
        Ok(())
    }

    /// Sorts keypoints and descriptors together, strongest first (heap sort: no allocation,
    /// `O(n log n)` swaps of both).
    pub fn sort(&mut self) {
        let n = self.len;
        for i in (0..n / 2).rev() {
            self.sift_down(i, n);
        }
        for end in (1..n).rev() {
            self.swap(0, end);
            self.sift_down(0, end);
        }
    }

    /// Restores the heap below `i` in the first `n` entries, weakest at the root, so that the
    /// sort leaves the strongest first.
    fn sift_down(&mut self, mut i: usize, n: usize) {
        loop {
            let (left, right) = (2 * i + 1, 2 * i + 2);
            let mut weakest = i;
            for child in [left, right] {
                if child < n
                    && self.keypoints[child].rank_cmp(&self.keypoints[weakest]) == Ordering::Greater
                {
                    weakest = child;
                }
            }
            if weakest == i {
                return;
            }
            self.swap(i, weakest);
            i = weakest;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.keypoints.swap(a, b);
        self.descriptors.swap(a, b);
    }

    /// Empties the set.
    pub fn clear(&mut self) {
        self.len = 0;
        self.dropped = 0;
    }
}

/// A scan's sink that hands every keypoint, moved to frame coordinates by `to_frame`, to the
/// set. Only `offer` is used by the scans; the rest reads the set.
pub(super) struct FrameSink<'s, 'a, D, F> {
    pub(super) set: &'s mut BandedKeypoints<'a, D>,
    pub(super) to_frame: F,
}

impl<D: Copy, F: FnMut(Keypoint) -> Keypoint> KeypointSink for FrameSink<'_, '_, D, F> {
    fn offer(&mut self, point: Keypoint) {
        let frame = (self.to_frame)(point);
        self.set.offer(frame);
    }
    fn points(&self) -> &[Keypoint] {
        self.set.keypoints()
    }
    fn points_mut(&mut self) -> &mut [Keypoint] {
        let len = self.set.len;
        &mut self.set.keypoints[..len]
    }
    fn sort(&mut self) {
        self.set.sort();
    }
    fn dropped(&self) -> usize {
        self.set.dropped()
    }
    fn clear(&mut self) {
        self.set.clear();
    }
}
