//! Brute-force 2-NN descriptor matching with the ratio, sign-of-Laplacian, maximum-distance and
//! mutual (cross) tests, on `f32` SURF-64 descriptors or on their Q7 quantisation.
//!
//! # Definitions (the OpenCL matcher reproduces them)
//!
//! **Candidates.** For a query `q`, every train descriptor `t` is a candidate, except, when
//! [`MatchConfig::sign_test`] is on, those whose Laplacian sign differs from the query's: `(q, t)`
//! is compatible when `lap(q) == 0 || lap(t) == 0 || lap(q) == lap(t)` (Harris points have 0 and
//! are compatible with everything).
//!
//! **Distance key.** Candidates are ranked by a `u32` *key*, monotonic in the distance:
//! - `f32`: the squared L2 distance `s` computed in `f32` in a fixed order, and `key = s.to_bits()`
//!   (for non-negative floats the bit pattern is ordered like the value). Order: 16 lanes
//!   `acc[j] = 0`, then for `k` in `0..4` (in this order) `d = a[16k + j] - b[16k + j]`,
//!   `acc[j] = acc[j] + d * d` (the product is rounded, then the sum; no fused multiply-add); then
//!   a halving tree: `acc[j] = acc[j] + acc[j + 8]` for `j < 8`, then `+ acc[j + 4]` for `j < 4`,
//!   then `+ acc[j + 2]` for `j < 2`, and `s = acc[0] + acc[1]`. The 16 lanes are what lets the
//!   loop vectorise; fixing them makes the result reproducible bit for bit on a GPU.
//! - Q7: the exact integer `key = sum (a[i] - b[i])^2` (at most `64 * 255^2`, accumulated in `i32`).
//!
//! **2-NN.** Per query, the best key `k1` (train index `t1`) and the second best `k2` over all
//! candidates, scanning trains in index order: a train replaces the best only when its key is
//! strictly smaller, so on equal keys **the lower train index wins**; an exact tie of the best
//! (a duplicate descriptor) makes `k2 == k1`, so the ratio test then rejects the query.
//!
//! **Reported distance.** `f32`: `sqrt(s)`; Q7: `sqrt(key as f32) / 127` (`f32`, in the units of
//! unit-length descriptors). Square roots are taken only for the two winners.
//!
//! **Ratio test** on distances (not squared): with `ratio < 1`, keep when `d1 < ratio * d2`:
//! - `f32`: evaluated as written in `f32`: `sqrt(s1) < ratio * sqrt(s2)`.
//! - Q7: exactly, in integers: `k1 < ratio^2 * k2`, with `ratio = m * 2^-e` decomposed from its
//!   `f32` bits, as `k1 * 2^(2e) < m^2 * k2` in `u128` (no rounding anywhere).
//!
//!   A query with a single candidate passes. `ratio == 1` switches the test off (every query with
//!   a candidate passes, also exact ties); this is what mutual-only matching (OpenCV's
//!   `crossCheck`) uses.
//!
//! **Maximum distance** (optional): keep when the reported distance `<= max_distance`.
//!
//! **Mutual check** (optional): keep `(q, t1)` only when `q` is also the nearest query of `t1`:
//! the smallest key over all compatible queries, ties to the lower query index. No ratio test in
//! that direction. The nearest query of every train is gathered in the same pass over the
//! distances (as Chariot & Keriven do both directions at once), into a caller-provided
//! [`TrainBest`] slice of [`scratch_len`] entries.
//!
//! # Splitting the queries (threads)
//! [`match_range_f32`] / [`match_range_q7`] match a range of queries and *update* a per-train
//! [`TrainBest`] slice with the nearest query among that range. To match in parallel: give each
//! thread a disjoint range, its own output slice and its own `TrainBest` slice (each filled with
//! [`TrainBest::EMPTY`] by [`reset_train_best`]); then [`merge_train_best`] the slices into one
//! (smaller key wins, ties to the lower query index, so the merge order does not matter) and call
//! [`retain_mutual`] on every thread's matches. The result is exactly that of [`match_f32`].
//! Without the mutual check the `TrainBest` slice may be empty and the outputs are simply
//! concatenated.
//!
//! Output: at most one match per query, in increasing query order.
//!
//! ```
//! use surfcl_core::{Keypoint, matcher::{MatchConfig, Match, TrainBest, match_f32, scratch_len}};
//! let mut a = [0.0f32; 64];
//! a[0] = 1.0;
//! let mut b = [0.0f32; 64];
//! b[1] = 1.0;
//! let kps = [Keypoint::default(); 2];
//! let config = MatchConfig { cross_check: true, ..MatchConfig::default() };
//! let mut best = [TrainBest::EMPTY; 2];
//! assert_eq!(scratch_len(2), 2);
//! let mut out = [Match::default(); 2];
//! let n = match_f32(&kps, &[a, b], &kps, &[b, a], &config, &mut best, &mut out).unwrap();
//! assert_eq!(n, 2);
//! assert_eq!((out[0].query, out[0].train), (0, 1));
//! assert_eq!(out[0].distance, 0.0);
//! ```

use core::fmt;
use core::marker::PhantomData;
use core::ops::Range;

use crate::keypoint::{Descriptor, DescriptorQ7, Keypoint};
use crate::math::sqrtf;

/// Matching parameters, shared by the CPU and OpenCL matchers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchConfig {
    /// Ratio test on distances, in `(0, 1]`: keep when `d1 < ratio * d2`; `1.0` disables it.
    /// Default 0.8 (Lowe; Sommer's 0.65 on squared distances is about the same).
    pub ratio: f32,
    /// Skip candidates whose Laplacian sign differs from the query's. Default true.
    pub sign_test: bool,
    /// Keep only mutual nearest neighbours. Default false.
    pub cross_check: bool,
    /// Reject matches whose distance exceeds this (finite, `>= 0`). Default none.
    pub max_distance: Option<f32>,
}

impl Default for MatchConfig {
    fn default() -> Self {
        Self {
            ratio: 0.8,
            sign_test: true,
            cross_check: false,
            max_distance: None,
        }
    }
}

impl MatchConfig {
    /// Checks the parameters (every matching function calls it too).
    pub fn validate(&self) -> Result<(), MatchError> {
        // `!(x > 0)` also rejects NaN.
        if !(self.ratio > 0.0 && self.ratio <= 1.0) {
            return Err(MatchError::InvalidRatio);
        }
        if let Some(d) = self.max_distance
            && !(d.is_finite() && d >= 0.0)
        {
            return Err(MatchError::InvalidMaxDistance);
        }
        Ok(())
    }
}

/// One match: query index, train index, distance (see the module docs for its units).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Match {
    /// Index into the query keypoints/descriptors.
    pub query: u32,
    /// Index into the train keypoints/descriptors.
    pub train: u32,
    /// Distance of the pair.
    pub distance: f32,
}

/// The nearest query of one train descriptor, gathered for the mutual check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainBest {
    /// Distance key (module docs); `u32::MAX` when no compatible query was seen.
    pub key: u32,
    /// Query index; `u32::MAX` when none.
    pub query: u32,
}

impl TrainBest {
    /// No query seen yet.
    pub const EMPTY: Self = Self {
        key: u32::MAX,
        query: u32::MAX,
    };

    /// Whether `self` is nearer than `other` (smaller key, ties to the lower query index).
    #[inline]
    fn beats(&self, other: &Self) -> bool {
        (self.key, self.query) < (other.key, other.query)
    }
}

/// Why matching was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchError {
    /// `ratio` is not in `(0, 1]`.
    InvalidRatio,
    /// `max_distance` is negative, infinite or NaN.
    InvalidMaxDistance,
    /// Keypoints and descriptors of one side have different lengths.
    LengthMismatch {
        /// Number of keypoints.
        keypoints: usize,
        /// Number of descriptors.
        descriptors: usize,
    },
    /// More descriptors than `u32` indices can address.
    TooMany {
        /// Number given.
        len: usize,
    },
    /// The query range is not inside `0..queries`.
    QueryRange {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// Number of queries.
        len: usize,
    },
    /// The [`TrainBest`] scratch does not have [`scratch_len`] entries.
    ScratchLength {
        /// Entries required.
        expected: usize,
        /// Entries given.
        actual: usize,
    },
    /// The output slice is shorter than the number of queries matched.
    OutputLength {
        /// Entries required (one per query).
        expected: usize,
        /// Entries given.
        actual: usize,
    },
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::InvalidRatio => write!(f, "ratio must be in (0, 1]"),
            MatchError::InvalidMaxDistance => {
                write!(f, "maximum distance must be finite and non-negative")
            }
            MatchError::LengthMismatch {
                keypoints,
                descriptors,
            } => write!(f, "{keypoints} keypoints but {descriptors} descriptors"),
            MatchError::TooMany { len } => {
                write!(f, "{len} descriptors exceed the u32 index range")
            }
            MatchError::QueryRange { start, end, len } => {
                write!(f, "query range {start}..{end} is not inside 0..{len}")
            }
            MatchError::ScratchLength { expected, actual } => {
                write!(f, "scratch has {actual} entries, {expected} required")
            }
            MatchError::OutputLength { expected, actual } => {
                write!(f, "output has {actual} entries, {expected} required")
            }
        }
    }
}

impl core::error::Error for MatchError {}

/// Number of [`TrainBest`] entries the mutual check needs for `n_train` train descriptors.
pub const fn scratch_len(n_train: usize) -> usize {
    n_train
}

/// Fills `best` with [`TrainBest::EMPTY`] (before a series of [`match_range_f32`] calls).
pub fn reset_train_best(best: &mut [TrainBest]) {
    best.fill(TrainBest::EMPTY);
}

/// Merges per-train nearest queries gathered over another query range into `into`.
pub fn merge_train_best(into: &mut [TrainBest], from: &[TrainBest]) -> Result<(), MatchError> {
    if into.len() != from.len() {
        return Err(MatchError::ScratchLength {
            expected: into.len(),
            actual: from.len(),
        });
    }
    for (a, b) in into.iter_mut().zip(from) {
        if b.beats(a) {
            *a = *b;
        }
    }
    Ok(())
}

/// Keeps, in order, the matches whose query is the nearest query of their train; returns the new
/// count (the kept matches are moved to the front of `matches`). A match whose train index is out
/// of range of `best` is dropped.
pub fn retain_mutual(matches: &mut [Match], best: &[TrainBest]) -> usize {
    let mut kept = 0;
    for i in 0..matches.len() {
        let m = matches[i];
        if best
            .get(m.train as usize)
            .is_some_and(|b| b.query == m.query)
        {
            matches[kept] = m;
            kept += 1;
        }
    }
    kept
}

/// The `f32` matcher's kernel: the 16 lane sums of squared differences of the module docs,
/// before the halving tree, `acc[j] = acc[j] + d * d` with `d = a[16 k + j] - b[16 k + j]` for
/// `k` in `0..4`. [`match_range_f32_with`] takes it as a type, so that a std layer can hand in
/// the same loop compiled with wider vectors (and chosen at run time).
pub trait LaneSums {
    /// The lane sums, bit for bit those of [`InlineLaneSums`].
    fn lane_sums(a: &Descriptor, b: &Descriptor) -> [f32; 16];
}

/// The portable kernel, out of line on purpose: inlined into the 2-NN loop together with the
/// reduction tree, LLVM's SLP vectoriser splits it into 2-lane vectors (half the speed on
/// baseline x86-64); on its own it becomes 16 full-width subtract/multiply/add triples. The call
/// costs a few cycles.
#[derive(Debug, Clone, Copy)]
pub struct PortableLaneSums;

impl LaneSums for PortableLaneSums {
    #[inline(always)]
    fn lane_sums(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
        lane_sums_out_of_line(a, b)
    }
}

#[inline(never)]
fn lane_sums_out_of_line(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
    InlineLaneSums::lane_sums(a, b)
}

/// The [`LaneSums`] loop inlined into its caller: for a std layer's own out-of-line function
/// compiled with other target features (which calls it), not for the matcher's loop itself.
#[derive(Debug, Clone, Copy)]
pub struct InlineLaneSums;

impl LaneSums for InlineLaneSums {
    #[inline(always)]
    fn lane_sums(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
        let mut acc = [0.0f32; 16];
        for (ca, cb) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
            for j in 0..16 {
                let d = ca[j] - cb[j];
                acc[j] += d * d;
            }
        }
        acc
    }
}

/// Squared L2 distance in the fixed 16-lane order of the module docs, lane sums from `K`.
#[inline(always)]
fn dist_sq_f32<K: LaneSums>(a: &Descriptor, b: &Descriptor) -> f32 {
    let acc = K::lane_sums(a, b);
    let mut half = [0.0f32; 8];
    for j in 0..8 {
        half[j] = acc[j] + acc[j + 8];
    }
    let q = [
        half[0] + half[4],
        half[1] + half[5],
        half[2] + half[6],
        half[3] + half[7],
    ];
    (q[0] + q[2]) + (q[1] + q[3])
}

/// The Q7 matcher's kernel: the exact squared distance of a Q7 query (widened to `i16` once per
/// query) and a Q7 descriptor. [`match_range_q7_with`] takes it as a type, as
/// [`match_range_f32_with`] takes [`LaneSums`].
pub trait DistanceQ7 {
    /// The squared distance (exact: the same for every implementation).
    fn dist_sq(a: &[i16; 64], b: &DescriptorQ7) -> u32;
}

/// The portable Q7 kernel, out of line for the same reason as [`PortableLaneSums`]. With the
/// query already in `i16`, each 16 train bytes become 2 unpacks, 2 shifts, 2 subtractions and 2
/// `pmaddwd` on SSE2 (about 55 instructions per pair; widening both sides per pair took 130).
#[derive(Debug, Clone, Copy)]
pub struct PortableDistanceQ7;

impl DistanceQ7 for PortableDistanceQ7 {
    #[inline(always)]
    fn dist_sq(a: &[i16; 64], b: &DescriptorQ7) -> u32 {
        dist_sq_q7_out_of_line(a, b)
    }
}

#[inline(never)]
fn dist_sq_q7_out_of_line(a: &[i16; 64], b: &DescriptorQ7) -> u32 {
    InlineDistanceQ7::dist_sq(a, b)
}

/// The Q7 kernel inlined into the matcher's loop: with the whole loop compiled with wider
/// vector instructions (a std layer's `#[target_feature]` function around
/// [`match_range_q7_with`]) it is a third faster than out of line.
#[derive(Debug, Clone, Copy)]
pub struct InlineDistanceQ7;

impl DistanceQ7 for InlineDistanceQ7 {
    #[inline(always)]
    fn dist_sq(a: &[i16; 64], b: &DescriptorQ7) -> u32 {
        let mut acc = [0i32; 16];
        for k in 0..4 {
            for j in 0..16 {
                // |a - b| <= 255: no i16 overflow.
                let d = i32::from(a[16 * k + j] - i16::from(b[16 * k + j]));
                acc[j] += d * d;
            }
        }
        // At most 64 * 255^2 = 4_161_600: no overflow, and non-negative.
        acc.iter().sum::<i32>().unsigned_abs()
    }
}

/// What the 2-NN keys of [`accept_two_nearest`] encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// The bits of the `f32` squared distance (16-lane order of the module docs).
    F32,
    /// The exact integer squared distance of Q7 descriptors.
    Q7,
}

/// The decision for one query from its best and second-best keys (`u32::MAX`: none): the ratio
/// test, then the distance bound (module docs). Returns the reported distance when the query
/// is kept. The CPU matcher decides through this, and so does every device matcher that finds
/// the 2-NN elsewhere, so the decisions agree bit for bit.
pub fn accept_two_nearest(kind: KeyKind, k1: u32, k2: u32, config: &MatchConfig) -> Option<f32> {
    match kind {
        KeyKind::F32 => accept::<F32Metric>(k1, k2, config),
        KeyKind::Q7 => accept::<Q7Metric>(k1, k2, config),
    }
}

fn accept<M: Metric>(k1: u32, k2: u32, config: &MatchConfig) -> Option<f32> {
    if k1 == u32::MAX {
        return None; // no compatible candidate
    }
    if config.ratio < 1.0 && k2 != u32::MAX && !M::ratio_pass(k1, k2, config.ratio) {
        return None;
    }
    let distance = M::distance(k1);
    // NaN distances (NaN descriptors) never pass a maximum.
    if config
        .max_distance
        .is_some_and(|max| distance.is_nan() || distance > max)
    {
        return None;
    }
    Some(distance)
}

/// The two descriptor formats behind one matching loop.
trait Metric {
    type D;
    /// The query in the form the distance kernel wants (computed once per query).
    type Query: Copy;
    fn prepare(a: &Self::D) -> Self::Query;
    fn key(a: &Self::Query, b: &Self::D) -> u32;
    fn distance(key: u32) -> f32;
    fn ratio_pass(k1: u32, k2: u32, ratio: f32) -> bool;
}

/// `f32` descriptors, lane sums from `K`.
struct F32Metric<K = PortableLaneSums>(PhantomData<K>);
impl<K: LaneSums> Metric for F32Metric<K> {
    type D = Descriptor;
    type Query = Descriptor;
    fn prepare(a: &Descriptor) -> Descriptor {
        *a
    }
    #[inline(always)]
    fn key(a: &Descriptor, b: &Descriptor) -> u32 {
        dist_sq_f32::<K>(a, b).to_bits()
    }
    fn distance(key: u32) -> f32 {
        sqrtf(f32::from_bits(key))
    }
    fn ratio_pass(k1: u32, k2: u32, ratio: f32) -> bool {
        Self::distance(k1) < ratio * Self::distance(k2)
    }
}

/// Q7 descriptors, distances from `K`.
struct Q7Metric<K = PortableDistanceQ7>(PhantomData<K>);
impl<K: DistanceQ7> Metric for Q7Metric<K> {
    type D = DescriptorQ7;
    type Query = [i16; 64];
    fn prepare(a: &DescriptorQ7) -> [i16; 64] {
        a.map(i16::from)
    }
    #[inline(always)]
    fn key(a: &[i16; 64], b: &DescriptorQ7) -> u32 {
        K::dist_sq(a, b)
    }
    fn distance(key: u32) -> f32 {
        sqrtf(key as f32) / 127.0
    }
    fn ratio_pass(k1: u32, k2: u32, ratio: f32) -> bool {
        ratio_pass_exact(k1, k2, ratio)
    }
}

/// `k1 < ratio^2 * k2`, exactly, for a positive finite `ratio <= 1`.
fn ratio_pass_exact(k1: u32, k2: u32, ratio: f32) -> bool {
    let bits = ratio.to_bits();
    let biased = (bits >> 23) & 0xff;
    let frac = bits & 0x7f_ffff;
    // ratio = m * 2^-e with an integer mantissa m < 2^24.
    let (m, e) = if biased == 0 {
        (frac, 149u32)
    } else {
        (frac | 0x80_0000, 150 - biased.min(150))
    };
    let rhs = u128::from(m) * u128::from(m) * u128::from(k2); // < 2^48 * 2^32
    let shift = 2 * e;
    if shift > 95 {
        // k1 << shift would leave u128; here ratio^2 * k2 < 2^80 / 2^96 < 1, so the test is
        // `k1 < (a positive number below 1)`: true exactly when k1 == 0 and k2 > 0.
        return k1 == 0 && rhs > 0;
    }
    (u128::from(k1) << shift) < rhs
}

#[inline]
fn compatible(a: i8, b: i8) -> bool {
    a == 0 || b == 0 || a == b
}

fn check_side<D>(keypoints: &[Keypoint], descriptors: &[D]) -> Result<(), MatchError> {
    if keypoints.len() != descriptors.len() {
        return Err(MatchError::LengthMismatch {
            keypoints: keypoints.len(),
            descriptors: descriptors.len(),
        });
    }
    if u32::try_from(descriptors.len()).is_err() || descriptors.len() == u32::MAX as usize {
        return Err(MatchError::TooMany {
            len: descriptors.len(),
        });
    }
    Ok(())
}

/// Inputs of one matching call, checked.
struct Sides<'a, D> {
    query_kps: &'a [Keypoint],
    query_desc: &'a [D],
    train_kps: &'a [Keypoint],
    train_desc: &'a [D],
}

impl<'a, D> Sides<'a, D> {
    fn new(
        query_kps: &'a [Keypoint],
        query_desc: &'a [D],
        train_kps: &'a [Keypoint],
        train_desc: &'a [D],
    ) -> Self {
        Self {
            query_kps,
            query_desc,
            train_kps,
            train_desc,
        }
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn match_range_impl<M: Metric>(
    sides: Sides<'_, M::D>,
    queries: Range<usize>,
    config: &MatchConfig,
    best: &mut [TrainBest],
    out: &mut [Match],
) -> Result<usize, MatchError> {
    config.validate()?;
    check_side(sides.query_kps, sides.query_desc)?;
    check_side(sides.train_kps, sides.train_desc)?;
    let n_query = sides.query_desc.len();
    if queries.start > queries.end || queries.end > n_query {
        return Err(MatchError::QueryRange {
            start: queries.start,
            end: queries.end,
            len: n_query,
        });
    }
    let n_train = sides.train_desc.len();
    if config.cross_check && best.len() != scratch_len(n_train) {
        return Err(MatchError::ScratchLength {
            expected: scratch_len(n_train),
            actual: best.len(),
        });
    }
    if out.len() < queries.len() {
        return Err(MatchError::OutputLength {
            expected: queries.len(),
            actual: out.len(),
        });
    }
    let mut count = 0;
    let mut q0 = queries.start;
    while q0 < queries.end {
        let block = (q0..queries.end.min(q0 + QUERY_BLOCK)).len();
        let states = if config.cross_check {
            two_nearest::<M, true>(&sides, q0, block, config.sign_test, best)
        } else {
            two_nearest::<M, false>(&sides, q0, block, config.sign_test, best)
        };
        for (i, &(k1, k2, t1)) in states[..block].iter().enumerate() {
            let Some(distance) = accept::<M>(k1, k2, config) else {
                continue;
            };
            out[count] = Match {
                // Both fit: checked by check_side.
                query: (q0 + i) as u32,
                train: t1 as u32,
                distance,
            };
            count += 1;
        }
        q0 += block;
    }
    if config.cross_check {
        count = retain_mutual(&mut out[..count], best);
    }
    Ok(count)
}

/// Queries matched together: each train descriptor is loaded once per block and reused from L1,
/// so the train set streams from memory `QUERY_BLOCK` times less often (at N = 15000 the train
/// set, 3.8 MB, does not fit in L2). 16 queries are 4 KB of `f32` (2 KB as Q7), which stay in
/// L1 beside the train descriptor; on real SURF descriptors, one thread, 16 took the `f32` match
/// with the sign test at N = 15000 from 1185 ms (4 queries) to 922 ms, Q7 from 604 to 363 ms.
const QUERY_BLOCK: usize = 16;

/// Best key, second key and best train index of the `block` queries from `q0` (`u32::MAX` keys
/// when none); with `CROSS`, also updates the nearest query of every compatible train.
#[inline(always)]
fn two_nearest<M: Metric, const CROSS: bool>(
    sides: &Sides<'_, M::D>,
    q0: usize,
    block: usize,
    sign_test: bool,
    best: &mut [TrainBest],
) -> [(u32, u32, usize); QUERY_BLOCK] {
    let mut states = [(u32::MAX, u32::MAX, usize::MAX); QUERY_BLOCK];
    let mut prepared = [M::prepare(&sides.query_desc[q0]); QUERY_BLOCK];
    let mut laps = [0i8; QUERY_BLOCK];
    for i in 0..block {
        prepared[i] = M::prepare(&sides.query_desc[q0 + i]);
        if sign_test {
            laps[i] = sides.query_kps[q0 + i].laplacian;
        }
    }
    let n = sides.train_desc.len();
    let mut start = 0;
    // Runs of equal train Laplacian: a run incompatible with every query of the block is skipped
    // without computing distances (trains sorted by Laplacian make this one branch per run).
    while start < n {
        let run_lap = sides.train_kps[start].laplacian;
        let mut end = start + 1;
        while end < n && sides.train_kps[end].laplacian == run_lap {
            end += 1;
        }
        let mut mask = [false; QUERY_BLOCK];
        for i in 0..block {
            mask[i] = compatible(laps[i], run_lap);
        }
        if mask.iter().any(|&m| m) {
            for (t, b) in sides.train_desc[start..end].iter().enumerate() {
                let t = start + t;
                for i in 0..block {
                    if !mask[i] {
                        continue;
                    }
                    let k = M::key(&prepared[i], b);
                    let (k1, k2, t1) = &mut states[i];
                    if k < *k2 {
                        if k < *k1 {
                            *k2 = *k1;
                            *k1 = k;
                            *t1 = t;
                        } else {
                            *k2 = k;
                        }
                    }
                    if CROSS {
                        // Queries arrive in increasing order (within and across blocks): strict
                        // `<` keeps the lower index.
                        if let Some(slot) = best.get_mut(t)
                            && k < slot.key
                        {
                            *slot = TrainBest {
                                key: k,
                                query: (q0 + i) as u32,
                            };
                        }
                    }
                }
            }
        }
        start = end;
    }
    states
}

/// Matches every query against every train descriptor (`f32`). `best` needs
/// [`scratch_len`]`(train)` entries when `config.cross_check`, else it may be empty; `out` needs
/// at least one entry per query. Returns the number of matches written to the front of `out`.
pub fn match_f32(
    query_keypoints: &[Keypoint],
    query_descriptors: &[Descriptor],
    train_keypoints: &[Keypoint],
    train_descriptors: &[Descriptor],
    config: &MatchConfig,
    best: &mut [TrainBest],
    out: &mut [Match],
) -> Result<usize, MatchError> {
    reset_train_best(best);
    let sides = Sides::new(
        query_keypoints,
        query_descriptors,
        train_keypoints,
        train_descriptors,
    );
    match_range_impl::<F32Metric>(sides, 0..query_descriptors.len(), config, best, out)
}

/// [`match_f32`] for Q7 descriptors (exact integer distances and ratio test).
pub fn match_q7(
    query_keypoints: &[Keypoint],
    query_descriptors: &[DescriptorQ7],
    train_keypoints: &[Keypoint],
    train_descriptors: &[DescriptorQ7],
    config: &MatchConfig,
    best: &mut [TrainBest],
    out: &mut [Match],
) -> Result<usize, MatchError> {
    reset_train_best(best);
    let sides = Sides::new(
        query_keypoints,
        query_descriptors,
        train_keypoints,
        train_descriptors,
    );
    match_range_impl::<Q7Metric>(sides, 0..query_descriptors.len(), config, best, out)
}

/// Matches the queries in `queries` (indices into the full query slices) and, with
/// `config.cross_check`, *updates* `best` (not reset here) with the nearest query of each train
/// among them. The matches returned have passed the ratio and distance tests and the mutual test
/// *as far as `best` knows so far*; after all ranges are done and their `best` slices merged, call
/// [`retain_mutual`] on them for the final mutual check (module docs, "Splitting the queries").
#[allow(clippy::too_many_arguments)]
pub fn match_range_f32(
    query_keypoints: &[Keypoint],
    query_descriptors: &[Descriptor],
    queries: Range<usize>,
    train_keypoints: &[Keypoint],
    train_descriptors: &[Descriptor],
    config: &MatchConfig,
    best: &mut [TrainBest],
    out: &mut [Match],
) -> Result<usize, MatchError> {
    match_range_f32_with::<PortableLaneSums>(
        query_keypoints,
        query_descriptors,
        queries,
        train_keypoints,
        train_descriptors,
        config,
        best,
        out,
    )
}

/// [`match_range_f32`] with the kernel `K` (the same results for every `K` that keeps its
/// contract): the std layer passes [`InlineLaneSums`] compiled with AVX2 when the CPU has it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn match_range_f32_with<K: LaneSums>(
    query_keypoints: &[Keypoint],
    query_descriptors: &[Descriptor],
    queries: Range<usize>,
    train_keypoints: &[Keypoint],
    train_descriptors: &[Descriptor],
    config: &MatchConfig,
    best: &mut [TrainBest],
    out: &mut [Match],
) -> Result<usize, MatchError> {
    let sides = Sides::new(
        query_keypoints,
        query_descriptors,
        train_keypoints,
        train_descriptors,
    );
    match_range_impl::<F32Metric<K>>(sides, queries, config, best, out)
}

/// [`match_range_f32`] for Q7 descriptors.
#[allow(clippy::too_many_arguments)]
pub fn match_range_q7(
    query_keypoints: &[Keypoint],
    query_descriptors: &[DescriptorQ7],
    queries: Range<usize>,
    train_keypoints: &[Keypoint],
    train_descriptors: &[DescriptorQ7],
    config: &MatchConfig,
    best: &mut [TrainBest],
    out: &mut [Match],
) -> Result<usize, MatchError> {
    match_range_q7_with::<PortableDistanceQ7>(
        query_keypoints,
        query_descriptors,
        queries,
        train_keypoints,
        train_descriptors,
        config,
        best,
        out,
    )
}

/// [`match_range_q7`] with the kernel `K`, the whole loop inlined into the caller: for a caller
/// compiled with wider vector instructions than the target's baseline (the std layer wraps it,
/// with [`InlineDistanceQ7`], in a `#[target_feature(enable = "avx2")]` function chosen at run
/// time). Exact integer distances: the same results at any vector width.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn match_range_q7_with<K: DistanceQ7>(
    query_keypoints: &[Keypoint],
    query_descriptors: &[DescriptorQ7],
    queries: Range<usize>,
    train_keypoints: &[Keypoint],
    train_descriptors: &[DescriptorQ7],
    config: &MatchConfig,
    best: &mut [TrainBest],
    out: &mut [Match],
) -> Result<usize, MatchError> {
    let sides = Sides::new(
        query_keypoints,
        query_descriptors,
        train_keypoints,
        train_descriptors,
    );
    match_range_impl::<Q7Metric<K>>(sides, queries, config, best, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use std::vec::Vec;

    fn random_unit(rng: &mut StdRng) -> Descriptor {
        let mut d = [0.0f32; 64];
        let mut n = 0.0f64;
        for v in d.iter_mut() {
            *v = rng.gen_range(-1.0..1.0);
            n += f64::from(*v) * f64::from(*v);
        }
        let n = n.sqrt() as f32;
        for v in d.iter_mut() {
            *v /= n;
        }
        d
    }

    fn q7(d: &Descriptor) -> DescriptorQ7 {
        let mut q = [0i8; 64];
        for (o, &v) in q.iter_mut().zip(d) {
            *o = (127.0 * v).round().clamp(-127.0, 127.0) as i8;
        }
        q
    }

    /// Random descriptors with exact duplicates and random Laplacians.
    fn side(rng: &mut StdRng, n: usize, pool: &[Descriptor]) -> (Vec<Keypoint>, Vec<Descriptor>) {
        let mut kps = Vec::new();
        let mut desc = Vec::new();
        for _ in 0..n {
            let d = if rng.gen_bool(0.3) {
                pool[rng.gen_range(0..pool.len())]
            } else {
                random_unit(rng)
            };
            desc.push(d);
            kps.push(Keypoint {
                laplacian: [-1i8, 0, 1][rng.gen_range(0..3)],
                ..Keypoint::default()
            });
        }
        (kps, desc)
    }

    /// Naive reference: f64 distances (or exact integers), full scans, per the module docs.
    fn reference(
        qk: &[Keypoint],
        qd: &[Vec<f64>],
        tk: &[Keypoint],
        td: &[Vec<f64>],
        config: &MatchConfig,
    ) -> Vec<(u32, u32, f64)> {
        let dist =
            |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum() };
        let ok = |a: i8, b: i8| !config.sign_test || a == 0 || b == 0 || a == b;
        let mut out = Vec::new();
        for q in 0..qd.len() {
            let mut cands: Vec<(f64, usize)> = (0..td.len())
                .filter(|&t| ok(qk[q].laplacian, tk[t].laplacian))
                .map(|t| (dist(&qd[q], &td[t]), t))
                .collect();
            cands.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let Some(&(s1, t1)) = cands.first() else {
                continue;
            };
            if config.ratio < 1.0
                && let Some(&(s2, _)) = cands.get(1)
                && s1.sqrt() >= f64::from(config.ratio) * s2.sqrt()
            {
                continue;
            }
            if let Some(max) = config.max_distance
                && s1.sqrt() > f64::from(max)
            {
                continue;
            }
            if config.cross_check {
                let back = (0..qd.len())
                    .filter(|&q2| ok(qk[q2].laplacian, tk[t1].laplacian))
                    .map(|q2| (dist(&qd[q2], &td[t1]), q2))
                    .min_by(|a, b| a.partial_cmp(b).unwrap())
                    .unwrap();
                if back.1 != q {
                    continue;
                }
            }
            out.push((q as u32, t1 as u32, s1.sqrt()));
        }
        out
    }

    fn to_f64(d: &[Descriptor]) -> Vec<Vec<f64>> {
        d.iter()
            .map(|x| x.iter().map(|&v| f64::from(v)).collect())
            .collect()
    }
    fn q7_to_f64(d: &[DescriptorQ7]) -> Vec<Vec<f64>> {
        d.iter()
            .map(|x| x.iter().map(|&v| f64::from(v)).collect())
            .collect()
    }

    fn configs() -> Vec<MatchConfig> {
        let mut v = Vec::new();
        for ratio in [0.8f32, 0.95, 1.0] {
            for sign_test in [false, true] {
                for cross_check in [false, true] {
                    for max_distance in [None, Some(0.9f32)] {
                        v.push(MatchConfig {
                            ratio,
                            sign_test,
                            cross_check,
                            max_distance,
                        });
                    }
                }
            }
        }
        v
    }

    #[test]
    fn f32_and_q7_equal_naive_reference_with_ties() {
        let mut rng = StdRng::seed_from_u64(11);
        let pool: Vec<Descriptor> = (0..8).map(|_| random_unit(&mut rng)).collect();
        for round in 0..6 {
            let (qk, qd) = side(&mut rng, 40 + round * 7, &pool);
            let (tk, td) = side(&mut rng, 55 - round * 5, &pool);
            let (qq, tq): (Vec<_>, Vec<_>) =
                (qd.iter().map(q7).collect(), td.iter().map(q7).collect());
            for config in configs() {
                let mut best = vec![TrainBest::EMPTY; td.len()];
                let mut out = vec![Match::default(); qd.len()];
                let n = match_f32(&qk, &qd, &tk, &td, &config, &mut best, &mut out).unwrap();
                let expected = reference(&qk, &to_f64(&qd), &tk, &to_f64(&td), &config);
                assert_eq!(n, expected.len(), "{config:?}");
                for (m, e) in out[..n].iter().zip(&expected) {
                    assert_eq!((m.query, m.train), (e.0, e.1), "{config:?}");
                    assert!((f64::from(m.distance) - e.2).abs() < 1e-5);
                }
                // Q7: the reference works in Q7 units; distances are reported / 127.
                let mut qconfig = config;
                qconfig.max_distance = config.max_distance.map(|d| d * 127.0);
                let expected = reference(&qk, &q7_to_f64(&qq), &tk, &q7_to_f64(&tq), &qconfig);
                let n = match_q7(&qk, &qq, &tk, &tq, &config, &mut best, &mut out).unwrap();
                assert_eq!(n, expected.len(), "Q7 {config:?}");
                for (m, e) in out[..n].iter().zip(&expected) {
                    assert_eq!((m.query, m.train), (e.0, e.1), "Q7 {config:?}");
                    assert!((f64::from(m.distance) * 127.0 - e.2).abs() < 1e-3);
                }
            }
        }
    }

    #[test]
    fn duplicates_tie_to_lower_index_and_fail_ratio() {
        let mut rng = StdRng::seed_from_u64(5);
        let a = random_unit(&mut rng);
        let b = random_unit(&mut rng);
        let kps = vec![Keypoint::default(); 3];
        let train = [b, a, a];
        let mut best = vec![TrainBest::EMPTY; 3];
        let mut out = [Match::default(); 1];
        let mut config = MatchConfig::default();
        // With the ratio test: d1 == d2 -> rejected.
        let n = match_f32(&kps[..1], &[a], &kps, &train, &config, &mut best, &mut out).unwrap();
        assert_eq!(n, 0);
        // Without: the lower of the two equal trains.
        config.ratio = 1.0;
        let n = match_f32(&kps[..1], &[a], &kps, &train, &config, &mut best, &mut out).unwrap();
        assert_eq!((n, out[0].train, out[0].distance), (1, 1, 0.0));
        let tq: Vec<_> = train.iter().map(q7).collect();
        let n = match_q7(
            &kps[..1],
            &[q7(&a)],
            &kps,
            &tq,
            &config,
            &mut best,
            &mut out,
        )
        .unwrap();
        assert_eq!((n, out[0].train), (1, 1));
        // Mutual: train 1 sees two equal queries; the lower query index wins.
        config.cross_check = true;
        let mut out2 = [Match::default(); 2];
        let n = match_f32(
            &kps[..2],
            &[a, a],
            &kps,
            &train,
            &config,
            &mut best,
            &mut out2,
        )
        .unwrap();
        assert_eq!(n, 1);
        assert_eq!((out2[0].query, out2[0].train), (0, 1));
    }

    #[test]
    fn mutual_check_is_symmetric() {
        let mut rng = StdRng::seed_from_u64(9);
        let pool: Vec<Descriptor> = (0..5).map(|_| random_unit(&mut rng)).collect();
        let (ak, ad) = side(&mut rng, 60, &pool);
        let (bk, bd) = side(&mut rng, 70, &pool);
        let config = MatchConfig {
            ratio: 1.0,
            cross_check: true,
            ..MatchConfig::default()
        };
        let run = |qk: &[Keypoint], qd: &[Descriptor], tk: &[Keypoint], td: &[Descriptor]| {
            let mut best = vec![TrainBest::EMPTY; td.len()];
            let mut out = vec![Match::default(); qd.len()];
            let n = match_f32(qk, qd, tk, td, &config, &mut best, &mut out).unwrap();
            let mut pairs: Vec<(u32, u32)> = out[..n].iter().map(|m| (m.query, m.train)).collect();
            pairs.sort();
            pairs
        };
        let ab = run(&ak, &ad, &bk, &bd);
        let mut ba: Vec<(u32, u32)> = run(&bk, &bd, &ak, &ad)
            .into_iter()
            .map(|(q, t)| (t, q))
            .collect();
        ba.sort();
        assert!(ab.len() > 20);
        assert_eq!(ab, ba);
    }

    #[test]
    fn ranges_with_merge_equal_whole() {
        let mut rng = StdRng::seed_from_u64(21);
        let pool: Vec<Descriptor> = (0..6).map(|_| random_unit(&mut rng)).collect();
        let (qk, qd) = side(&mut rng, 90, &pool);
        let (tk, td) = side(&mut rng, 80, &pool);
        let tq: Vec<_> = td.iter().map(q7).collect();
        let qq: Vec<_> = qd.iter().map(q7).collect();
        for cross_check in [false, true] {
            let config = MatchConfig {
                cross_check,
                ratio: 0.9,
                ..MatchConfig::default()
            };
            let mut best = vec![TrainBest::EMPTY; td.len()];
            let mut whole = vec![Match::default(); qd.len()];
            let n = match_q7(&qk, &qq, &tk, &tq, &config, &mut best, &mut whole).unwrap();
            let mut parts = Vec::new();
            let mut merged = vec![TrainBest::EMPTY; td.len()];
            let mut outs = Vec::new();
            for r in [0..31, 31..32, 32..90] {
                let mut b = vec![TrainBest::EMPTY; td.len()];
                let mut o = vec![Match::default(); r.len()];
                let k = match_range_q7(&qk, &qq, r, &tk, &tq, &config, &mut b, &mut o).unwrap();
                o.truncate(k);
                outs.push(o);
                merge_train_best(&mut merged, &b).unwrap();
            }
            for mut o in outs {
                let k = if cross_check {
                    retain_mutual(&mut o, &merged)
                } else {
                    o.len()
                };
                parts.extend_from_slice(&o[..k]);
            }
            assert_eq!(&whole[..n], &parts[..]);
            assert!(n > 5);
        }
    }

    #[test]
    fn sign_test_skips_opposite_laplacians() {
        let mut rng = StdRng::seed_from_u64(2);
        let a = random_unit(&mut rng);
        let far = random_unit(&mut rng);
        let lap = |l| Keypoint {
            laplacian: l,
            ..Keypoint::default()
        };
        let config = MatchConfig {
            ratio: 1.0,
            ..MatchConfig::default()
        };
        let mut out = [Match::default(); 1];
        // The identical descriptor has the opposite sign: the far one is chosen.
        let n = match_f32(
            &[lap(1)],
            &[a],
            &[lap(-1), lap(1)],
            &[a, far],
            &config,
            &mut [],
            &mut out,
        )
        .unwrap();
        assert_eq!((n, out[0].train), (1, 1));
        // Only opposite signs: no candidate, no match.
        let n = match_f32(
            &[lap(1)],
            &[a],
            &[lap(-1)],
            &[a],
            &config,
            &mut [],
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 0);
        // 0 is compatible with everything; the sign test off ignores signs.
        let n = match_f32(
            &[lap(0)],
            &[a],
            &[lap(-1), lap(1)],
            &[a, far],
            &config,
            &mut [],
            &mut out,
        )
        .unwrap();
        assert_eq!((n, out[0].train), (1, 0));
        let off = MatchConfig {
            sign_test: false,
            ..config
        };
        let n = match_f32(
            &[lap(1)],
            &[a],
            &[lap(-1), lap(1)],
            &[a, far],
            &off,
            &mut [],
            &mut out,
        )
        .unwrap();
        assert_eq!((n, out[0].train), (1, 0));
    }

    #[test]
    fn ratio_edge_cases() {
        // Distances 3 and 4 (Q7 units): ratio 0.75 (exact in f32) is the boundary: 3 < 0.75 * 4
        // is false; one ulp more passes.
        let q = [0i8; 64];
        let mut t1 = [0i8; 64];
        t1[0] = 3;
        let mut t2 = [0i8; 64];
        t2[1] = 4;
        let kps = [Keypoint::default(); 2];
        let mut out = [Match::default(); 1];
        let run = |ratio: f32, out: &mut [Match]| {
            let config = MatchConfig {
                ratio,
                ..MatchConfig::default()
            };
            match_q7(&kps[..1], &[q], &kps, &[t1, t2], &config, &mut [], out).unwrap()
        };
        assert_eq!(run(0.75, &mut out), 0);
        assert_eq!(run(f32::from_bits(0.75f32.to_bits() + 1), &mut out), 1);
        assert_eq!(run(0.7, &mut out), 0);
        assert_eq!(run(1.0, &mut out), 1);
        // Exact integer test against the definition for many ratios and keys.
        let mut rng = StdRng::seed_from_u64(4);
        for _ in 0..20000 {
            let r: f32 = rng.gen_range(1e-6f32..=1.0);
            let (k1, k2) = (
                rng.gen_range(0..5_000_000u32),
                rng.gen_range(0..5_000_000u32),
            );
            let exact = (k1 as f64) < (r as f64) * (r as f64) * (k2 as f64); // r^2 exact in f64
            let x = (r as f64) * (r as f64) * (k2 as f64);
            if ((k1 as f64) - x).abs() > 1e-6 * x.max(1.0) {
                assert_eq!(ratio_pass_exact(k1, k2, r), exact, "{k1} {k2} {r}");
            }
        }
        assert!(ratio_pass_exact(0, 1, 1e-40));
        assert!(!ratio_pass_exact(0, 0, 1e-40));
        assert!(!ratio_pass_exact(1, 4_000_000, 1e-30));
        // A single candidate passes the ratio test.
        let config = MatchConfig::default();
        let n = match_q7(
            &kps[..1],
            &[q],
            &kps[..1],
            &[t1],
            &config,
            &mut [],
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 1);
        // No candidates at all: nothing.
        let n = match_q7(&kps[..1], &[q], &[], &[], &config, &mut [], &mut out).unwrap();
        assert_eq!(n, 0);
        // Max distance boundary: 3/127 exactly kept.
        let config = MatchConfig {
            ratio: 1.0,
            max_distance: Some(3.0 / 127.0),
            ..MatchConfig::default()
        };
        assert_eq!(
            match_q7(
                &kps[..1],
                &[q],
                &kps[..1],
                &[t1],
                &config,
                &mut [],
                &mut out
            )
            .unwrap(),
            1
        );
        let config = MatchConfig {
            max_distance: Some(2.9 / 127.0),
            ..config
        };
        assert_eq!(
            match_q7(
                &kps[..1],
                &[q],
                &kps[..1],
                &[t1],
                &config,
                &mut [],
                &mut out
            )
            .unwrap(),
            0
        );
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let d = [[0.0f32; 64]; 2];
        let kps = [Keypoint::default(); 2];
        let mut out = [Match::default(); 2];
        let mut best = [TrainBest::EMPTY; 2];
        for ratio in [0.0, -0.5, 1.5, f32::NAN] {
            let config = MatchConfig {
                ratio,
                ..MatchConfig::default()
            };
            assert_eq!(config.validate(), Err(MatchError::InvalidRatio));
            assert_eq!(
                match_f32(&kps, &d, &kps, &d, &config, &mut best, &mut out),
                Err(MatchError::InvalidRatio)
            );
        }
        for max in [-1.0, f32::INFINITY, f32::NAN] {
            let config = MatchConfig {
                max_distance: Some(max),
                ..MatchConfig::default()
            };
            assert_eq!(config.validate(), Err(MatchError::InvalidMaxDistance));
        }
        let config = MatchConfig::default();
        assert_eq!(
            match_f32(&kps[..1], &d, &kps, &d, &config, &mut best, &mut out),
            Err(MatchError::LengthMismatch {
                keypoints: 1,
                descriptors: 2
            })
        );
        assert_eq!(
            match_f32(&kps, &d, &kps, &d, &config, &mut best, &mut out[..1]),
            Err(MatchError::OutputLength {
                expected: 2,
                actual: 1
            })
        );
        let cross = MatchConfig {
            cross_check: true,
            ..config
        };
        assert_eq!(
            match_f32(&kps, &d, &kps, &d, &cross, &mut best[..1], &mut out),
            Err(MatchError::ScratchLength {
                expected: 2,
                actual: 1
            })
        );
        assert_eq!(
            match_range_f32(&kps, &d, 1..3, &kps, &d, &config, &mut best, &mut out),
            Err(MatchError::QueryRange {
                start: 1,
                end: 3,
                len: 2
            })
        );
        assert!(merge_train_best(&mut best, &[TrainBest::EMPTY]).is_err());
        let msg = std::format!("{}", MatchError::InvalidRatio);
        assert!(msg.contains("ratio"));
    }
}
