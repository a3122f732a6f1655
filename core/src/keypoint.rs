//! Keypoints, descriptors and the fixed-capacity keypoint set.
//!
//! The set keeps the strongest `N` keypoints under a *total* order ([`Keypoint::rank_cmp`]):
//! response first, ties broken by octave, interval and sample position. Whatever order the
//! candidates arrive in (a CPU scan, or GPU atomics), the kept set and its final order are the same.

use core::cmp::Ordering;

/// Length of a SURF-64 descriptor.
pub const DESCRIPTOR_LEN: usize = 64;

/// A SURF-64 descriptor, unit length.
pub type Descriptor = [f32; DESCRIPTOR_LEN];

/// A descriptor quantised to Q7 (one signed byte per component, value = round(127 * f)).
pub type DescriptorQ7 = [i8; DESCRIPTOR_LEN];

/// One interest point.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Keypoint {
    /// Sub-pixel column, in pixels of the input image.
    pub x: f32,
    /// Sub-pixel row, in pixels of the input image.
    pub y: f32,
    /// Scale (SURF: `1.2 / 9 * filter size`, i.e. the Gaussian sigma; Harris: the fixed
    /// descriptor scale).
    pub scale: f32,
    /// Orientation in radians in `[0, 2*pi)`; 0 for upright keypoints.
    pub orientation: f32,
    /// Detector response (SURF: Hessian determinant in OpenSURF units; Harris: R).
    pub response: f32,
    /// Sign of the Laplacian (`Dxx + Dyy`): `1` when the trace is >= 0 (a dark blob on a bright
    /// ground), `-1` otherwise (a bright blob on a dark ground). Harris points have `0`, which the
    /// matcher's sign test treats as compatible with anything.
    pub laplacian: i8,
    /// Octave index (0-based) of the sample the point was found at.
    pub octave: u8,
    /// Interval index (0..4) of the sample the point was found at.
    pub interval: u8,
    /// Column of the sample in the octave's sample grid (pixel column / sample step).
    pub sample_x: u32,
    /// Row of the sample in the octave's sample grid.
    pub sample_y: u32,
}

impl Keypoint {
    /// An all-zero keypoint: the initial value of caller-owned keypoint storage (`static`
    /// arrays on a microcontroller need a constant).
    pub const ZERO: Keypoint = Keypoint {
        x: 0.0,
        y: 0.0,
        scale: 0.0,
        orientation: 0.0,
        response: 0.0,
        laplacian: 0,
        octave: 0,
        interval: 0,
        sample_x: 0,
        sample_y: 0,
    };

    /// The total order used for "strongest first": larger response first, then lower octave,
    /// lower interval, lower sample row, lower sample column. `Ordering::Less` means `self` ranks
    /// before (is stronger than) `other`.
    pub fn rank_cmp(&self, other: &Self) -> Ordering {
        other
            .response
            .total_cmp(&self.response)
            .then(self.octave.cmp(&other.octave))
            .then(self.interval.cmp(&other.interval))
            .then(self.sample_y.cmp(&other.sample_y))
            .then(self.sample_x.cmp(&other.sample_x))
    }
}

/// Where a detector puts its candidates: a bounded collection that keeps the strongest.
///
/// Both implementations keep, after any sequence of offers, exactly the strongest `capacity`
/// points under [`Keypoint::rank_cmp`] (whatever the offer order) and count the rest as dropped.
pub trait KeypointSink {
    /// Offers a candidate. When full, the weaker of `point` and the weakest kept point is dropped.
    fn offer(&mut self, point: Keypoint);
    /// The kept points (in no particular order until [`KeypointSink::sort`]).
    fn points(&self) -> &[Keypoint];
    /// The kept points, mutable (orientation assignment writes into them).
    fn points_mut(&mut self) -> &mut [Keypoint];
    /// Sorts the kept points strongest first (the canonical output order).
    fn sort(&mut self) {
        self.points_mut().sort_unstable_by(Keypoint::rank_cmp);
    }
    /// Number of candidates not kept because the sink was full.
    fn dropped(&self) -> usize;
    /// Empties the sink and resets the dropped count.
    fn clear(&mut self);
}

/// Whether `a` ranks after (is weaker than) `b`.
fn weaker(a: &Keypoint, b: &Keypoint) -> bool {
    a.rank_cmp(b) == Ordering::Greater
}

/// Restores the heap order below `i`: in a "weakest-first" binary heap every parent is weaker
/// than (or equal to) its children, so the weakest kept point is always at index 0.
fn sift_down(points: &mut [Keypoint], mut i: usize) {
    loop {
        let (left, right) = (2 * i + 1, 2 * i + 2);
        let mut weakest = i;
        if left < points.len() && weaker(&points[left], &points[weakest]) {
            weakest = left;
        }
        if right < points.len() && weaker(&points[right], &points[weakest]) {
            weakest = right;
        }
        if weakest == i {
            return;
        }
        points.swap(i, weakest);
        i = weakest;
    }
}

/// The full-sink path shared by both sinks: replaces the weakest kept point if `point` is
/// stronger. The kept points are turned into a weakest-first heap on the first overflow (O(N))
/// and kept one (`is_heap`), so each later offer costs O(log N), not a rescan.
fn offer_when_full(points: &mut [Keypoint], is_heap: &mut bool, point: Keypoint) {
    if points.is_empty() {
        return;
    }
    if !*is_heap {
        for i in (0..points.len() / 2).rev() {
            sift_down(points, i);
        }
        *is_heap = true;
    }
    if weaker(&points[0], &point) {
        points[0] = point;
        sift_down(points, 0);
    }
}

/// A set of at most `N` keypoints stored inline (no allocator), keeping the strongest.
#[derive(Debug, Clone, Default)]
pub struct KeypointSet<const N: usize> {
    points: heapless::Vec<Keypoint, N>,
    dropped: usize,
    is_heap: bool,
}

impl<const N: usize> KeypointSet<N> {
    /// An empty set.
    pub const fn new() -> Self {
        Self {
            points: heapless::Vec::new(),
            dropped: 0,
            is_heap: false,
        }
    }
    /// Number of kept points.
    pub fn len(&self) -> usize {
        self.points.len()
    }
    /// Whether no point is kept.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
    /// The capacity `N`.
    pub const fn capacity(&self) -> usize {
        N
    }
    /// The kept points.
    pub fn as_slice(&self) -> &[Keypoint] {
        &self.points
    }
}

impl<const N: usize> KeypointSink for KeypointSet<N> {
    fn offer(&mut self, point: Keypoint) {
        if let Err(point) = self.points.push(point) {
            self.dropped += 1;
            offer_when_full(&mut self.points, &mut self.is_heap, point);
        }
    }
    fn points(&self) -> &[Keypoint] {
        &self.points
    }
    fn points_mut(&mut self) -> &mut [Keypoint] {
        self.is_heap = false;
        &mut self.points
    }
    fn dropped(&self) -> usize {
        self.dropped
    }
    fn clear(&mut self) {
        self.points.clear();
        self.dropped = 0;
        self.is_heap = false;
    }
}

/// A keypoint set over a caller-provided slice: the capacity is the slice length, chosen at run
/// time (for example from `--max-keypoints`), still without an allocator.
#[derive(Debug)]
pub struct KeypointBuffer<'a> {
    storage: &'a mut [Keypoint],
    len: usize,
    dropped: usize,
    is_heap: bool,
}

impl<'a> KeypointBuffer<'a> {
    /// An empty set whose capacity is `storage.len()`.
    pub fn new(storage: &'a mut [Keypoint]) -> Self {
        Self {
            storage,
            len: 0,
            dropped: 0,
            is_heap: false,
        }
    }
    /// Number of kept points.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether no point is kept.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.storage.len()
    }
}

impl KeypointSink for KeypointBuffer<'_> {
    fn offer(&mut self, point: Keypoint) {
        if let Some(slot) = self.storage.get_mut(self.len) {
            *slot = point;
            self.len += 1;
        } else {
            self.dropped += 1;
            offer_when_full(self.storage, &mut self.is_heap, point);
        }
    }
    fn points(&self) -> &[Keypoint] {
        &self.storage[..self.len]
    }
    fn points_mut(&mut self) -> &mut [Keypoint] {
        self.is_heap = false;
        &mut self.storage[..self.len]
    }
    fn dropped(&self) -> usize {
        self.dropped
    }
    fn clear(&mut self) {
        self.len = 0;
        self.dropped = 0;
        self.is_heap = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kp(response: f32, sx: u32) -> Keypoint {
        Keypoint {
            response,
            sample_x: sx,
            ..Keypoint::default()
        }
    }

    #[test]
    fn deep_heap_keeps_strongest() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        // Few distinct responses: many exact ties, broken by position.
        let all: std::vec::Vec<Keypoint> = (0..2000)
            .map(|i| kp(rng.gen_range(0..50) as f32, i as u32))
            .collect();
        let mut expected = all.clone();
        expected.sort_by(Keypoint::rank_cmp);
        expected.truncate(37);
        let mut storage = [Keypoint::default(); 37];
        let mut buffer = KeypointBuffer::new(&mut storage);
        for p in &all {
            buffer.offer(*p);
        }
        buffer.sort();
        assert_eq!(buffer.points(), &expected[..]);
        assert_eq!(buffer.dropped(), 2000 - 37);
    }

    #[test]
    fn keeps_strongest_whatever_the_order() {
        use rand::{SeedableRng, seq::SliceRandom};
        let mut all: std::vec::Vec<Keypoint> =
            (0..100).map(|i| kp((i % 37) as f32, i as u32)).collect();
        let mut expected = all.clone();
        expected.sort_by(Keypoint::rank_cmp);
        expected.truncate(10);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..20 {
            all.shuffle(&mut rng);
            let mut set = KeypointSet::<10>::new();
            let mut storage = [Keypoint::default(); 10];
            let mut buffer = KeypointBuffer::new(&mut storage);
            for p in &all {
                set.offer(*p);
                buffer.offer(*p);
            }
            set.sort();
            buffer.sort();
            assert_eq!(set.as_slice(), &expected[..]);
            assert_eq!(buffer.points(), &expected[..]);
            assert_eq!(set.dropped(), 90);
            assert_eq!(buffer.dropped(), 90);
        }
    }
}
