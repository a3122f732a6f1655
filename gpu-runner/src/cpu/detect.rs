//! SURF detection on the backend's threads: the core's driver (`surf::detect_with_strategy`)
//! with a [`Strategy`] of this backend. On one thread each band of grid rows is scanned as soon
//! as it is filled, while its maps are in the cache ([`OneThread`]). On several, each task fills
//! a band of rows, scans the rows whose neighbours are in its band into a sink of its own, and
//! copies its first and last two rows to the seams with the bands beside it; the task that
//! completes a seam scans its two rows there ([`Threads`], [`Seam`]): one pass over the pool
//! per octave. The sink keeps the strongest keypoints under a total order whatever the order
//! they are offered in, and the counts are sums, so the result is the single-threaded one.
//!
//! What the core does on one thread between the octaves' fills is spread over the pool too.
//! The intervals an octave shares with the one before ([`Strategy::move_shared`]) are copied
//! aside in one pass over the pool, and each band's task puts its rows' share in place before
//! it fills them; the core moves them in place, row after row, which on a 16-core host took
//! about as long as the octave after it on all 16 (docs/BENCHMARKS.md). The final sort runs on
//! the pool too ([`PoolSorted`]).

use std::ops::Range;
use std::sync::Mutex;

use rayon::prelude::*;

use surfcl_core::surf::{
    self, DetectStats, INTERVALS, OctaveFill, Strategy, SurfError, column_scratch_len,
};
use surfcl_core::{Keypoint, KeypointSink};

use super::simd::Kernels;
use super::support::ensure_len;

/// Grid rows filled before they are scanned: a band of 1920x1080's octave 0 is 240 KB of maps,
/// which stays in a core's cache until the band is scanned.
const BAND_ROWS: usize = 16;

/// The smallest band of the threaded fill: below, the seams' copies and scans cost more than
/// a better balance saves.
const MIN_BAND_ROWS: usize = 4;

/// Bands per thread wanted in an octave: maxima gather where the image is textured, and the
/// cores of a host may differ in speed (on the lent 16-core VMs, a third to a half of the cores
/// take 1.5 times as long as the others at any moment: docs/BENCHMARKS.md), so several bands
/// per thread let work stealing even the threads out. With three, 16 threads waited for the
/// last, slow bands of octave 0.
const BANDS_PER_THREAD: usize = 6;

/// Grid rows per task of the copy of the shared intervals aside.
const SHARED_ROWS_PER_TASK: usize = 8;

/// Words per sample of the shared intervals copied aside (this octave's intervals 0 and 1).
const SHARED_WORDS: usize = 2;

/// The buffers of detection, kept from frame to frame.
#[derive(Debug, Default)]
pub(super) struct DetectBuffers {
    /// The column scratch of each thread (`surf::column_scratch_len`), grown by the thread
    /// that uses it.
    columns: Vec<Mutex<Vec<u32>>>,
    /// The keypoints and counts of each band of an octave.
    bands: Vec<ScanBand>,
    /// The seams between the bands of an octave: `seams[k]` above band `k + 1`.
    seams: Vec<Mutex<Seam>>,
    /// The previous octave's intervals 1 and 3 that the next octave starts from, copied aside
    /// by [`Threads::move_shared`]: [`SHARED_WORDS`] per sample of the next octave's grid.
    shared: Vec<u32>,
}

/// The next octave's grid whose intervals 0 and 1 wait in [`DetectBuffers::shared`], to be put in
/// place by the task of each band before it fills the band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SharedAside {
    gw: usize,
    rows: usize,
}

/// Detection on the calling thread, with `kernels`.
pub(super) struct OneThread<'a> {
    pub kernels: &'a Kernels,
    pub buffers: &'a mut DetectBuffers,
}

impl OneThread<'_> {
    fn columns(&mut self, width: usize) -> &mut Vec<u32> {
        if self.buffers.columns.is_empty() {
            self.buffers.columns.push(Mutex::default());
        }
        let columns = self.buffers.columns[0]
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ensure_len(columns, column_scratch_len(width));
        columns
    }
}

impl Strategy for OneThread<'_> {
    fn fill(
        &mut self,
        fill: &OctaveFill<'_>,
        rows: Range<usize>,
        out: &mut [u32],
    ) -> Result<(), SurfError> {
        let fill_rows = self.kernels.fill_rows;
        fill_rows(fill, rows, out, self.columns(fill.image_width()))
    }

    fn band_rows(&self) -> usize {
        BAND_ROWS
    }
}

/// Detection on the threads of `pool`, with `kernels`.
pub(super) struct Threads<'a> {
    pub pool: &'a rayon::ThreadPool,
    pub kernels: &'a Kernels,
    pub buffers: &'a mut DetectBuffers,
    /// Set by [`Strategy::move_shared`], taken by the octave's [`Strategy::fill_and_scan`].
    aside: Option<SharedAside>,
}

impl<'a> Threads<'a> {
    pub(super) fn new(
        pool: &'a rayon::ThreadPool,
        kernels: &'a Kernels,
        buffers: &'a mut DetectBuffers,
    ) -> Self {
        Self {
            pool,
            kernels,
            buffers,
            aside: None,
        }
    }
}

impl Threads<'_> {
    /// Grid rows per band of an octave of `rows` rows.
    fn rows_per_band(&self, rows: usize) -> usize {
        let wanted = self.pool.current_num_threads() * BANDS_PER_THREAD;
        rows.div_ceil(wanted).clamp(MIN_BAND_ROWS, BAND_ROWS)
    }

    /// One column scratch per thread of the pool.
    fn columns(&mut self) -> &[Mutex<Vec<u32>>] {
        let threads = self.pool.current_num_threads();
        if self.buffers.columns.len() < threads {
            self.buffers.columns.resize_with(threads, Mutex::default);
        }
        &self.buffers.columns
    }
}

/// Runs `f` with the column scratch of the pool thread it runs on (of at least `len` words);
/// off the pool, with a scratch of its own.
fn with_columns<T>(columns: &[Mutex<Vec<u32>>], len: usize, f: impl FnOnce(&mut [u32]) -> T) -> T {
    let mut own = Vec::new();
    let mut guard = rayon::current_thread_index()
        .and_then(|i| columns.get(i))
        .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    let columns = guard.as_deref_mut().unwrap_or(&mut own);
    ensure_len(columns, len);
    f(columns)
}

impl Strategy for Threads<'_> {
    /// The rows in bands of [`BAND_ROWS`] on the pool (`Packed8` maps, which the core scans).
    fn fill(
        &mut self,
        fill: &OctaveFill<'_>,
        rows: Range<usize>,
        out: &mut [u32],
    ) -> Result<(), SurfError> {
        let fill_rows = self.kernels.fill_rows;
        let (row_words, len) = (fill.row_words(), column_scratch_len(fill.image_width()));
        let pool = self.pool;
        let columns = self.columns();
        let rows = rows.start..rows.end.min(fill.grid().1);
        if row_words == 0 || rows.is_empty() {
            return Ok(());
        }
        let (expected, actual) = (rows.len() * row_words, out.len());
        let out = out
            .get_mut(..expected)
            .ok_or(SurfError::ScratchLength { expected, actual })?;
        pool.install(|| {
            out.par_chunks_mut(BAND_ROWS * row_words)
                .enumerate()
                .try_for_each(|(band, chunk)| {
                    let first = rows.start + band * BAND_ROWS;
                    let band_rows = first..first + chunk.len() / row_words;
                    with_columns(columns, len, |c| fill_rows(fill, band_rows, chunk, c))
                })
        })
    }

    /// Copies the sources aside, all rows at once on the pool, for the octave's band tasks to
    /// put in place ([`put_shared`]): the core's move has to go in place row after row (or in
    /// waves `[a, 4a)`), as a row's destination overwrites the sources of rows before it. The
    /// words are the ones the core moves, read before any is overwritten, so each destination
    /// gets the value the core's move gives it.
    fn move_shared(&mut self, maps: &mut [u32], previous_gw: usize, gw: usize, rows: usize) {
        let words = INTERVALS as usize;
        let source_row_words = 2 * previous_gw * words;
        // The previous octave's rows up to `2 (rows - 1)`, the last one read, whole.
        let source_words = (2 * rows).saturating_sub(1) * previous_gw * words;
        if gw == 0 || rows == 0 || 2 * gw > previous_gw || source_words > maps.len() {
            // Not the core's nested grids: as the core moves them.
            surf::Serial::default().move_shared(maps, previous_gw, gw, rows);
            return;
        }
        let shared = &mut self.buffers.shared;
        ensure_len(shared, rows * gw * SHARED_WORDS);
        let shared = &mut shared[..rows * gw * SHARED_WORDS];
        let maps = &*maps;
        let aside_row_words = gw * SHARED_WORDS;
        self.pool.install(|| {
            shared
                .par_chunks_mut(SHARED_ROWS_PER_TASK * aside_row_words)
                .enumerate()
                .for_each(|(task, rows)| {
                    let first = task * SHARED_ROWS_PER_TASK;
                    for (k, row) in rows.chunks_mut(aside_row_words).enumerate() {
                        let from = (first + k) * source_row_words;
                        copy_sources(row, maps.get(from..).unwrap_or_default());
                    }
                });
        });
        self.aside = Some(SharedAside { gw, rows });
    }

    fn fill_and_scan<S: KeypointSink>(
        &mut self,
        fill: &OctaveFill<'_>,
        maps: &mut [u32],
        sink: &mut S,
        stats: &mut DetectStats,
    ) -> Result<(), SurfError> {
        let fill_rows = self.kernels.fill_rows;
        let (gw, rows) = fill.grid();
        // The shared intervals copied aside for this octave's grid (none in octave 0). Any
        // other grid (the core pairs the two calls, so never) gets them in place here, as the
        // core's move would have left them.
        let per_band = match self.aside.take() {
            Some(aside) if aside == (SharedAside { gw, rows }) => true,
            Some(aside) => {
                let samples = aside.gw * aside.rows;
                let shared = self.buffers.shared.get(..samples * SHARED_WORDS);
                let words = samples * INTERVALS as usize;
                if let (Some(shared), Some(maps)) = (shared, maps.get_mut(..words)) {
                    put_shared(maps, shared);
                }
                false
            }
            None => false,
        };
        let (row_words, len) = (fill.row_words(), column_scratch_len(fill.image_width()));
        let band_rows = self.rows_per_band(rows);
        let count = rows.div_ceil(band_rows);
        if row_words == 0 || count == 0 {
            return Ok(());
        }
        let pool = self.pool;
        self.columns();
        let DetectBuffers {
            columns,
            bands,
            seams,
            shared,
        } = &mut *self.buffers;
        let shared = shared.get(..rows * gw * SHARED_WORDS).filter(|_| per_band);
        if bands.len() < count {
            bands.resize_with(count, ScanBand::default);
        }
        let bands = &mut bands[..count];
        if seams.len() < count - 1 {
            seams.resize_with(count - 1, Mutex::default);
        }
        let seams = &seams[..count - 1];
        for seam in seams {
            lock(seam).clear();
        }
        let (expected, actual) = (rows * row_words, maps.len());
        let maps = maps
            .get_mut(..expected)
            .ok_or(SurfError::ScratchLength { expected, actual })?;
        let columns = &columns[..];
        // Each band filled, scanned where it can be on its own, and handed to its seams.
        pool.install(|| {
            maps.par_chunks_mut(band_rows * row_words)
                .zip(bands.par_iter_mut())
                .enumerate()
                // Every band a task of its own, for work stealing to even out (as in describe).
                .with_max_len(1)
                .try_for_each(|(k, (chunk, band))| {
                    let first = k * band_rows;
                    let band_range = first..first + chunk.len() / row_words;
                    if let Some(shared) = shared {
                        let from = first * gw * SHARED_WORDS;
                        put_shared(chunk, shared.get(from..).unwrap_or_default());
                    }
                    with_columns(columns, len, |c| {
                        fill_rows(fill, band_range.clone(), chunk, c)
                    })?;
                    band.clear();
                    let view = fill.maps(chunk, first);
                    for interval in 1..=2 {
                        view.scan_rows(
                            interval,
                            band_range.clone(),
                            &mut band.points,
                            &mut band.stats,
                        )?;
                    }
                    let chunk = &*chunk;
                    if let Some(above) = k.checked_sub(1).and_then(|j| seams.get(j)) {
                        let top = chunk.get(..2 * row_words).unwrap_or(chunk);
                        lock(above).add_half(fill, first, SeamHalf::Below(top))?;
                    }
                    if let Some(below) = seams.get(k) {
                        let bottom = chunk.get(chunk.len().saturating_sub(2 * row_words)..);
                        let bottom = bottom.unwrap_or_default();
                        lock(below).add_half(fill, band_range.end, SeamHalf::Above(bottom))?;
                    }
                    Ok::<(), SurfError>(())
                })
        })?;
        for seam in seams {
            lock(seam).found.offer_to(sink, stats);
        }
        for band in bands.iter() {
            band.offer_to(sink, stats);
        }
        Ok(())
    }
}

/// One grid row's intervals 0 and 1 (`aside`, [`SHARED_WORDS`] per sample) from intervals 1
/// and 3 of every other sample of the previous octave's row `source` (which starts at the row's
/// first source sample).
fn copy_sources(aside: &mut [u32], source: &[u32]) {
    for (sample, pair) in aside
        .chunks_exact_mut(SHARED_WORDS)
        .zip(source.chunks_exact(2 * INTERVALS as usize))
    {
        sample[0] = pair[1];
        sample[1] = pair[3];
    }
}

/// Intervals 0 and 1 of the samples of `maps` (four words each) from `aside` ([`SHARED_WORDS`]
/// per sample, the same samples in the same order).
fn put_shared(maps: &mut [u32], aside: &[u32]) {
    for (sample, pair) in maps
        .chunks_exact_mut(INTERVALS as usize)
        .zip(aside.chunks_exact(SHARED_WORDS))
    {
        sample[0] = pair[0];
        sample[1] = pair[1];
    }
}

/// A sink whose [`KeypointSink::sort`] runs on a pool: a frame's few thousand keypoints sorted
/// on one thread leave the other threads idle for as long as a small octave's fill. The order
/// is [`Keypoint::rank_cmp`], a total order, so any sort gives the same sequence.
pub(super) struct PoolSorted<'p, S> {
    pub sink: S,
    pub pool: Option<&'p rayon::ThreadPool>,
}

impl<S: KeypointSink + Send> KeypointSink for PoolSorted<'_, S> {
    fn offer(&mut self, point: Keypoint) {
        self.sink.offer(point);
    }
    fn points(&self) -> &[Keypoint] {
        self.sink.points()
    }
    fn points_mut(&mut self) -> &mut [Keypoint] {
        self.sink.points_mut()
    }
    fn sort(&mut self) {
        let points = self.sink.points_mut();
        match self.pool {
            Some(pool) => pool.install(|| points.par_sort_unstable_by(Keypoint::rank_cmp)),
            None => points.sort_unstable_by(Keypoint::rank_cmp),
        }
    }
    fn dropped(&self) -> usize {
        self.sink.dropped()
    }
    fn clear(&mut self) {
        self.sink.clear();
    }
}

/// `mutex`'s contents (a panic elsewhere leaves nothing half-written that matters here).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The grid rows one band hands to a seam: its last two (`Above` the seam) or its first two
/// (`Below`; one, when the band has one row).
enum SeamHalf<'r> {
    Above(&'r [u32]),
    Below(&'r [u32]),
}

/// The rows around one seam of the threaded scan (grid row `row`, the first of a band): the two
/// rows above it and the rows below it, copied there by the tasks of the two bands, and what the
/// scan of rows `row - 1` and `row` found once both were there.
#[derive(Debug, Default)]
pub(super) struct Seam {
    /// Rows `row - 2 ..`, `row_words` each.
    rows: Vec<u32>,
    /// The rows below the seam copied (at most 2).
    rows_below: usize,
    /// The halves copied so far this octave.
    halves: u8,
    /// What the scan of the seam's two rows found.
    found: ScanBand,
}

impl Seam {
    fn clear(&mut self) {
        self.halves = 0;
        self.rows_below = 0;
        self.found.clear();
    }

    /// Copies `half` of seam row `row` of `fill`'s octave; the second half scans the seam's
    /// two rows (a band has at least two rows above a seam, so both are scannable when the
    /// band below has two rows, and the core's scan skips the last row when it has one).
    fn add_half(
        &mut self,
        fill: &OctaveFill<'_>,
        row: usize,
        half: SeamHalf<'_>,
    ) -> Result<(), SurfError> {
        let row_words = fill.row_words();
        ensure_len(&mut self.rows, 4 * row_words);
        let (at, words) = match half {
            SeamHalf::Above(words) => (0, words),
            SeamHalf::Below(words) => {
                self.rows_below = words.len() / row_words;
                (2 * row_words, words)
            }
        };
        if let Some(place) = self.rows.get_mut(at..at + words.len()) {
            place.copy_from_slice(words);
        }
        self.halves += 1;
        if self.halves < 2 || row < 2 {
            return Ok(());
        }
        let held = self.rows.get(..(2 + self.rows_below) * row_words);
        let view = fill.maps(held.unwrap_or_default(), row - 2);
        for interval in 1..=2 {
            view.scan_rows(
                interval,
                row - 1..row + 1,
                &mut self.found.points,
                &mut self.found.stats,
            )?;
        }
        Ok(())
    }
}

/// The keypoints and counts of one band of rows of the threaded scan.
#[derive(Debug, Default)]
struct ScanBand {
    points: CollectedPoints,
    stats: DetectStats,
}

impl ScanBand {
    fn clear(&mut self) {
        self.points.clear();
        self.stats = DetectStats::default();
    }

    /// Offers the band's keypoints to `sink` and adds its counts to `stats`.
    fn offer_to<S: KeypointSink>(&self, sink: &mut S, stats: &mut DetectStats) {
        for &point in self.points.points() {
            sink.offer(point);
        }
        stats.add_scan(&self.stats);
    }
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

/// Detects SURF keypoints into `sink` on `pool` (or this thread) with `kernels`.
pub(super) fn detect_surf<S: KeypointSink>(
    ii: &surfcl_core::IntegralImage<'_>,
    config: &surf::SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
    pool: Option<&rayon::ThreadPool>,
    kernels: &Kernels,
    buffers: &mut DetectBuffers,
) -> Result<DetectStats, SurfError> {
    match pool {
        Some(pool) => {
            let mut threads = Threads::new(pool, kernels, buffers);
            surf::detect_with_strategy(ii, config, scratch, sink, &mut threads)
        }
        None => {
            let mut one = OneThread { kernels, buffers };
            surf::detect_with_strategy(ii, config, scratch, sink, &mut one)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared intervals copied aside and put in place give the words the core's
    /// row-after-row move gives, leaving every other word as it was: nested grids of several
    /// shapes, one thread and several.
    #[test]
    fn shared_intervals_put_in_place_equal_the_core_move() {
        for (previous_gw, gw, rows) in [(15, 7, 100), (20, 10, 9), (480, 240, 135), (9, 4, 300)] {
            let len = (2 * rows - 1) * previous_gw * INTERVALS as usize;
            let words: Vec<u32> = (0..len as u32)
                .map(|i| i.wrapping_mul(2_654_435_761))
                .collect();
            let mut expected = words.clone();
            surf::Serial::default().move_shared(&mut expected, previous_gw, gw, rows);
            assert_ne!(expected, words);
            for threads in [1, 2, 7] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut got = words.clone();
                let mut buffers = DetectBuffers::default();
                let kernels = Kernels::default();
                let mut strategy = Threads::new(&pool, &kernels, &mut buffers);
                strategy.move_shared(&mut got, previous_gw, gw, rows);
                assert_eq!(strategy.aside, Some(SharedAside { gw, rows }));
                // Copied aside only: the maps are untouched until the bands put it in place.
                assert!(got == words);
                let destinations = &mut got[..rows * gw * INTERVALS as usize];
                put_shared(destinations, &buffers.shared);
                assert!(
                    got == expected,
                    "{previous_gw} -> {gw} x {rows}, {threads} threads"
                );
            }
        }
    }
}
