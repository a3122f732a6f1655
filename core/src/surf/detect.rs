//! The detection driver: one octave at a time, its response maps filled and scanned by a
//! [`Strategy`] (on this thread, in bands, on several threads) or by an [`Arithmetic`], the
//! keypoints kept by the sink.

use core::ops::Range;

use super::arith::Arithmetic;
use super::config::{INTERVALS, Precision, SurfConfig, SurfError};
use super::decide::{DetectStats, nms_border};
use super::fill::OctaveFill;
use super::geometry::{grid_size, sample_step, scratch_len};
use super::packed::PackedResponses;
use super::response::PortableBoxSums;
use super::scan::{MapRows, scan_interval_rows, scan_packed};
use crate::integral::IntegralImage;
use crate::keypoint::KeypointSink;

/// Detects SURF keypoints of `ii` into `sink`: [`detect_with_strategy`] with
/// [`Serial::default`] (every row on this thread, from the integral table).
///
/// `scratch` must hold at least [`scratch_len`] words; it is reused octave by octave. The sink is
/// cleared first and sorted strongest first at the end ([`Keypoint::rank_cmp`]); when it is full
/// the weakest points are dropped and counted. Images too small for any keypoint give an empty
/// result. Keypoints come out with orientation 0 (see `describe::assign_orientation`).
///
/// [`Keypoint::rank_cmp`]: crate::Keypoint::rank_cmp
pub fn detect<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
) -> Result<DetectStats, SurfError> {
    detect_with_strategy(ii, config, scratch, sink, &mut Serial::default())
}

/// Where and how a detection fills and scans each octave's response maps: on the calling thread
/// ([`Serial`]), or bands of rows on several threads, with wider vector instructions, and so
/// on. Every sample's response and every row's scan are independent, so any strategy that keeps
/// the contract of its two methods finds the keypoints of [`detect`], bit for bit.
pub trait Strategy {
    /// Fills grid rows `rows` of `fill`'s octave into `out` (those rows only), leaving it as
    /// [`OctaveFill::fill_rows`] does (with any box sums and column scratch). Called once per
    /// `Packed8` octave (all rows), and by the default [`Strategy::fill_and_scan`].
    fn fill(
        &mut self,
        fill: &OctaveFill<'_>,
        rows: Range<usize>,
        out: &mut [u32],
    ) -> Result<(), SurfError>;

    /// Fills and scans one octave of `f32` maps: `maps` holds all the octave's grid rows, with
    /// the intervals below `fill.first_interval()` already in place. Must fill them as
    /// [`Strategy::fill`] does, and offer `sink` the keypoints that
    /// [`OctaveMaps::scan_rows`](super::OctaveMaps::scan_rows) of intervals 1 and 2 over every
    /// row gives, in any order and bands (the sink keeps the strongest under a total order
    /// whatever the order), adding their counts to `stats` ([`DetectStats::add_scan`]).
    ///
    /// By default: the rows filled with [`Strategy::fill`] on this thread in bands of
    /// [`Strategy::band_rows`], each row scanned as soon as its neighbours are filled
    /// ([`fill_and_scan_in_bands`]).
    fn fill_and_scan<S: KeypointSink>(
        &mut self,
        fill: &OctaveFill<'_>,
        maps: &mut [u32],
        sink: &mut S,
        stats: &mut DetectStats,
    ) -> Result<(), SurfError> {
        let band_rows = match self.band_rows() {
            0 => fill.grid().1,
            rows => rows,
        };
        fill_and_scan_in_bands(fill, maps, band_rows, sink, stats, |rows, out| {
            self.fill(fill, rows, out)
        })
    }

    /// The grid rows of an `f32` octave that the default [`Strategy::fill_and_scan`] fills
    /// before it scans them (0: the whole octave in one [`Strategy::fill`]). By default 0.
    fn band_rows(&self) -> usize {
        0
    }

    /// Moves the previous `f32` octave's intervals 1 and 3 (a grid `previous_gw` wide, at the
    /// start of `maps`) at sample `(2 sx, 2 sy)` to this octave's intervals 0 and 1 at sample
    /// `(sx, sy)`, for this octave's grid rows `0..rows` of `gw` samples, in place in `maps`.
    /// `previous_gw >= 2 gw`, so the destinations of rows `..4a` lie before the sources of row
    /// `a` and of every row after it: a strategy may move the rows of `[a, 4a)` at once, once
    /// the rows before `a` are moved. A strategy may instead copy the sources aside here and
    /// put them in place in its own [`Strategy::fill_and_scan`], before it fills each row: the
    /// words are the same. By default row after row on this thread.
    fn move_shared(&mut self, maps: &mut [u32], previous_gw: usize, gw: usize, rows: usize) {
        move_shared_rows(maps, previous_gw, gw, 0..rows);
    }
}

/// The [`Strategy`] of one thread: rows filled with the portable box sums and the column
/// scratch given (none: every sample from the integral table), the octave at once or in bands
/// of rows, each band's rows scanned as soon as the rows below them are filled
/// ([`fill_and_scan_in_bands`]).
#[derive(Debug, Default)]
pub struct Serial<'c> {
    columns: &'c mut [u32],
    band_rows: usize,
}

impl<'c> Serial<'c> {
    /// Fills with the column scratch `columns`
    /// ([`column_scratch_len`](super::column_scratch_len) words for the fast path), in bands
    /// of `band_rows` grid rows (0: each octave at once, then scanned).
    pub fn with_columns(columns: &'c mut [u32], band_rows: usize) -> Self {
        Self { columns, band_rows }
    }
}

impl Strategy for Serial<'_> {
    fn fill(
        &mut self,
        fill: &OctaveFill<'_>,
        rows: Range<usize>,
        out: &mut [u32],
    ) -> Result<(), SurfError> {
        fill.fill_rows::<PortableBoxSums>(rows, out, self.columns)
    }

    fn band_rows(&self) -> usize {
        self.band_rows
    }
}

/// One octave filled and scanned on this thread in bands of `band_rows` grid rows (0 counts as
/// 1): `fill_band(rows, out)` fills grid rows `rows` into `out` (those rows only, as
/// [`OctaveFill::fill_rows`] does), and the rows whose neighbours are all filled are scanned
/// right away, while the band's maps are still in the cache. Filled and then scanned whole, a
/// large octave's maps (8 MB at 1920x1080) go through memory once more per interval scanned.
/// Meets the contract of [`Strategy::fill_and_scan`].
pub fn fill_and_scan_in_bands<S: KeypointSink>(
    fill: &OctaveFill<'_>,
    maps: &mut [u32],
    band_rows: usize,
    sink: &mut S,
    stats: &mut DetectStats,
    mut fill_band: impl FnMut(Range<usize>, &mut [u32]) -> Result<(), SurfError>,
) -> Result<(), SurfError> {
    let rows = fill.grid().1;
    let row_words = fill.row_words();
    let band_rows = band_rows.max(1);
    let mut scanned = 0;
    for start in (0..rows).step_by(band_rows) {
        let end = (start + band_rows).min(rows);
        let expected = end * row_words;
        if maps.len() < expected {
            return Err(SurfError::ScratchLength {
                expected,
                actual: maps.len(),
            });
        }
        fill_band(start..end, &mut maps[start * row_words..expected])?;
        // The maps filled so far: their last row is scanned with the next band.
        let view = fill.maps(&maps[..end * row_words], 0);
        for interval in 1..=2 {
            view.scan_rows(interval, scanned..end, sink, stats)?;
        }
        scanned = end.saturating_sub(1).max(scanned);
    }
    Ok(())
}

/// Detects SURF keypoints of `ii` into `sink` with each octave filled and scanned by
/// `strategy`: octave after octave, `Packed8` maps filled by [`Strategy::fill`] and scanned
/// here, `f32` maps by [`Strategy::fill_and_scan`]. Octave `o`'s intervals 0 and 1 are the
/// filter sizes of octave `o - 1`'s intervals 1 and 3, sampled at every other point of that
/// octave's grid, so in `F32` precision they are moved from the maps of the octave before (still
/// in `scratch`) and the octave is filled from interval 2 ([`OctaveFill::starting_at`]): a
/// quarter to a half fewer responses above octave 0.
///
/// As [`detect`] otherwise: `scratch` of at least [`scratch_len`] words, the sink cleared first
/// and sorted strongest first at the end, the same keypoints and counts whatever the strategy.
pub fn detect_with_strategy<S: KeypointSink, T: Strategy>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
    strategy: &mut T,
) -> Result<DetectStats, SurfError> {
    let expected = scratch_len(config, ii.width(), ii.height())?;
    drive(
        ii,
        config,
        scratch,
        expected,
        sink,
        |octave, gw, gh, scratch, sink, stats| {
            let fill = OctaveFill::new(ii, config, octave)?;
            if config.precision == Precision::Packed8 {
                let maps = &mut scratch[..gw * gh];
                strategy.fill(&fill, 0..gh, maps)?;
                let view = PackedResponses::new_checked(maps, gw, gh)?;
                scan_packed(ii, config, octave, &view, sink, stats);
                return Ok(());
            }
            // `drive` visits the octaves in order, so the scratch holds octave - 1's maps.
            let fill = match shared_source_width(ii, config, octave, scratch.len(), gw, gh) {
                Some(previous_gw) => {
                    strategy.move_shared(scratch, previous_gw, gw, gh);
                    fill.starting_at(2)?
                }
                None => fill,
            };
            let maps = &mut scratch[..gw * gh * INTERVALS as usize];
            strategy.fill_and_scan(&fill, maps, sink, stats)
        },
    )
}

/// The number of `u32` scratch words [`detect_with`] needs: 4 per sample of octave 0 (the
/// packed precision setting does not apply here).
pub fn scratch_len_with(
    config: &SurfConfig,
    width: usize,
    height: usize,
) -> Result<usize, SurfError> {
    let f32_config = SurfConfig {
        precision: Precision::F32,
        ..*config
    };
    scratch_len(&f32_config, width, height)
}

/// Detects SURF keypoints of `ii` into `sink` with arithmetic `A`: `detect_with::<Float>` is
/// [`detect`] with `f32` maps, `detect_with::<FixedPoint>` the integer-only path.
/// `config.precision` is ignored (both store four words per sample; see [`scratch_len_with`]).
/// The sink is cleared first and sorted strongest first at the end.
pub fn detect_with<A: Arithmetic, S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
) -> Result<DetectStats, SurfError> {
    let expected = scratch_len_with(config, ii.width(), ii.height())?;
    drive(
        ii,
        config,
        scratch,
        expected,
        sink,
        |octave, gw, gh, scratch, sink, stats| {
            let maps = &mut scratch[..gw * gh * INTERVALS as usize];
            A::fill(ii, config, octave, maps);
            let view = MapRows {
                maps,
                first_row: 0,
                grid: (gw, gh),
            };
            for interval in 1..=2 {
                scan_interval_rows::<A, S>(ii, config, octave, view, interval, 0..gh, sink, stats);
            }
            Ok(())
        },
    )
}

/// The grid width of octave `octave - 1`, whose `f32` maps (still in the first `len` words of
/// the scratch) hold this octave's intervals 0 and 1 as their intervals 1 and 3 at sample
/// `(2 sx, 2 sy)`: same filters at the same pixels. `None` for octave 0, or when the grids do
/// not nest that way within `len` words (never with the grids of [`grid_size`]).
fn shared_source_width(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    len: usize,
    gw: usize,
    gh: usize,
) -> Option<usize> {
    let previous = octave.checked_sub(1)?;
    let (previous_gw, _) = grid_size(ii.width(), ii.height(), sample_step(config, previous));
    let previous_rows = (2 * gh).saturating_sub(1);
    let nests =
        gh > 0 && 2 * gw <= previous_gw && previous_rows * previous_gw * INTERVALS as usize <= len;
    nests.then_some(previous_gw)
}

/// Moves intervals 1 and 3 of the previous octave's maps (grid `previous_gw` wide, from
/// [`shared_source_width`]) at sample `(2 sx, 2 sy)` to intervals 0 and 1 of this octave's
/// sample `(sx, sy)`, for this octave's grid rows `rows`, in place. A sample's destination
/// never lies after its source (`previous_gw >= 2 gw`) and the samples go in order, so no
/// source is overwritten before it is read; rows moved in increasing order, all at once or band
/// after band, are the same moves in the same order (a row's sources, previous row `2 sy`, lie
/// after every destination of the rows before it).
fn move_shared_rows(
    maps: &mut [u32],
    previous_gw: usize,
    gw: usize,
    rows: core::ops::Range<usize>,
) {
    let words = INTERVALS as usize;
    for sy in rows {
        for sx in 0..gw {
            let src = (2 * sy * previous_gw + 2 * sx) * words;
            let dst = (sy * gw + sx) * words;
            maps[dst] = maps[src + 1];
            maps[dst + 1] = maps[src + 3];
        }
    }
}

/// The detection driver every arithmetic and precision shares: checks that `scratch` holds
/// `expected` words, clears the sink, calls `scan(octave, grid_w, grid_h, scratch, sink, stats)`
/// for each octave while its interior is not empty, then sorts the sink strongest first.
fn drive<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    expected: usize,
    sink: &mut S,
    mut scan: impl FnMut(
        u32,
        usize,
        usize,
        &mut [u32],
        &mut S,
        &mut DetectStats,
    ) -> Result<(), SurfError>,
) -> Result<DetectStats, SurfError> {
    if scratch.len() < expected {
        return Err(SurfError::ScratchLength {
            expected,
            actual: scratch.len(),
        });
    }
    sink.clear();
    let mut stats = DetectStats::default();
    for octave in 0..u32::from(config.octaves) {
        let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(config, octave));
        // Interval 1 has the smaller border; when even its interior is empty, so are all later
        // octaves' (their grids shrink and borders grow), so stop.
        let b1 = nms_border(config, octave, 1) as usize;
        if gw <= 2 * b1 + 1 || gh <= 2 * b1 + 1 {
            break;
        }
        scan(octave, gw, gh, scratch, sink, &mut stats)?;
    }
    sink.sort();
    stats.kept = sink.points().len();
    stats.dropped = sink.dropped();
    Ok(stats)
}
