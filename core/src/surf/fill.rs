//! Filling one octave's response maps, a band of grid rows at a time ([`OctaveFill`]), and the
//! view of filled maps that the non-maximum suppression scans ([`OctaveMaps`]).

use core::ops::Range;

use super::arith::Float;
use super::config::{Precision, SurfConfig, SurfError};
use super::decide::DetectStats;
use super::geometry::{check_octave, grid_size, sample_step, words_per_sample};
use super::packed::PackedCodeTable;
use super::response::{BoxSums, fill_f32_bits, fill_packed};
use super::scan::{MapRows, scan_interval_rows};
use crate::integral::IntegralImage;
use crate::keypoint::KeypointSink;

/// How one octave's response maps are filled: its grid and the first interval to compute.
/// Every sample is independent, so rows filled in any bands, on any threads, with any
/// [`BoxSums`] and any column scratch, are the same words.
#[derive(Debug, Clone, Copy)]
pub struct OctaveFill<'a> {
    ii: &'a IntegralImage<'a>,
    config: &'a SurfConfig,
    octave: u32,
    grid: (usize, usize),
    first_interval: u32,
}

impl<'a> OctaveFill<'a> {
    /// The fill of every interval of `octave` of `ii` under `config` (both checked).
    pub fn new(
        ii: &'a IntegralImage<'a>,
        config: &'a SurfConfig,
        octave: u32,
    ) -> Result<Self, SurfError> {
        config.validate()?;
        check_octave(config, octave)?;
        let grid = grid_size(ii.width(), ii.height(), sample_step(config, octave));
        Ok(Self {
            ii,
            config,
            octave,
            grid,
            first_interval: 0,
        })
    }

    /// This fill from interval `first_interval` (0 or 2) on: in [`Precision::F32`] the
    /// intervals below it are left as the maps hold them (an octave's intervals 0 and 1 are the
    /// filters of the octave before's intervals 1 and 3, sampled at every other point of its
    /// grid, and the detection moves them there instead of computing them again); `Packed8`
    /// fills every interval.
    pub fn starting_at(self, first_interval: u32) -> Result<Self, SurfError> {
        if first_interval != 0 && first_interval != 2 {
            return Err(SurfError::FirstInterval(first_interval));
        }
        Ok(Self {
            first_interval,
            ..self
        })
    }

    /// The octave (0-based).
    pub fn octave(&self) -> u32 {
        self.octave
    }

    /// The octave's sample grid, `(columns, rows)`.
    pub fn grid(&self) -> (usize, usize) {
        self.grid
    }

    /// The first interval computed ([`OctaveFill::starting_at`]).
    pub fn first_interval(&self) -> u32 {
        self.first_interval
    }

    /// `u32` words of one grid row of the maps: 4 per sample in [`Precision::F32`], 1 in
    /// [`Precision::Packed8`].
    pub fn row_words(&self) -> usize {
        self.grid.0 * words_per_sample(self.config.precision)
    }

    /// The image's width in pixels, for sizing the column scratch
    /// ([`column_scratch_len`](super::column_scratch_len)).
    pub fn image_width(&self) -> usize {
        self.ii.width()
    }

    /// Fills grid rows `rows` into `out`, which holds those rows only (sample `(sx, sy)` at
    /// `(sy - rows.start) * grid_w + sx`, [`OctaveFill::row_words`] per row; rows beyond the
    /// grid are ignored).
    ///
    /// `columns` is the scratch of the fast path: with at least
    /// [`column_scratch_len`](super::column_scratch_len)`(width)` words (68 bytes per image
    /// column) it holds the vertical differences of the integral table that a grid row's
    /// filters share, so an interior sample costs half the table reads, and a grid row's
    /// interior samples are computed as vectors (ARCHITECTURE.md, "The CPU fast path"), with
    /// box sums `B`. The responses are the same bits with any `B`, a shorter `columns` or an
    /// empty one (every sample from the integral table).
    ///
    /// Inlined into the caller, so that a std layer can compile it with wider vector
    /// instructions where the CPU has them.
    #[inline(always)]
    pub fn fill_rows<B: BoxSums>(
        &self,
        rows: Range<usize>,
        out: &mut [u32],
        columns: &mut [u32],
    ) -> Result<(), SurfError> {
        let (ii, config, octave) = (self.ii, self.config, self.octave);
        let gh = self.grid.1;
        let visited = rows.end.min(gh).saturating_sub(rows.start.min(gh));
        let expected = visited * self.row_words();
        if out.len() < expected {
            return Err(SurfError::ScratchLength {
                expected,
                actual: out.len(),
            });
        }
        let columns = (!columns.is_empty()).then_some(columns);
        match config.precision {
            Precision::F32 => {
                let from = self.first_interval as usize;
                fill_f32_bits::<B>(ii, config, octave, rows, columns, out, from);
            }
            Precision::Packed8 => {
                let table = PackedCodeTable::new(config.threshold);
                fill_packed(ii, config, octave, &table, rows, columns, out);
            }
        }
        Ok(())
    }

    /// The filled `f32` maps of grid rows `first_row..` in `maps` (as many rows as it holds
    /// whole), for scanning ([`OctaveMaps::scan_rows`]).
    pub fn maps<'m>(&self, maps: &'m [u32], first_row: usize) -> OctaveMaps<'m>
    where
        'a: 'm,
    {
        OctaveMaps {
            ii: self.ii,
            config: self.config,
            octave: self.octave,
            rows: MapRows {
                maps,
                first_row,
                grid: self.grid,
            },
        }
    }
}

/// Filled `f32` maps of consecutive grid rows of one octave (all of them, or a band), to scan:
/// shared by threads that scan bands of its rows.
#[derive(Debug, Clone, Copy)]
pub struct OctaveMaps<'a> {
    ii: &'a IntegralImage<'a>,
    config: &'a SurfConfig,
    octave: u32,
    rows: MapRows<'a>,
}

impl OctaveMaps<'_> {
    /// Rows of the octave's sample grid.
    pub fn grid_height(&self) -> usize {
        self.rows.grid.1
    }

    /// Scans grid rows `rows` of `interval` (1 or 2) into `sink`, counting into `stats`: the
    /// keypoints [`detect`](super::detect) finds there. Only rows inside the interval's border
    /// whose rows above and below are in these maps are scanned: a band's maps scan the band
    /// without its first and last row.
    pub fn scan_rows<T: KeypointSink>(
        &self,
        interval: u32,
        rows: Range<usize>,
        sink: &mut T,
        stats: &mut DetectStats,
    ) -> Result<(), SurfError> {
        if !(1..=2).contains(&interval) {
            return Err(SurfError::Interval(interval));
        }
        if self.config.precision != Precision::F32 {
            return Err(SurfError::PackedMaps);
        }
        scan_interval_rows::<Float, T>(
            self.ii,
            self.config,
            self.octave,
            self.rows,
            interval as usize,
            rows,
            sink,
            stats,
        );
        Ok(())
    }
}
