//! Orientation and description on the backend's threads: the Haar maps worth making, filled in
//! bands of rows; the keypoints described from the top of the image down, in small runs that
//! work stealing spreads over the threads; the descriptors put back in the frame's order.

use std::time::Instant;

use rayon::prelude::*;

use surfcl_core::haar_map::{HaarCell, HaarMap};
use surfcl_core::{Descriptor, IntegralImage, Keypoint};

use super::simd::Kernels;
use super::support::{ensure_len, ms_since};
use crate::backend::StageTiming;
use crate::error::Error;

/// Whether the CPU backend describes upright keypoints from Haar maps (`surfcl_core::haar_map`:
/// the Haar pair of every pixel for the wavelet sizes many keypoints share, computed first).
/// The descriptors are the same bits either way; only the time differs, and which way is faster
/// depends on the CPU and the frame size (docs/BENCHMARKS.md has the figures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HaarMapPolicy {
    /// Time both on the first frames of each size (alternating, [`MAP_TRIALS`] frames) and then
    /// keep the faster. The default.
    #[default]
    Timed,
    /// Maps whenever enough keypoints share a wavelet size.
    Always,
    /// Never: every sample from the integral table.
    Never,
}

/// Frames of one size that [`HaarMapPolicy::Timed`] times before it decides: every other one
/// with maps.
pub const MAP_TRIALS: u32 = 4;

/// [`HaarMapPolicy::Timed`]'s measurements for the current frame size.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct MapTrials {
    size: (usize, usize),
    trials: u32,
    /// Best time per keypoint (maps and description) with and without maps, ns.
    with_maps: Option<f64>,
    without_maps: Option<f64>,
}

impl MapTrials {
    /// Whether this frame (of `size`) should use maps; starts over when the size changes.
    fn use_maps(&mut self, size: (usize, usize)) -> bool {
        if self.size != size {
            *self = Self {
                size,
                ..Self::default()
            };
        }
        match (self.with_maps, self.without_maps) {
            (Some(with), Some(without)) if self.trials >= MAP_TRIALS => with <= without,
            _ => self.trials.is_multiple_of(2),
        }
    }

    /// Records a trial frame's time per keypoint (no effect once decided).
    fn record(&mut self, used_maps: bool, ns_per_keypoint: f64) {
        if self.trials >= MAP_TRIALS || !ns_per_keypoint.is_finite() {
            return;
        }
        self.trials += 1;
        let best = if used_maps {
            &mut self.with_maps
        } else {
            &mut self.without_maps
        };
        *best = Some(best.map_or(ns_per_keypoint, |b| b.min(ns_per_keypoint)));
    }
}

/// The description stage of a frame: the Haar maps its policy asks for, then orientation (unless
/// upright) and description, timed into the frame's stages.
pub(super) struct DescribeStage<'a> {
    pub pool: Option<&'a rayon::ThreadPool>,
    pub kernels: &'a Kernels,
    pub policy: HaarMapPolicy,
    pub trials: &'a mut MapTrials,
    pub haar_cells: &'a mut Vec<Vec<HaarCell>>,
    pub spatial: &'a mut SpatialOrder,
}

impl DescribeStage<'_> {
    /// Describes `keypoints` (orientations assigned unless `upright`) into `descriptors`, and
    /// adds the stage timings to `timings`.
    pub(super) fn run(
        self,
        ii: &IntegralImage<'_>,
        upright: bool,
        keypoints: &mut [Keypoint],
        descriptors: &mut Vec<Descriptor>,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(), Error> {
        // Upright only: an oriented keypoint's description reads the table values its
        // orientation has just brought into the cache, so maps gain little there or lose
        // (docs/BENCHMARKS.md).
        let mut maps = Vec::new();
        let describe_start = Instant::now();
        let use_maps = upright
            && match self.policy {
                HaarMapPolicy::Always => true,
                HaarMapPolicy::Never => false,
                HaarMapPolicy::Timed => self.trials.use_maps((ii.width(), ii.height())),
            };
        if use_maps {
            let start = Instant::now();
            maps = haar_maps(ii, keypoints, self.pool, self.kernels, self.haar_cells)?;
            if !maps.is_empty() {
                timings.push(StageTiming {
                    name: "haar maps".into(),
                    ms: ms_since(start),
                });
            }
        }

        let start = Instant::now();
        describe_parallel(
            ii,
            keypoints,
            upright,
            &maps,
            self.pool,
            self.kernels,
            self.spatial,
            descriptors,
        )?;
        // A trial counts only where maps were worth making at all (enough keypoints share a
        // wavelet size) or were not asked for: otherwise both ways are the same work.
        if upright && self.policy == HaarMapPolicy::Timed && (!use_maps || !maps.is_empty()) {
            let ns = describe_start.elapsed().as_secs_f64() * 1e9 / keypoints.len().max(1) as f64;
            self.trials.record(use_maps, ns);
        }
        timings.push(StageTiming {
            name: if upright {
                "describe"
            } else {
                "orient+describe"
            }
            .into(),
            ms: ms_since(start),
        });
        Ok(())
    }
}

/// Keypoints described per task: small enough that work stealing evens out keypoints of
/// different scales, large enough that a task costs far more than handing it out.
const KEYPOINTS_PER_TASK: usize = 16;

/// A Haar map pays for itself when it has at most this many cells per keypoint of its size.
/// A keypoint reads 576 Haar pairs, eight scattered table values each without a map and one
/// cell with; a cell costs a few vector operations along table rows. Measured with AVX2 on one
/// thread, upright, the break-even lies at 1500-2200 cells per keypoint (docs/BENCHMARKS.md);
/// the bound is a little below, so that a map that would only just pay is not computed.
const MAP_CELLS_PER_KEYPOINT: usize = 1200;

/// Map rows filled per task.
const MAP_ROWS_PER_TASK: usize = 16;

/// The largest map made (cells of 4 bytes: 64 MiB, a 16.7-megapixel frame). Larger frames
/// describe from the table: a map as large as the frame's integral image, per half-size, is
/// more memory than a caller of such frames expects to lend.
const MAX_MAP_CELLS: usize = 1 << 24;

/// The Haar maps ([`surfcl_core::haar_map`]) worth computing for describing `keypoints` on
/// `ii`: one per wavelet half-size `round(scale)` up to [`HaarMap::MAX_HALF`] that enough
/// keypoints share ([`MAP_CELLS_PER_KEYPOINT`]), filled in bands of rows on `pool` into `cells`
/// (kept between frames). The descriptors are the same with or without them.
pub(super) fn haar_maps<'c>(
    ii: &IntegralImage<'_>,
    keypoints: &[Keypoint],
    pool: Option<&rayon::ThreadPool>,
    kernels: &Kernels,
    cells: &'c mut Vec<Vec<HaarCell>>,
) -> Result<Vec<HaarMap<'c>>, Error> {
    let mut per_half = [0usize; HaarMap::MAX_HALF + 1];
    for kp in keypoints {
        // The descriptor's half-size is `roundf(scale)`; `as` saturates NaN and infinities.
        let half = kp.scale.round() as usize;
        if let Some(count) = per_half.get_mut(half) {
            *count += 1;
        }
    }
    if cells.len() < HaarMap::MAX_HALF {
        cells.resize_with(HaarMap::MAX_HALF, Vec::new);
    }
    let mut maps = Vec::new();
    for (half, buffer) in (1..=HaarMap::MAX_HALF).zip(cells.iter_mut()) {
        let Ok((columns, rows)) = HaarMap::dimensions(ii.width(), ii.height(), half) else {
            continue;
        };
        let cells_needed = columns * rows;
        if cells_needed > MAX_MAP_CELLS
            || per_half[half].saturating_mul(MAP_CELLS_PER_KEYPOINT) < cells_needed
        {
            continue;
        }
        ensure_len(buffer, cells_needed);
        let buffer = &mut buffer[..cells_needed];
        match pool.filter(|_| rows > MAP_ROWS_PER_TASK) {
            Some(pool) => pool.install(|| {
                buffer
                    .par_chunks_mut(MAP_ROWS_PER_TASK * columns)
                    .enumerate()
                    .try_for_each(|(band, chunk)| {
                        let first = band * MAP_ROWS_PER_TASK;
                        (kernels.fill_haar_rows)(
                            ii,
                            half,
                            first..first + chunk.len() / columns,
                            chunk,
                        )
                    })
            })?,
            None => (kernels.fill_haar_rows)(ii, half, 0..rows, buffer)?,
        }
        maps.push(HaarMap::from_filled(ii, half, buffer)?);
    }
    Ok(maps)
}

/// Pixel rows per bucket of [`SpatialOrder`]: the keypoints of a bucket are described together,
/// the buckets from the top of the image down.
const ROWS_PER_BUCKET: usize = 8;

/// The keypoints and descriptors of one frame in the order they are described in: by buckets of
/// [`ROWS_PER_BUCKET`] pixel rows from the top, each bucket in the frame's order (a counting
/// sort: one pass on one thread, where a comparison sort of a few thousand keypoints took as
/// long as a small octave's fill on 16 threads).
#[derive(Debug, Default)]
pub(super) struct SpatialOrder {
    /// Where each bucket starts in `order` (then, while placing, the next free place).
    starts: Vec<usize>,
    /// `order[j]`: the index in the frame's (strongest first) order of the `j`-th keypoint
    /// described.
    order: Vec<usize>,
    /// `rank[i]`: where the frame's `i`-th keypoint is in `order` (its inverse).
    rank: Vec<usize>,
    keypoints: Vec<Keypoint>,
    descriptors: Vec<Descriptor>,
}

impl SpatialOrder {
    /// Fills `order` and `rank` for `keypoints` on an image of `height` rows. A pure function
    /// of the keypoints' rows and indices, so the same on any number of threads.
    fn arrange(&mut self, keypoints: &[Keypoint], height: usize) {
        let buckets = height / ROWS_PER_BUCKET + 1;
        // `as` saturates: NaN and negative rows fall in the first bucket, rows below the
        // image in the last.
        let bucket = |kp: &Keypoint| (kp.y as usize / ROWS_PER_BUCKET).min(buckets - 1);
        let starts = &mut self.starts;
        starts.clear();
        starts.resize(buckets + 1, 0);
        for kp in keypoints {
            starts[bucket(kp) + 1] += 1;
        }
        for b in 1..=buckets {
            starts[b] += starts[b - 1];
        }
        self.rank.clear();
        self.rank.extend(keypoints.iter().map(|kp| {
            let place = &mut starts[bucket(kp)];
            *place += 1;
            *place - 1
        }));
        self.order.clear();
        self.order.resize(keypoints.len(), 0);
        for (i, &j) in self.rank.iter().enumerate() {
            self.order[j] = i;
        }
    }
}

/// [`surfcl_core::describe::describe_all`] (with the `kernels` chosen for this CPU) of
/// `keypoints` into `out`, visiting them from the top of the image down
/// (in runs of [`KEYPOINTS_PER_TASK`] on `pool`, or on this thread without one), then put back
/// in the frame's order.
///
/// Strongest-first order jumps around the image: on a frame whose integral image is larger than
/// a core's cache, describing in that order waits for memory much of the time. Each keypoint's
/// orientation and descriptor depend only on the integral image and the keypoint, so the result
/// is identical to one call in the frame's order.
///
/// The descriptors replace `out`'s in the frame's order, each written once and on the threads
/// (at 1920x1080 they are a megabyte and a half: zeroing them first, or copying them on one
/// thread, would be a serial pass over all of it every frame).
#[allow(clippy::too_many_arguments)]
pub(super) fn describe_parallel(
    ii: &IntegralImage<'_>,
    keypoints: &mut [Keypoint],
    upright: bool,
    maps: &[HaarMap<'_>],
    pool: Option<&rayon::ThreadPool>,
    kernels: &Kernels,
    spatial: &mut SpatialOrder,
    out: &mut Vec<Descriptor>,
) -> Result<(), Error> {
    let n = keypoints.len();
    spatial.arrange(keypoints, ii.height());
    let SpatialOrder {
        order,
        rank,
        keypoints: sorted,
        descriptors: described,
        ..
    } = spatial;
    sorted.clear();
    // Grown once, then overwritten frame after frame.
    if described.len() < n {
        described.resize(n, [0.0; 64]);
    }
    let described = &mut described[..n];
    match pool {
        Some(pool) => pool.install(|| {
            sorted.par_extend(order.par_iter().map(|&i| keypoints[i]));
            // Every run a task of its own (rayon otherwise hands each thread long stretches of
            // runs, split further only when stolen): a thread on a busier core, or with
            // larger keypoints, leaves no long tail to the others.
            sorted
                .par_chunks_mut(KEYPOINTS_PER_TASK)
                .zip(described.par_chunks_mut(KEYPOINTS_PER_TASK))
                .with_max_len(1)
                .try_for_each(|(kps, descs)| {
                    (kernels.describe_all)(ii, kps, upright, descs, maps)
                })?;
            keypoints
                .par_iter_mut()
                .zip(rank.par_iter())
                .for_each(|(kp, &j)| *kp = sorted[j]);
            Ok::<(), surfcl_core::describe::DescribeError>(())
        })?,
        None => {
            sorted.extend(order.iter().map(|&i| keypoints[i]));
            (kernels.describe_all)(ii, sorted, upright, described, maps)?;
            for (kp, &j) in keypoints.iter_mut().zip(rank.iter()) {
                *kp = sorted[j];
            }
        }
    }
    // The descriptors `out` already has are overwritten (on the threads), the rest appended.
    out.truncate(n);
    let (overwritten, appended) = rank.split_at(out.len());
    let described = &*described;
    match pool {
        Some(pool) => pool.install(|| {
            out.par_chunks_mut(KEYPOINTS_PER_TASK)
                .zip(overwritten.par_chunks(KEYPOINTS_PER_TASK))
                .for_each(|(descs, ranks)| {
                    for (d, &j) in descs.iter_mut().zip(ranks) {
                        *d = described[j];
                    }
                });
        }),
        None => {
            for (d, &j) in out.iter_mut().zip(overwritten) {
                *d = described[j];
            }
        }
    }
    out.extend(appended.iter().map(|&j| described[j]));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order visits the buckets from the top down, each in the frame's order; `rank` is its
    /// inverse; rows of every kind (NaN, negative, infinite, below the image) find a bucket.
    #[test]
    fn spatial_order_goes_down_the_image_by_buckets() {
        let height = 40;
        let rows = [
            33.0,
            2.0,
            f32::NAN,
            -5.0,
            f32::INFINITY,
            7.9,
            8.0,
            39.5,
            500.0,
            0.0,
            17.2,
            2.5,
        ];
        let keypoints: Vec<Keypoint> = rows
            .iter()
            .map(|&y| Keypoint {
                y,
                ..Keypoint::default()
            })
            .collect();
        let mut spatial = SpatialOrder::default();
        spatial.arrange(&keypoints, height);
        // Bucket 0 (rows 0-7, NaN and negative ones too) in index order, then 8.0 (bucket 1),
        // 17.2 (bucket 2), 33.0 and 39.5 (bucket 4), infinity and 500.0 (the last, 5).
        assert_eq!(spatial.order, [1, 2, 3, 5, 9, 11, 6, 10, 0, 7, 4, 8]);
        for (j, &i) in spatial.order.iter().enumerate() {
            assert_eq!(spatial.rank[i], j);
        }
    }
}
