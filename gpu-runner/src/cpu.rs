//! The CPU reference backend: `surfcl-core` behind the [`Backend`] trait.
//!
//! The backend owns a [`rayon`] pool of `std::thread::available_parallelism()` threads (or the
//! number given to [`CpuBackend::with_threads`]). SURF detection fills each octave's response
//! maps in bands of rows on it, then scans them in bands of rows (the core's
//! `surf::detect_with_shared_fill_and_scan`: each band's keypoints are offered to the frame's
//! sink in band order, the single-threaded order). With one thread, each band of rows is
//! scanned as soon as it is filled (`surf::detect_with_shared_banded_fill`), while its maps are
//! still in the cache. Description hands out small runs of
//! keypoints (their cost varies with the scale, so work stealing balances the threads) and
//! matching splits the queries. All give exactly the single-threaded result: every response
//! sample, descriptor and query is independent, and the matcher's range functions are made for
//! it (see `surfcl_core::matcher`, "Splitting the queries").
//!
//! Buffers (integral image, detector scratch, keypoint storage, Haar maps, Q7 copies, match
//! outputs) live in the struct and only grow: after the first frame of a given size and
//! capacity, nothing is allocated except the owned vectors of the returned [`Features`].

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use surfcl_core::describe::to_q7;
use surfcl_core::haar_map::{HaarCell, HaarMap};
use surfcl_core::integral::integral_len;
use surfcl_core::matcher::{
    Match, MatchConfig, TrainBest, merge_train_best, reset_train_best, retain_mutual,
};
use surfcl_core::{
    Descriptor, DescriptorQ7, GrayImage, IntegralImage, Keypoint, KeypointBuffer, KeypointSink,
    harris, surf,
};

use crate::backend::{Backend, DescriptorKind, DetectParams, DetectorKind, Features, StageTiming};
use crate::error::Error;
use crate::wide::{
    describe_all_widest, fill_haar_map_rows_widest, fill_octave_rows_widest,
    match_range_f32_widest, match_range_q7_widest,
};

/// Below this many queries per thread, splitting costs more than it saves.
const MIN_QUERIES_PER_THREAD: usize = 128;

/// The CPU reference backend.
#[derive(Debug, Default)]
pub struct CpuBackend {
    /// The worker threads; `None` runs everything on the calling thread (one thread asked for,
    /// or a pool that could not be created).
    pool: Option<Arc<rayon::ThreadPool>>,
    integral: Vec<u32>,
    surf_scratch: Vec<u32>,
    /// The column sums of the one-thread banded fill (`surf::column_scratch_len`).
    surf_columns: Vec<u32>,
    harris_scratch: Vec<i32>,
    keypoints: Vec<Keypoint>,
    query_q7: Vec<DescriptorQ7>,
    train_q7: Vec<DescriptorQ7>,
    matches: Vec<Match>,
    train_best: Vec<Vec<TrainBest>>,
    spatial: SpatialOrder,
    /// The cells of the description's Haar maps, at `[half - 1]` (see [`haar_maps`]).
    haar_cells: Vec<Vec<HaarCell>>,
    /// The bands of the parallel non-maximum suppression ([`scan_parallel`]).
    scan_bands: Vec<ScanBand>,
    /// Whether upright description reads Haar maps ([`HaarMapPolicy`]).
    map_policy: HaarMapPolicy,
    /// The timings behind [`HaarMapPolicy::Timed`].
    map_trials: MapTrials,
}

/// Whether the CPU backend describes upright keypoints from Haar maps (`surfcl_core::haar_map`:
/// the Haar pair of every pixel for the wavelet sizes many keypoints share, computed first).
/// The descriptors are the same bits either way; only the time differs, and which way is faster
/// depends on the CPU and the frame size (at 1920x1080 maps made the frame at most 3% faster on
/// one development host and 20% slower on another: docs/BENCHMARKS.md).
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
struct MapTrials {
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

impl CpuBackend {
    /// A backend using all available CPU threads for description and matching.
    pub fn new() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::with_threads(threads)
    }

    /// Sets whether upright description reads Haar maps ([`HaarMapPolicy`]; by default timed).
    pub fn set_haar_map_policy(&mut self, policy: HaarMapPolicy) {
        self.map_policy = policy;
        self.map_trials = MapTrials::default();
    }

    /// A backend using at most `threads` threads (at least 1) for detection, description and
    /// matching. Should the operating system refuse to start the threads, the backend runs on
    /// the calling thread alone (and says so in [`Backend::device`]).
    pub fn with_threads(threads: usize) -> Self {
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("surfcl-cpu-{i}"))
                    .build()
                    .ok()
            })
            .flatten()
            .map(Arc::new);
        Self {
            pool,
            ..Self::default()
        }
    }

    /// The number of threads the backend works on (1 without a pool).
    fn threads(&self) -> usize {
        thread_count(self.pool.as_deref())
    }
}

/// Grows `v` to at least `len` elements (never shrinks, so buffers are reused across frames).
fn ensure_len<T: Clone + Default>(v: &mut Vec<T>, len: usize) {
    if v.len() < len {
        v.resize(len, T::default());
    }
}

/// Milliseconds since `start`.
fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn device(&self) -> String {
        format!(
            "CPU reference ({} thread{})",
            self.threads(),
            if self.threads() == 1 { "" } else { "s" }
        )
    }

    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error> {
        let mut features = Features::default();
        self.detect_into(image, params, &mut features)?;
        Ok(features)
    }

    /// Refills `out`'s keypoint, descriptor and timing arrays in place: a caller that hands back
    /// the previous frame's `Features` gets no allocation (and no fresh, zero-filled pages: a
    /// 1920x1080 frame's descriptors are 1.5 MB) for them once they are large enough.
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        params.validate()?;
        let (width, height) = (image.width(), image.height());
        let timings = &mut out.timings;
        timings.clear();

        let start = Instant::now();
        let len = integral_len(width, height)?;
        ensure_len(&mut self.integral, len);
        let ii = IntegralImage::compute(image, &mut self.integral[..len])?;
        timings.push(StageTiming {
            name: "integral".into(),
            ms: ms_since(start),
        });

        let start = Instant::now();
        // A frame cannot have more keypoints than pixels (SURF keeps strict 3x3x3 maxima on
        // sampling grids, Harris 5x5 maxima), so a small frame never allocates the full
        // `max_keypoints` (up to `MAX_KEYPOINTS_LIMIT` records).
        let capacity = params.max_keypoints.min(width * height);
        ensure_len(&mut self.keypoints, capacity);
        let mut sink = KeypointBuffer::new(&mut self.keypoints[..capacity]);
        let upright = match params.detector {
            DetectorKind::Surf => {
                let need = surf::scratch_len(&params.surf, width, height)?;
                ensure_len(&mut self.surf_scratch, need);
                let (config, pool) = (&params.surf, self.pool.as_deref());
                let bands = &mut self.scan_bands;
                let scratch = &mut self.surf_scratch[..need];
                if pool.is_none() {
                    // One thread: each band of rows scanned while its maps are in the cache.
                    ensure_len(&mut self.surf_columns, surf::column_scratch_len(width));
                    let columns = &mut self.surf_columns;
                    surf::detect_with_shared_banded_fill(
                        &ii,
                        config,
                        scratch,
                        &mut sink,
                        SCAN_AFTER_ROWS,
                        |octave, rows, from, maps| {
                            fill_octave_rows_widest(&ii, config, octave, rows, maps, columns, from)
                        },
                    )?;
                } else {
                    surf::detect_with_shared_fill_and_scan(
                        &ii,
                        config,
                        scratch,
                        &mut sink,
                        |octave, grid_w, grid_h, from, maps| {
                            let grid = (grid_w, grid_h);
                            fill_parallel(&ii, config, octave, grid, from, maps, pool)
                        },
                        |maps, sink, stats| scan_parallel(maps, sink, stats, pool, bands),
                    )?;
                }
                params.surf.upright
            }
            DetectorKind::Harris => {
                let need = harris::scratch_len(width, height)?;
                ensure_len(&mut self.harris_scratch, need);
                harris::detect(
                    image,
                    &params.harris,
                    &mut self.harris_scratch[..need],
                    &mut sink,
                )?;
                // Harris corners have no characteristic orientation: described upright at their
                // fixed scale.
                true
            }
        };
        sink.sort();
        let dropped = sink.dropped();
        let keypoints = &mut out.keypoints;
        keypoints.clear();
        keypoints.extend_from_slice(sink.points());
        timings.push(StageTiming {
            name: "detect".into(),
            ms: ms_since(start),
        });

        let pool = self.pool.as_deref();
        // Upright only: an oriented keypoint's description reads the table values its
        // orientation has just brought into the cache, and maps gained 6% of its time at
        // 640x480 but lost 3% at 1920x1080 (docs/BENCHMARKS.md).
        let mut maps = Vec::new();
        let describe_start = Instant::now();
        let use_maps = upright
            && match self.map_policy {
                HaarMapPolicy::Always => true,
                HaarMapPolicy::Never => false,
                HaarMapPolicy::Timed => self.map_trials.use_maps((width, height)),
            };
        if use_maps {
            let start = Instant::now();
            maps = haar_maps(&ii, keypoints, pool, &mut self.haar_cells)?;
            if !maps.is_empty() {
                timings.push(StageTiming {
                    name: "haar maps".into(),
                    ms: ms_since(start),
                });
            }
        }

        let start = Instant::now();
        let descriptors = &mut out.descriptors;
        describe_parallel(
            &ii,
            keypoints,
            upright,
            &maps,
            pool,
            &mut self.spatial,
            descriptors,
        )?;
        // A trial counts only where maps were worth making at all (enough keypoints share a
        // wavelet size) or were not asked for: otherwise both ways are the same work.
        if upright && self.map_policy == HaarMapPolicy::Timed && (!use_maps || !maps.is_empty()) {
            let ns = describe_start.elapsed().as_secs_f64() * 1e9 / keypoints.len().max(1) as f64;
            self.map_trials.record(use_maps, ns);
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

        out.width = width;
        out.height = height;
        out.dropped = dropped;
        Ok(())
    }

    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error> {
        config.validate()?;
        match descriptor {
            DescriptorKind::F32 => {
                let sides = Sides {
                    query_kps: &query.keypoints,
                    query_desc: &query.descriptors,
                    train_kps: &train.keypoints,
                    train_desc: &train.descriptors,
                };
                parallel_match(
                    sides,
                    config,
                    self.pool.as_deref(),
                    &mut self.matches,
                    &mut self.train_best,
                    match_range_f32_widest(),
                )
            }
            DescriptorKind::Q7 => {
                self.query_q7.clear();
                self.query_q7.extend(query.descriptors.iter().map(to_q7));
                self.train_q7.clear();
                self.train_q7.extend(train.descriptors.iter().map(to_q7));
                let sides = Sides {
                    query_kps: &query.keypoints,
                    query_desc: &self.query_q7,
                    train_kps: &train.keypoints,
                    train_desc: &self.train_q7,
                };
                parallel_match(
                    sides,
                    config,
                    self.pool.as_deref(),
                    &mut self.matches,
                    &mut self.train_best,
                    match_range_q7_widest,
                )
            }
        }
    }
}

/// Keypoints described per task: small enough that work stealing evens out keypoints of
/// different scales, large enough that a task costs far more than handing it out.
const KEYPOINTS_PER_TASK: usize = 32;

/// Grid rows filled per task.
const ROWS_PER_TASK: usize = 8;

/// Grid rows filled before they are scanned on one thread
/// ([`surf::detect_with_shared_banded_fill`]): a band of 1920x1080's octave 0 is 240 KB of maps.
const SCAN_AFTER_ROWS: usize = 16;

/// Fills `octave`'s response maps (`grid_w x grid_h` samples in `maps`, intervals
/// `from_interval..4`, see `surf::detect_with_shared_fill_and_scan`) in bands of
/// [`ROWS_PER_TASK`] rows on `pool`: each band is [`surf::fill_octave_rows_with_columns_from`]
/// into its own slice (with a column scratch per worker), so the maps are exactly the
/// single-threaded ones, which are [`surf::fill_octave_rows`]'s.
fn fill_parallel(
    ii: &IntegralImage<'_>,
    config: &surf::SurfConfig,
    octave: u32,
    (grid_w, grid_h): (usize, usize),
    from_interval: u32,
    maps: &mut [u32],
    pool: Option<&rayon::ThreadPool>,
) -> Result<(), surf::SurfError> {
    let columns = || vec![0u32; surf::column_scratch_len(ii.width())];
    let Some(pool) = pool.filter(|_| grid_h > ROWS_PER_TASK && grid_w > 0) else {
        let rows = 0..grid_h;
        return fill_octave_rows_widest(
            ii,
            config,
            octave,
            rows,
            maps,
            &mut columns(),
            from_interval,
        );
    };
    let words_per_row = maps.len() / grid_h;
    pool.install(|| {
        maps.par_chunks_mut(ROWS_PER_TASK * words_per_row)
            .enumerate()
            .try_for_each_init(columns, |columns, (band, chunk)| {
                let first = band * ROWS_PER_TASK;
                let rows = first..(first + ROWS_PER_TASK).min(grid_h);
                fill_octave_rows_widest(ii, config, octave, rows, chunk, columns, from_interval)
            })
    })
}

/// The keypoints and counts of one band of rows of the parallel scan, kept from frame to frame.
#[derive(Debug, Default)]
struct ScanBand {
    points: CollectedPoints,
    stats: surf::DetectStats,
}

/// A sink that keeps every keypoint offered, in order (a band's, offered to the frame's sink
/// afterwards).
#[derive(Debug, Default)]
struct CollectedPoints(Vec<Keypoint>);

impl KeypointSink for CollectedPoints {
    fn offer(&mut self, point: Keypoint) {
        self.0.push(point);
    }
    fn points(&self) -> &[Keypoint] {
        &self.0
    }
    fn points_mut(&mut self) -> &mut [Keypoint] {
        &mut self.0
    }
    fn dropped(&self) -> usize {
        0
    }
    fn clear(&mut self) {
        self.0.clear();
    }
}

/// Bands of grid rows per thread in [`scan_parallel`]: maxima gather where the image is
/// textured, so a few bands per thread let work stealing even the threads out.
const SCAN_BANDS_PER_THREAD: usize = 4;

/// The non-maximum suppression and decisions of one octave ([`surf::OctaveMaps`]): with a pool
/// of several threads, each interval's grid rows in bands on the pool, each band into its own
/// sink; then, interval 1 before 2 and band after band, their keypoints offered to `sink` and
/// their counts added to `stats`. That is the order of the single-threaded scan, so the sink
/// keeps the same keypoints. At 1920x1080 the scan was a third of the detection time left on
/// one thread once the maps were filled in parallel.
fn scan_parallel<S: KeypointSink>(
    maps: &surf::OctaveMaps<'_>,
    sink: &mut S,
    stats: &mut surf::DetectStats,
    pool: Option<&rayon::ThreadPool>,
    bands: &mut Vec<ScanBand>,
) -> Result<(), surf::SurfError> {
    let rows = maps.grid_height();
    let count = (thread_count(pool) * SCAN_BANDS_PER_THREAD).min(rows / ROWS_PER_TASK);
    let Some(pool) = pool.filter(|_| count > 1) else {
        for interval in 1..=2 {
            maps.scan_rows(interval, 0..rows, sink, stats)?;
        }
        return Ok(());
    };
    let rows_per_band = rows.div_ceil(count);
    if bands.len() < count {
        bands.resize_with(count, ScanBand::default);
    }
    let bands = &mut bands[..count];
    for interval in 1..=2 {
        pool.install(|| {
            bands.par_iter_mut().enumerate().try_for_each(|(b, band)| {
                band.points.clear();
                band.stats = surf::DetectStats::default();
                let first = b * rows_per_band;
                let band_rows = first..(first + rows_per_band).min(rows);
                maps.scan_rows(interval, band_rows, &mut band.points, &mut band.stats)
            })
        })?;
        for band in bands.iter() {
            for &point in band.points.points() {
                sink.offer(point);
            }
            stats.add_scan(&band.stats);
        }
    }
    Ok(())
}

/// A Haar map pays for itself when it has at most this many cells per keypoint of its size.
/// A keypoint reads 576 Haar pairs, eight scattered table values each without a map and one
/// cell with; a cell costs a few vector operations along table rows. On the development machine
/// (AVX2, one thread, upright) a map saved about 0.7 us per keypoint and cost 0.32 ns per cell
/// at 640x480 (cache-resident) and 0.46 ns at 1920x1080: break-even at 1500-2200 cells per
/// keypoint. A little below that, so that a map that would only just pay is not computed.
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
fn haar_maps<'c>(
    ii: &IntegralImage<'_>,
    keypoints: &[Keypoint],
    pool: Option<&rayon::ThreadPool>,
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
                        fill_haar_map_rows_widest(
                            ii,
                            half,
                            first..first + chunk.len() / columns,
                            chunk,
                        )
                    })
            })?,
            None => fill_haar_map_rows_widest(ii, half, 0..rows, buffer)?,
        }
        maps.push(HaarMap::from_filled(ii, half, buffer)?);
    }
    Ok(maps)
}

/// The keypoints and descriptors of one frame in the order they are described in.
#[derive(Debug, Default)]
struct SpatialOrder {
    /// `order[j]`: the index in the frame's (strongest first) order of the `j`-th keypoint from
    /// the top of the image.
    order: Vec<usize>,
    /// `rank[i]`: where the frame's `i`-th keypoint is in `order` (its inverse).
    rank: Vec<usize>,
    keypoints: Vec<Keypoint>,
    descriptors: Vec<Descriptor>,
}

/// [`surfcl_core::describe::describe_all`] (AVX2 where the CPU has it: [`crate::wide`]) of
/// `keypoints` into `out`, visiting them from the top of the image down
/// (in runs of [`KEYPOINTS_PER_TASK`] on `pool`, or on this thread without one), then put back
/// in the frame's order.
///
/// Strongest-first order jumps around the image: on a 1080p frame, whose integral image is
/// larger than a core's cache, describing in that order spends a third of the time waiting for
/// memory. Each keypoint's orientation and descriptor depend only on the integral image and the
/// keypoint, so the result is identical to one call in the frame's order.
///
/// The descriptors replace `out`'s in the frame's order, each written once (a megabyte and a
/// half at 1920x1080: zeroing it first, and the spatial copy each frame, took 4% of an upright
/// frame).
fn describe_parallel(
    ii: &IntegralImage<'_>,
    keypoints: &mut [Keypoint],
    upright: bool,
    maps: &[HaarMap<'_>],
    pool: Option<&rayon::ThreadPool>,
    spatial: &mut SpatialOrder,
    out: &mut Vec<Descriptor>,
) -> Result<(), Error> {
    let SpatialOrder {
        order,
        rank,
        keypoints: sorted,
        descriptors: described,
    } = spatial;
    let n = keypoints.len();
    order.clear();
    order.extend(0..n);
    order.sort_unstable_by(|&a, &b| keypoints[a].y.total_cmp(&keypoints[b].y).then(a.cmp(&b)));
    sorted.clear();
    sorted.extend(order.iter().map(|&i| keypoints[i]));
    // Grown once, then overwritten frame after frame.
    if described.len() < n {
        described.resize(n, [0.0; 64]);
    }
    let described = &mut described[..n];
    match pool {
        Some(pool) => pool.install(|| {
            sorted
                .par_chunks_mut(KEYPOINTS_PER_TASK)
                .zip(described.par_chunks_mut(KEYPOINTS_PER_TASK))
                .try_for_each(|(kps, descs)| describe_all_widest(ii, kps, upright, descs, maps))
        })?,
        None => describe_all_widest(ii, sorted, upright, described, maps)?,
    }
    rank.clear();
    rank.resize(n, 0);
    for (j, (&i, kp)) in order.iter().zip(sorted.iter()).enumerate() {
        keypoints[i] = *kp;
        rank[i] = j;
    }
    out.clear();
    out.extend(rank.iter().map(|&j| described[j]));
    Ok(())
}

/// The threads work runs on: `pool`'s, or the calling thread alone.
fn thread_count(pool: Option<&rayon::ThreadPool>) -> usize {
    pool.map_or(1, rayon::ThreadPool::current_num_threads)
}

/// The two sides of a matching call.
struct Sides<'a, D> {
    query_kps: &'a [Keypoint],
    query_desc: &'a [D],
    train_kps: &'a [Keypoint],
    train_desc: &'a [D],
}

/// The signature shared by `match_range_f32` and `match_range_q7`.
pub(crate) type RangeMatcher<D> = fn(
    &[Keypoint],
    &[D],
    Range<usize>,
    &[Keypoint],
    &[D],
    &MatchConfig,
    &mut [TrainBest],
    &mut [Match],
) -> Result<usize, surfcl_core::matcher::MatchError>;

/// Splits the queries into contiguous ranges, one per thread, each with its own output slice and
/// (with the mutual check) its own per-train nearest-query slice; merges them afterwards. The
/// result is identical to one `match_*` call over all queries.
fn parallel_match<D: Sync>(
    sides: Sides<'_, D>,
    config: &MatchConfig,
    pool: Option<&rayon::ThreadPool>,
    out: &mut Vec<Match>,
    train_best: &mut Vec<Vec<TrainBest>>,
    matcher: RangeMatcher<D>,
) -> Result<Vec<Match>, Error> {
    let n_query = sides.query_desc.len();
    let n_train = sides.train_desc.len();
    let threads = thread_count(pool)
        .min(n_query / MIN_QUERIES_PER_THREAD)
        .clamp(1, n_query.max(1));
    let chunk = n_query.div_ceil(threads).max(1);
    ensure_len(out, n_query);
    if train_best.len() < threads {
        train_best.resize_with(threads, Vec::new);
    }
    let best_len = if config.cross_check { n_train } else { 0 };
    for best in train_best.iter_mut().take(threads) {
        best.resize(best_len, TrainBest::EMPTY);
        reset_train_best(best);
    }

    let one_range = |(i, (out_chunk, best)): (usize, (&mut [Match], &mut Vec<TrainBest>))| {
        let range = i * chunk..(i * chunk + out_chunk.len());
        matcher(
            sides.query_kps,
            sides.query_desc,
            range,
            sides.train_kps,
            sides.train_desc,
            config,
            best,
            out_chunk,
        )
        .map_err(Error::from)
    };
    let results: Vec<Result<usize, Error>> = match pool.filter(|_| threads > 1) {
        Some(pool) => pool.install(|| {
            out[..n_query]
                .par_chunks_mut(chunk)
                .zip(train_best.par_iter_mut())
                .enumerate()
                .map(one_range)
                .collect()
        }),
        None => out[..n_query]
            .chunks_mut(chunk)
            .zip(train_best.iter_mut())
            .enumerate()
            .map(one_range)
            .collect(),
    };
    let counts = results.into_iter().collect::<Result<Vec<usize>, Error>>()?;

    if config.cross_check && counts.len() > 1 {
        let (first, rest) = train_best.split_at_mut(1);
        for other in rest.iter().take(counts.len() - 1) {
            merge_train_best(&mut first[0], other)?;
        }
    }
    let mut matches = Vec::with_capacity(counts.iter().sum());
    for (i, &count) in counts.iter().enumerate() {
        let found = &mut out[i * chunk..i * chunk + count];
        let kept = if config.cross_check {
            retain_mutual(found, &train_best[0])
        } else {
            count
        };
        matches.extend_from_slice(&found[..kept]);
    }
    Ok(matches)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::backend::DetectParams;
    use surfcl_core::describe::describe_all;

    /// Boat img1 (850x680: octave 0 has 340 grid rows, so several threads each get a band).
    fn boat() -> crate::io::OwnedGray {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat/img1.pgm");
        crate::io::load_gray(&path).unwrap()
    }

    /// The backend describes from the top of the image down and puts the results back: the
    /// output must be the core's, in the core's (strongest first) order, on one thread and many.
    #[test]
    fn spatial_order_gives_the_core_result_in_the_core_order() {
        let image = boat();
        let view = image.view().unwrap();
        let config = surf::SurfConfig::default();
        let mut table = vec![0u32; integral_len(view.width(), view.height()).unwrap()];
        let ii = IntegralImage::compute(&view, &mut table).unwrap();
        let mut scratch =
            vec![0u32; surf::scratch_len(&config, view.width(), view.height()).unwrap()];
        let mut storage = vec![Keypoint::default(); 10_000];
        let mut sink = KeypointBuffer::new(&mut storage);
        surf::detect(&ii, &config, &mut scratch, &mut sink).unwrap();
        let mut expected = sink.points().to_vec();
        let mut descriptors = vec![[0.0; 64]; expected.len()];
        describe_all(&ii, &mut expected, false, &mut descriptors).unwrap();
        // Strongest first is not top to bottom: otherwise this test would not test the order.
        assert!(expected.windows(2).any(|w| w[0].y > w[1].y));
        let params = DetectParams {
            detector: crate::backend::DetectorKind::Surf,
            surf: config,
            harris: harris::HarrisConfig::default(),
            max_keypoints: 10_000,
            descriptor: DescriptorKind::F32,
        };
        for threads in [1, 3] {
            let got = CpuBackend::with_threads(threads)
                .detect(&view, &params)
                .unwrap();
            assert_eq!(got.keypoints, expected, "{threads} threads");
            assert_eq!(got.descriptors, descriptors, "{threads} threads");
        }
    }

    #[test]
    fn threaded_detection_equals_one_thread() {
        let image = boat();
        // A cap below the keypoint count too: what the sink keeps then depends on what the
        // banded scan offered it.
        for (precision, max_keypoints) in [
            (surf::Precision::F32, 10_000),
            (surf::Precision::Packed8, 10_000),
            (surf::Precision::F32, 500),
        ] {
            let params = DetectParams {
                detector: crate::backend::DetectorKind::Surf,
                surf: surf::SurfConfig {
                    precision,
                    ..surf::SurfConfig::default()
                },
                harris: harris::HarrisConfig::default(),
                max_keypoints,
                descriptor: DescriptorKind::F32,
            };
            let one = CpuBackend::with_threads(1)
                .detect(&image.view().unwrap(), &params)
                .unwrap();
            let many = CpuBackend::with_threads(5)
                .detect(&image.view().unwrap(), &params)
                .unwrap();
            assert!(one.keypoints.len() >= 500, "{precision:?}");
            assert_eq!(one.dropped > 0, max_keypoints == 500, "{precision:?}");
            assert_eq!(one.keypoints, many.keypoints, "{precision:?}");
            assert_eq!(one.descriptors, many.descriptors, "{precision:?}");
            assert_eq!(one.dropped, many.dropped);
        }
    }

    /// `detect_into` refills a previous frame's arrays (longer ones, from a larger frame with
    /// more keypoints, and shorter ones) and gives what `detect` gives, every field.
    #[test]
    fn detect_into_reuses_a_previous_frame_and_equals_detect() {
        let image = boat();
        let view = image.view().unwrap();
        // The top-left 320x240 of boat: fewer keypoints than the whole frame.
        let small = crate::io::OwnedGray {
            width: 320,
            height: 240,
            pixels: (0..240)
                .flat_map(|y| image.pixels[y * image.width..][..320].iter().copied())
                .collect(),
        };
        let params = |upright| DetectParams {
            detector: crate::backend::DetectorKind::Surf,
            surf: surf::SurfConfig {
                upright,
                ..surf::SurfConfig::default()
            },
            harris: harris::HarrisConfig::default(),
            max_keypoints: 10_000,
            descriptor: DescriptorKind::F32,
        };
        for threads in [1, 2] {
            let mut backend = CpuBackend::with_threads(threads);
            // The same stages in every frame (the timed policy alternates while it decides).
            backend.set_haar_map_policy(HaarMapPolicy::Always);
            let mut reused = Features::default();
            for (frame, upright) in [
                (&view, false),
                (&small.view().unwrap(), true),
                (&view, true),
            ] {
                let expected = backend.detect(frame, &params(upright)).unwrap();
                assert!(!expected.keypoints.is_empty());
                backend
                    .detect_into(frame, &params(upright), &mut reused)
                    .unwrap();
                assert_eq!(reused.keypoints, expected.keypoints, "{threads} threads");
                assert_eq!(
                    reused.descriptors, expected.descriptors,
                    "{threads} threads"
                );
                assert_eq!(
                    (reused.width, reused.height),
                    (expected.width, expected.height)
                );
                assert_eq!(reused.dropped, expected.dropped);
                let names =
                    |f: &Features| f.timings.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
                assert_eq!(names(&reused), names(&expected));
            }
        }
    }
}
