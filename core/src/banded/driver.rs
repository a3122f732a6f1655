//! The banded detector: rows in, the integral band kept, octaves filled and scanned as their rows
//! complete, keypoints described when their windows are in the band.

use core::marker::PhantomData;

use super::arith::{BandArithmetic, RowFill, add_rows_q16, keypoint_row};
use super::error::BandError;
use super::geometry::{
    band_maps_len, band_table_len, clipped_reach, descriptor_reach, detection_margin,
    detection_rows, octave_maps_len,
};
use super::store::{BandedKeypoints, FrameSink};
use crate::image::check_dimensions;
use crate::integral::IntegralImage;
use crate::keypoint::Keypoint;
use crate::surf::{
    DetectStats, INTERVALS, MAX_OCTAVES, MapRows, SurfConfig, grid_size, nms_border, sample_step,
    scan_interval_rows,
};

/// The caller's buffers of a [`BandedSurf`], sized with the module's `const fn`s.
#[derive(Debug)]
pub struct BandBuffers<'a, D> {
    /// The integral band: at least [`band_table_len`]`(width, band_rows)` words.
    pub table: &'a mut [u32],
    /// The response maps: at least [`band_maps_len`] words.
    pub maps: &'a mut [u32],
    /// Keypoint storage (the capacity: the strongest are kept).
    pub keypoints: &'a mut [Keypoint],
    /// One descriptor per keypoint slot.
    pub descriptors: &'a mut [D],
}

/// Where one octave's maps stand: the frame grid rows they hold and the first row not scanned.
#[derive(Debug, Clone, Copy, Default)]
struct OctaveRows {
    /// First frame grid row in the maps.
    held_from: usize,
    /// One past the last frame grid row in the maps.
    held_to: usize,
    /// First frame grid row not yet scanned.
    next: usize,
    /// Offset of the octave's maps in the maps buffer.
    offset: usize,
    /// Words of the octave's maps.
    len: usize,
}

/// SURF detection and description of one frame, fed row by row ([`BandedSurf::push_row`]),
/// with arithmetic `A` ([`Float`](crate::surf::Float) or
/// [`FixedPoint`](crate::surf::FixedPoint)) and descriptors of type `D` made by a describe
/// function (orientation, then descriptor: [`describe_f32_q7`](super::describe_f32_q7),
/// [`describe_fixed_q7`](super::describe_fixed_q7), [`describe_f32`](super::describe_f32)).
/// The keypoints are the full-frame detection's with the same arithmetic, bit for bit; the
/// descriptors too where the band holds their windows (module docs).
pub struct BandedSurf<'a, A, D> {
    config: SurfConfig,
    width: usize,
    height: usize,
    band_rows: usize,
    advance: usize,
    table: &'a mut [u32],
    maps: &'a mut [u32],
    out: BandedKeypoints<'a, D>,
    describe: fn(&IntegralImage, &mut Keypoint, bool) -> D,
    /// Frame row of the band's first table row.
    top: usize,
    /// Rows pushed so far (frame row of the band's last table row).
    bottom: usize,
    octaves: [OctaveRows; MAX_OCTAVES as usize],
    stats: DetectStats,
    arithmetic: PhantomData<A>,
}

impl<'a, A: BandArithmetic, D: Copy> BandedSurf<'a, A, D> {
    /// A detector for a `width x height` frame with a band of `band_rows` rows that advances by
    /// `advance` rows (a positive multiple of the largest sample step; `band_rows` at least
    /// [`detection_rows`], and [`band_rows_for`](super::band_rows_for) for the whole windows
    /// of octave 0's descriptors), checking every buffer's length.
    pub fn new(
        config: &SurfConfig,
        width: usize,
        height: usize,
        band_rows: usize,
        advance: usize,
        buffers: BandBuffers<'a, D>,
        describe: fn(&IntegralImage, &mut Keypoint, bool) -> D,
    ) -> Result<Self, BandError> {
        config.validate()?;
        check_dimensions(width, height)?;
        let largest_step = sample_step(config, u32::from(config.octaves) - 1) as usize;
        let geometry_ok = advance > 0
            && advance.is_multiple_of(largest_step)
            && band_rows >= detection_rows(config.octaves, config.init_sample_step, advance);
        if !geometry_ok {
            return Err(BandError::Geometry { band_rows, advance });
        }
        let need = |name, expected: usize, actual: usize| {
            if actual < expected {
                Err(BandError::Buffer {
                    name,
                    expected,
                    actual,
                })
            } else {
                Ok(())
            }
        };
        let (init, octave_count) = (config.init_sample_step, config.octaves);
        need(
            "table",
            band_table_len(width, band_rows),
            buffers.table.len(),
        )?;
        let maps_len = band_maps_len(width, octave_count, init, advance);
        need("maps", maps_len, buffers.maps.len())?;
        need(
            "descriptor",
            buffers.keypoints.len(),
            buffers.descriptors.len(),
        )?;
        let mut octaves = [OctaveRows::default(); MAX_OCTAVES as usize];
        let mut offset = 0;
        for (o, rows) in octaves.iter_mut().enumerate().take(octave_count.into()) {
            let len = octave_maps_len(width, o as u32, init, advance);
            *rows = OctaveRows {
                offset,
                len,
                ..OctaveRows::default()
            };
            offset += len;
        }
        buffers.table[..width + 1].fill(0);
        Ok(Self {
            config: *config,
            width,
            height,
            band_rows,
            advance,
            table: buffers.table,
            maps: buffers.maps,
            out: BandedKeypoints::new(buffers.keypoints, buffers.descriptors),
            describe,
            top: 0,
            bottom: 0,
            octaves,
            stats: DetectStats::default(),
            arithmetic: PhantomData,
        })
    }

    /// Takes the frame's next row: its integral row goes into the band (the oldest `advance`
    /// rows dropped first when the band is full), then the octaves' rows whose filters it
    /// completes are scanned (every `advance` rows and at the last row) and the keypoints whose
    /// windows it completes are described. After the last row the keypoints are sorted
    /// strongest first.
    pub fn push_row(&mut self, row: &[u8]) -> Result<(), BandError> {
        if row.len() != self.width {
            return Err(BandError::RowLength {
                expected: self.width,
                actual: row.len(),
            });
        }
        if self.bottom >= self.height {
            return Err(BandError::TooManyRows {
                height: self.height,
            });
        }
        if self.bottom - self.top == self.band_rows {
            self.detect_step()?;
            self.drop_rows()?;
        }
        let stride = self.width + 1;
        let held = self.bottom - self.top;
        let (above, current) = self.table[held * stride..(held + 2) * stride].split_at_mut(stride);
        current[0] = 0;
        let mut row_sum = 0u32;
        for ((out, &up), &p) in current[1..].iter_mut().zip(&above[1..]).zip(row) {
            row_sum = row_sum.wrapping_add(u32::from(p));
            *out = up.wrapping_add(row_sum);
        }
        self.bottom += 1;
        let complete = self.bottom == self.height;
        if complete || self.bottom.is_multiple_of(self.advance) {
            self.detect_step()?;
        }
        self.describe_ready(complete)?;
        if complete {
            self.out.sort();
            self.stats.kept = self.out.keypoints().len();
            self.stats.dropped = self.out.dropped();
        }
        Ok(())
    }

    /// Whether every row of the frame has been pushed (the results are final).
    pub fn is_complete(&self) -> bool {
        self.bottom == self.height
    }

    /// The keypoints kept so far (strongest first once complete), in frame coordinates.
    pub fn keypoints(&self) -> &[Keypoint] {
        self.out.keypoints()
    }

    /// Their descriptors (those of keypoints still waiting for rows are not written yet).
    pub fn descriptors(&self) -> &[D] {
        self.out.descriptors()
    }

    /// The detection's counts (`kept` and `dropped` once complete).
    pub fn stats(&self) -> DetectStats {
        self.stats
    }

    /// The frame rows the band holds, `top..bottom`.
    pub fn held_rows(&self) -> core::ops::Range<usize> {
        self.top..self.bottom
    }

    /// The band as an integral image of its rows (frame rows `top..bottom`).
    fn band(&self) -> Result<IntegralImage<'_>, BandError> {
        let held = self.bottom - self.top;
        let words = (held + 1) * (self.width + 1);
        Ok(IntegralImage::from_table(
            &self.table[..words],
            self.width,
            held,
        )?)
    }

    /// Orientation and descriptor of `kp` (frame coordinates) from the rows held, its windows
    /// clipped to them: `WindowNotCovered` when the keypoint's own row is not held.
    pub fn describe_held(&self, kp: &mut Keypoint) -> Result<D, BandError> {
        let row = keypoint_row(kp);
        let held = (self.top, self.bottom);
        if row < self.top as i64 || row >= self.bottom as i64 {
            return Err(BandError::WindowNotCovered {
                row: row.max(0) as usize,
                held,
            });
        }
        let ii = self.band()?;
        let mut local = *kp;
        local.y = add_rows_q16(kp.y, -(self.top as i64));
        let descriptor = (self.describe)(&ii, &mut local, self.config.upright);
        kp.orientation = local.orientation;
        Ok(descriptor)
    }

    /// Describes the waiting keypoints whose windows the band now holds (all of them when the
    /// frame is `complete`): the rows [`descriptor_reach`] below them, or [`clipped_reach`]
    /// when the band cannot hold the whole window.
    fn describe_ready(&mut self, complete: bool) -> Result<(), BandError> {
        self.describe_where(|kp, bottom, cap| {
            let reach = descriptor_reach(kp).min(cap) as i64;
            complete || keypoint_row(kp) + reach < bottom as i64
        })
    }

    /// Describes the waiting keypoints for which `ready(kp, bottom, clipped reach)` holds.
    fn describe_where(
        &mut self,
        mut ready: impl FnMut(&Keypoint, usize, usize) -> bool,
    ) -> Result<(), BandError> {
        let cap = clipped_reach(self.band_rows, self.advance);
        let bottom = self.bottom;
        // The set is moved out for the loop, which reads the band through `self`.
        let mut out = core::mem::replace(&mut self.out, BandedKeypoints::new(&mut [], &mut []));
        let result = out.describe_waiting(|kp| ready(kp, bottom, cap), |kp| self.describe_held(kp));
        self.out = out;
        result
    }

    /// Drops the band's oldest `advance` rows, describing first the waiting keypoints whose
    /// windows would lose rows.
    fn drop_rows(&mut self) -> Result<(), BandError> {
        let new_top = self.top + self.advance;
        self.describe_where(|kp, _, cap| {
            keypoint_row(kp) - (descriptor_reach(kp).min(cap) as i64) < new_top as i64
        })?;
        for o in 0..u32::from(self.config.octaves) {
            let step = sample_step(&self.config, o) as usize;
            let (gw, gh) = grid_size(self.width, self.height, step as u32);
            let b1 = nms_border(&self.config, o, 1) as usize;
            if gw <= 2 * b1 + 1 || gh <= 2 * b1 + 1 {
                break; // never scanned (detect_step)
            }
            // The next row scanned needs the table from its row above's filters on.
            let next = self.octaves[o as usize].next.max(b1 + 1);
            let first_needed = (next * step).saturating_sub(detection_margin_of(&self.config, o));
            if next < gh.saturating_sub(b1) && first_needed < new_top {
                return Err(BandError::Geometry {
                    band_rows: self.band_rows,
                    advance: self.advance,
                });
            }
        }
        let stride = self.width + 1;
        let held = self.bottom - self.top;
        self.table
            .copy_within(self.advance * stride..(held + 1) * stride, 0);
        self.top = new_top;
        Ok(())
    }

    /// Fills and scans, octave by octave, the grid rows whose filters the band now holds.
    fn detect_step(&mut self) -> Result<(), BandError> {
        for o in 0..u32::from(self.config.octaves) {
            let step = sample_step(&self.config, o) as usize;
            let (gw, gh) = grid_size(self.width, self.height, step as u32);
            // As the full-frame driver: when interval 1's interior is empty, so are the rest.
            let b1 = nms_border(&self.config, o, 1) as usize;
            if gw <= 2 * b1 + 1 || gh <= 2 * b1 + 1 {
                break;
            }
            while self.detect_octave(o, step, (gw, gh))? {}
        }
        Ok(())
    }

    /// One octave's step: rows `next..limit` scanned, with rows `next - 1..=limit` filled.
    /// Returns whether rows remain that the maps could not take this time.
    fn detect_octave(
        &mut self,
        octave: u32,
        step: usize,
        (gw, gh): (usize, usize),
    ) -> Result<bool, BandError> {
        let margin = detection_margin_of(&self.config, octave) - step;
        let b1 = nms_border(&self.config, octave, 1) as usize;
        // Grid row `sy` can be scanned when rows `sy - 1..=sy + 1` have their filters inside
        // the rows pushed: `(sy + 1) step + margin < bottom`; all at the frame's end. Rows past
        // interval 1's border are never scanned.
        let limit = if self.bottom == self.height {
            gh
        } else {
            self.bottom.saturating_sub(margin + 1) / step
        }
        .min(gh.saturating_sub(b1));
        let rows = self.octaves[octave as usize];
        if limit <= rows.next {
            return Ok(false);
        }
        // At most the rows the maps hold; the rest in the next call (the frame's last rows).
        let capacity_rows = rows.len / (gw * INTERVALS as usize).max(1);
        let full_limit = limit;
        if capacity_rows < 3 {
            return Err(BandError::Buffer {
                name: "maps",
                expected: 3 * gw * INTERVALS as usize,
                actual: rows.len,
            });
        }
        let limit = limit.min(rows.next + capacity_rows - 2);
        let row_words = gw * INTERVALS as usize;
        let top_row = self.top / step;
        // Keep the rows still needed (from `next - 1`), then fill up to `limit` inclusive.
        let keep_from = rows.next.saturating_sub(1).max(rows.held_from);
        let kept = rows.held_to.saturating_sub(keep_from);
        let fill_to = (limit + 1).min(gh);
        let maps = &mut self.maps[rows.offset..rows.offset + rows.len];
        let needed = (fill_to - keep_from) * row_words;
        if needed > maps.len() || keep_from < top_row {
            return Err(BandError::Buffer {
                name: "maps",
                expected: needed,
                actual: maps.len(),
            });
        }
        let shift = (keep_from - rows.held_from) * row_words;
        maps.copy_within(shift..shift + kept * row_words, 0);
        let fill_from = keep_from + kept;
        let ii = IntegralImage::from_table(
            &self.table[..(self.bottom - self.top + 1) * (self.width + 1)],
            self.width,
            self.bottom - self.top,
        )?;
        let fill = RowFill {
            ii: &ii,
            config: &self.config,
            octave,
            rows: fill_from - top_row..fill_to - top_row,
        };
        A::fill_rows(fill, &mut maps[kept * row_words..needed]);
        let view = MapRows {
            maps: &maps[..needed],
            first_row: keep_from - top_row,
            // The frame's grid in band rows: the scan's borders are the frame's.
            grid: (gw, gh - top_row),
        };
        let (config, top) = (self.config, self.top);
        let mut sink = FrameSink {
            set: &mut self.out,
            to_frame: |kp| A::to_frame(&ii, &config, kp, top),
        };
        let scan = rows.next - top_row..limit - top_row;
        for interval in 1..=2 {
            scan_interval_rows::<A, _>(
                &ii,
                &config,
                octave,
                view,
                interval,
                scan.clone(),
                &mut sink,
                &mut self.stats,
            );
        }
        self.octaves[octave as usize] = OctaveRows {
            held_from: keep_from,
            held_to: fill_to,
            next: limit,
            ..rows
        };
        Ok(limit < full_limit)
    }
}

/// [`detection_margin`] of `octave` for `config`'s first sample step.
fn detection_margin_of(config: &SurfConfig, octave: u32) -> usize {
    detection_margin(octave, config.init_sample_step)
}
