//! Non-maximum suppression, interpolation and the detection driver.
//!
//! The decision for one sample is factored out so that every path takes it the same way:
//! [`refine_candidate`] gets the 3x3x3 neighbourhood of `f32` responses ([`ResponseCube`]) and
//! applies the threshold, the strict 26-neighbour maximum test and the Brown-Lowe fit;
//! [`refine_exact`] first recomputes that neighbourhood from the integral image (what the packed
//! mode does for each 8-bit candidate, and what a GPU path can call on the candidates it read back).

use super::arith::{Float, scan_interval_rows, scan_maps};
use super::packed::{PackedCodeTable, PackedResponses};
use super::response::{BoxSums, Filter, PortableBoxSums, fill_f32_bits, fill_packed};
use super::{
    INTERVALS, Precision, SurfConfig, SurfError, check_octave, filter_size, grid_size, sample_step,
    scratch_len,
};
use crate::integral::IntegralImage;
use crate::keypoint::{Keypoint, KeypointSink};

/// A sample of an octave's grid in one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleSite {
    /// Octave (0-based).
    pub octave: u8,
    /// Interval (a keypoint can only be at 1 or 2).
    pub interval: u8,
    /// Column in the octave's sample grid.
    pub sx: u32,
    /// Row in the octave's sample grid.
    pub sy: u32,
}

/// The 3x3x3 neighbourhood of a sample: `cube[ds][dy][dx]`, `ds = 0` the interval below,
/// `dy = 0` the row above, `dx = 0` the column to the left; `cube[1][1][1]` is the sample.
pub type ResponseCube = [[[f32; 3]; 3]; 3];

/// The outcome of the detection decision for one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refinement {
    /// A keypoint (orientation 0; the descriptor stage assigns it).
    Keypoint(Keypoint),
    /// Not a valid site: interval not 1 or 2, octave not configured, or inside the border.
    NotInterior,
    /// The response is below the threshold.
    BelowThreshold,
    /// Some neighbour's response is `>=` the sample's.
    NotMaximum,
    /// The Hessian of the fit is singular, or an offset is `>= 0.5` in some dimension.
    Unstable,
}

/// Statistics of one [`detect`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DetectStats {
    /// Samples that went to the full 3x3x3 test: in `F32` mode the interior samples at or above
    /// the threshold; in `Packed8` mode the samples whose code is `>= 1` and `>=` all 26
    /// neighbours' codes (each of which is then recomputed exactly).
    pub candidates: usize,
    /// Strict maxima at or above the threshold.
    pub maxima: usize,
    /// Maxima discarded by the interpolation ([`Refinement::Unstable`]).
    pub discarded: usize,
    /// Keypoints offered to the sink (`maxima - discarded`).
    pub offered: usize,
    /// Keypoints in the sink at the end.
    pub kept: usize,
    /// Keypoints the sink dropped because it was full (the weakest ones).
    pub dropped: usize,
}

impl DetectStats {
    /// Adds the scan counts of `part` (candidates, maxima, discarded, offered) to these: for a
    /// caller that scans bands of rows into sinks of their own ([`OctaveMaps::scan_rows`]). `kept`
    /// and `dropped` describe the final sink and are left alone.
    pub fn add_scan(&mut self, part: &DetectStats) {
        self.candidates += part.candidates;
        self.maxima += part.maxima;
        self.discarded += part.discarded;
        self.offered += part.offered;
    }
}

/// The NMS border of `interval` (1 or 2) in `octave`: `(L(o, i + 1) + 1) / (2 step(o))` samples.
/// A sample is a possible keypoint only when `border < sx < grid_w - border` and likewise for `sy`.
pub fn nms_border(config: &SurfConfig, octave: u32, interval: u32) -> u32 {
    let step = sample_step(config, octave).max(1);
    (filter_size(octave, interval.saturating_add(1)).saturating_add(1)) / step.saturating_mul(2)
}

/// Whether `(sx, sy)` is strictly inside the border of a `grid_w x grid_h` grid.
fn inside(sx: u32, sy: u32, border: u32, grid_w: usize, grid_h: usize) -> bool {
    let (sx, sy, border) = (sx as usize, sy as usize, border as usize);
    sx > border && sy > border && sx + border < grid_w && sy + border < grid_h
}

/// The detection decision on a neighbourhood: threshold, strict maximum over the 26 neighbours,
/// then one Newton step (Brown & Lowe 2002) in `f32`, with the operations and their order fixed
/// by `docs/ARCHITECTURE.md` (the kernels repeat them bit for bit):
/// gradient `d = [(c[1][1][2] - c[1][1][0]) / 2, (c[1][2][1] - c[1][0][1]) / 2,
/// (c[2][1][1] - c[0][1][1]) / 2]`, Hessian by central differences, offset `-H^-1 d` (adjugate
/// over determinant; singular when the determinant is 0 or not finite), all on the cube scaled
/// by an exact power of two. Kept when every `|offset| < 0.5`: `x = (sx + ox) step`,
/// `y = (sy + oy) step`, `scale = 0.1333 (L(o, i) + os (L(o, i) - L(o, i - 1)))`, response
/// `c[1][1][1]`.
///
/// Does not check the border or the site's validity (see [`refine_exact`] and [`nms_border`]);
/// `interval` should be 1 or 2.
pub fn refine_candidate(
    config: &SurfConfig,
    site: SampleSite,
    cube: &ResponseCube,
    laplacian: i8,
) -> Refinement {
    let v = cube[1][1][1];
    if !reaches(v, config.threshold) {
        return Refinement::BelowThreshold;
    }
    if !strict_maximum(cube) {
        return Refinement::NotMaximum;
    }
    let Some((ox, oy, os)) = newton_offset(cube) else {
        return Refinement::Unstable;
    };
    if !(ox.abs() < 0.5 && oy.abs() < 0.5 && os.abs() < 0.5) {
        return Refinement::Unstable;
    }
    let (o, i) = (u32::from(site.octave), u32::from(site.interval));
    // Every integer here is below 2^24, so each conversion is exact.
    let step = sample_step(config, o) as f32;
    let size = filter_size(o, i);
    let size_step = size.saturating_sub(filter_size(o, i.saturating_sub(1))) as f32;
    Refinement::Keypoint(Keypoint {
        x: (site.sx as f32 + ox) * step,
        y: (site.sy as f32 + oy) * step,
        scale: 0.1333 * (size as f32 + os * size_step),
        orientation: 0.0,
        response: v,
        laplacian,
        octave: site.octave,
        interval: site.interval,
        sample_x: site.sx,
        sample_y: site.sy,
    })
}

/// Whether no neighbour of the centre of `cube` is `>=` it (a NaN neighbour, which compares
/// neither way, does not disqualify it). Shared by the `f32` and fixed-point decisions.
pub(crate) fn strict_maximum<T: PartialOrd + Copy>(cube: &[[[T; 3]; 3]; 3]) -> bool {
    let v = cube[1][1][1];
    !cube.iter().enumerate().any(|(ds, plane)| {
        plane.iter().enumerate().any(|(dy, row)| {
            row.iter()
                .enumerate()
                .any(|(dx, &n)| (ds, dy, dx) != (1, 1, 1) && n >= v)
        })
    })
}

/// `v >= threshold`, false for NaN.
#[inline]
fn reaches(v: f32, threshold: f32) -> bool {
    matches!(
        v.partial_cmp(&threshold),
        Some(core::cmp::Ordering::Greater | core::cmp::Ordering::Equal)
    )
}

/// The exact power of two `2^m`, `m = clamp(127 - E, -126, 127)` with `E` the biased exponent of
/// `v`: it brings a normal `v` into `[1, 2)`. Multiplying by it changes no rounding (unless a value
/// leaves the normal range), so the Newton step gives the same bits on the scaled cube as on the
/// original, but its cubic products cannot underflow for the tiny responses of large filters.
#[inline]
fn unit_scale(v: f32) -> f32 {
    let e = ((v.to_bits() >> 23) & 0xff) as i32;
    let m = (127 - e).clamp(-126, 127);
    f32::from_bits(((m + 127) as u32) << 23)
}

/// `-H^-1 d` of the cube in `f32` (ARCHITECTURE.md's operation order), or `None` when `H` is
/// singular.
fn newton_offset(c: &ResponseCube) -> Option<(f32, f32, f32)> {
    let k = unit_scale(c[1][1][1]);
    let g = |s: usize, y: usize, x: usize| c[s][y][x] * k;
    let v = g(1, 1, 1);
    let dx = (g(1, 1, 2) - g(1, 1, 0)) / 2.0;
    let dy = (g(1, 2, 1) - g(1, 0, 1)) / 2.0;
    let ds = (g(2, 1, 1) - g(0, 1, 1)) / 2.0;
    let hxx = g(1, 1, 2) + g(1, 1, 0) - 2.0 * v;
    let hyy = g(1, 2, 1) + g(1, 0, 1) - 2.0 * v;
    let hss = g(2, 1, 1) + g(0, 1, 1) - 2.0 * v;
    let hxy = (g(1, 2, 2) - g(1, 2, 0) - g(1, 0, 2) + g(1, 0, 0)) / 4.0;
    let hxs = (g(2, 1, 2) - g(2, 1, 0) - g(0, 1, 2) + g(0, 1, 0)) / 4.0;
    let hys = (g(2, 2, 1) - g(2, 0, 1) - g(0, 2, 1) + g(0, 0, 1)) / 4.0;
    // Adjugate of the symmetric H.
    let a00 = hyy * hss - hys * hys;
    let a01 = hxs * hys - hxy * hss;
    let a02 = hxy * hys - hxs * hyy;
    let a11 = hxx * hss - hxs * hxs;
    let a12 = hxy * hxs - hxx * hys;
    let a22 = hxx * hyy - hxy * hxy;
    let det = hxx * a00 + hxy * a01 + hxs * a02;
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let ox = -(a00 * dx + a01 * dy + a02 * ds) / det;
    let oy = -(a01 * dx + a11 * dy + a12 * ds) / det;
    let os = -(a02 * dx + a12 * dy + a22 * ds) / det;
    Some((ox, oy, os))
}

/// The exact responses of `site`'s 3x3x3 neighbourhood (recomputed from the integral image with
/// the bit-exact formula) and the centre's Laplacian sign. `site.interval` must be 1 or 2 for the
/// neighbourhood to exist; other intervals give a cube of zeros.
pub fn exact_cube(ii: &IntegralImage, config: &SurfConfig, site: SampleSite) -> (ResponseCube, i8) {
    let mut cube = [[[0f32; 3]; 3]; 3];
    let mut laplacian = 1;
    let (o, i) = (u32::from(site.octave), u32::from(site.interval));
    if !(1..=2).contains(&i) {
        return (cube, laplacian);
    }
    let step = sample_step(config, o) as i64;
    let stride = ii.width() + 1;
    for (ds, plane) in cube.iter_mut().enumerate() {
        let filter = Filter::octave(o, i + ds as u32 - 1, stride);
        for (dy, row) in plane.iter_mut().enumerate() {
            let r = (i64::from(site.sy) + dy as i64 - 1) * step;
            for (dx, value) in row.iter_mut().enumerate() {
                let c = (i64::from(site.sx) + dx as i64 - 1) * step;
                let (resp, lap) = filter.response(ii, clamp_i32(r), clamp_i32(c));
                *value = resp;
                if (ds, dy, dx) == (1, 1, 1) {
                    laplacian = lap;
                }
            }
        }
    }
    (cube, laplacian)
}

fn clamp_i32(v: i64) -> i32 {
    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// The full decision for one site, from the integral image alone: validity and border
/// ([`Refinement::NotInterior`]), then [`exact_cube`] and [`refine_candidate`]. The packed mode
/// calls it for every 8-bit candidate; a GPU path can call it for the candidates it reads back and
/// get exactly the CPU's keypoints.
pub fn refine_exact(ii: &IntegralImage, config: &SurfConfig, site: SampleSite) -> Refinement {
    let (o, i) = (u32::from(site.octave), u32::from(site.interval));
    if o >= u32::from(config.octaves) || !(1..=2).contains(&i) {
        return Refinement::NotInterior;
    }
    let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(config, o));
    if !inside(site.sx, site.sy, nms_border(config, o, i), gw, gh) {
        return Refinement::NotInterior;
    }
    let (cube, laplacian) = exact_cube(ii, config, site);
    refine_candidate(config, site, &cube, laplacian)
}

/// Detects SURF keypoints of `ii` into `sink`.
///
/// `scratch` must hold at least [`scratch_len`] words; it is reused octave by octave. The sink is
/// cleared first and sorted strongest first at the end ([`Keypoint::rank_cmp`]); when it is full
/// the weakest points are dropped and counted. Images too small for any keypoint give an empty
/// result. Keypoints come out with orientation 0 (see `describe::assign_orientation`).
pub fn detect<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
) -> Result<DetectStats, SurfError> {
    detect_with_fill(
        ii,
        config,
        scratch,
        sink,
        |octave, _grid_w, grid_h, maps| fill_octave_rows(ii, config, octave, 0..grid_h, maps),
    )
}

/// [`detect`] with each octave's response maps filled by the caller:
/// `fill(octave, grid_w, grid_h, maps)` must leave `maps` (`grid_w * grid_h` samples of the
/// configured precision's words) exactly as [`fill_octave_rows`] over `0..grid_h` does, for
/// example by filling bands of rows on several threads. Every sample is independent, so the
/// keypoints are those of [`detect`] bit for bit.
pub fn detect_with_fill<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
    fill: impl FnMut(u32, usize, usize, &mut [u32]) -> Result<(), SurfError>,
) -> Result<DetectStats, SurfError> {
    detect_with_fill_and_scan(ii, config, scratch, sink, fill, |maps, sink, stats| {
        for interval in 1..=2 {
            maps.scan_rows(interval, 0..maps.grid_height(), sink, stats)?;
        }
        Ok(())
    })
}

/// [`detect_with_fill`] with the scan of each octave's `f32` maps (the non-maximum suppression
/// and the decisions) by the caller too: `scan(maps, sink, stats)` must offer `sink` the
/// keypoints of [`OctaveMaps::scan_rows`] for interval 1 over all grid rows, then for interval
/// 2, in that order, and count them into `stats`: for example bands of rows scanned on several
/// threads into sinks of their own, whose keypoints are then offered in band order (with
/// [`DetectStats::add_scan`] of their counts). The keypoints are then those of [`detect`] bit
/// for bit. `Packed8` maps are scanned here, whatever `scan` does.
pub fn detect_with_fill_and_scan<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
    mut fill: impl FnMut(u32, usize, usize, &mut [u32]) -> Result<(), SurfError>,
    scan: impl FnMut(&OctaveMaps<'_>, &mut S, &mut DetectStats) -> Result<(), SurfError>,
) -> Result<DetectStats, SurfError> {
    // No intervals are moved between octaves: `fill` computes all four.
    let fill_all = |octave, gw, gh, _: u32, maps: &mut [u32]| fill(octave, gw, gh, maps);
    detect_octaves(ii, config, scratch, sink, false, fill_all, scan)
}

/// [`detect_with_fill_and_scan`] that reuses responses across octaves: octave `o`'s intervals 0
/// and 1 are the filter sizes of octave `o - 1`'s intervals 1 and 3, sampled at every other
/// point of that octave's grid (its sample step is twice as large), so in `F32` precision they
/// are copied from the maps of the octave before (still in `scratch`) instead of computed again.
/// `fill(octave, grid_w, grid_h, from_interval, maps)` is then told `from_interval = 2`: it must
/// leave intervals 0 and 1 of `maps` as they are and fill the others exactly as
/// [`fill_octave_rows`] does ([`fill_octave_rows_with_columns_from`] does that); a fill that
/// computes every interval anyway gives the same bits. Octave 0 and `Packed8` maps get
/// `from_interval = 0`. A quarter to a half fewer responses above octave 0 (the column sums of
/// an image row cost as much in every octave).
pub fn detect_with_shared_fill_and_scan<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
    fill: impl FnMut(u32, usize, usize, u32, &mut [u32]) -> Result<(), SurfError>,
    scan: impl FnMut(&OctaveMaps<'_>, &mut S, &mut DetectStats) -> Result<(), SurfError>,
) -> Result<DetectStats, SurfError> {
    detect_octaves(ii, config, scratch, sink, true, fill, scan)
}

/// [`detect_with_shared_fill_and_scan`] with each octave filled and scanned in bands of
/// `band_rows` grid rows (0 counts as 1): `fill(octave, rows, from_interval, out)` fills grid rows `rows` into
/// `out` (those rows only, as [`fill_octave_rows_with_columns_from`] does; intervals below
/// `from_interval` are the shared ones, already in place), and the rows whose neighbours are
/// all filled are scanned right away, while the band's maps are still in the cache. Filled and
/// then scanned whole, a 1920x1080 octave's maps (8 MB) went through memory once more per
/// interval scanned, and the scan's reads of the row below a candidate waited for memory.
///
/// The keypoints are those of [`detect`] bit for bit: the sink keeps the strongest under a
/// total order whatever the order they are offered in ([`KeypointSink`]), and the counts are
/// sums. `Packed8` maps are filled whole (one `fill` of all rows) and scanned here.
pub fn detect_with_shared_banded_fill<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
    band_rows: usize,
    mut fill: impl FnMut(u32, core::ops::Range<usize>, u32, &mut [u32]) -> Result<(), SurfError>,
) -> Result<DetectStats, SurfError> {
    let expected = scratch_len(config, ii.width(), ii.height())?;
    let band_rows = band_rows.max(1);
    drive(
        ii,
        config,
        scratch,
        expected,
        sink,
        |octave, gw, gh, scratch, sink, stats| {
            if config.precision == Precision::Packed8 {
                let grid = (gw, gh);
                let fill_all = |maps: &mut [u32]| fill(octave, 0..gh, 0, maps);
                return fill_and_scan_packed(
                    ii, config, octave, grid, scratch, sink, stats, fill_all,
                );
            }
            // Octave o's intervals 0 and 1 are moved from octave o - 1's maps band by band,
            // just before the band's other intervals are filled.
            let previous_gw = shared_source_width(ii, config, octave, scratch.len(), gw, gh);
            let from = if previous_gw.is_some() { 2 } else { 0 };
            let words_per_row = gw * INTERVALS as usize;
            let mut scanned = 0;
            for start in (0..gh).step_by(band_rows) {
                let end = (start + band_rows).min(gh);
                if let Some(previous_gw) = previous_gw {
                    move_shared_rows(scratch, previous_gw, gw, start..end);
                }
                let maps = &mut scratch[..gh * words_per_row];
                fill(
                    octave,
                    start..end,
                    from,
                    &mut maps[start * words_per_row..end * words_per_row],
                )?;
                // A row is scanned once the row below it is filled too.
                let ready = if end == gh { gh } else { end - 1 };
                let grid = (gw, gh);
                scan_maps::<Float, S>(ii, config, octave, maps, grid, scanned..ready, sink, stats);
                scanned = ready;
            }
            Ok(())
        },
    )
}

/// The Packed8 path of the drivers: `fill` fills the octave's `gw x gh` packed words (all rows,
/// all intervals) at the start of `scratch`, then they are scanned here.
#[allow(clippy::too_many_arguments)]
fn fill_and_scan_packed<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    (gw, gh): (usize, usize),
    scratch: &mut [u32],
    sink: &mut S,
    stats: &mut DetectStats,
    fill: impl FnOnce(&mut [u32]) -> Result<(), SurfError>,
) -> Result<(), SurfError> {
    let maps = &mut scratch[..gw * gh];
    fill(maps)?;
    let view = PackedResponses::new_checked(maps, gw, gh)?;
    scan_packed(ii, config, octave, &view, sink, stats);
    Ok(())
}

/// The body of [`detect_with_fill_and_scan`] (`share = false`: every `fill` is told interval
/// 0) and [`detect_with_shared_fill_and_scan`] (`share = true`).
fn detect_octaves<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    sink: &mut S,
    share: bool,
    mut fill: impl FnMut(u32, usize, usize, u32, &mut [u32]) -> Result<(), SurfError>,
    mut scan: impl FnMut(&OctaveMaps<'_>, &mut S, &mut DetectStats) -> Result<(), SurfError>,
) -> Result<DetectStats, SurfError> {
    let expected = scratch_len(config, ii.width(), ii.height())?;
    let packed = config.precision == Precision::Packed8;
    drive(
        ii,
        config,
        scratch,
        expected,
        sink,
        |octave, gw, gh, scratch, sink, stats| {
            if packed {
                let grid = (gw, gh);
                let fill_all = |maps: &mut [u32]| fill(octave, gw, gh, 0, maps);
                fill_and_scan_packed(ii, config, octave, grid, scratch, sink, stats, fill_all)?;
            } else {
                // `drive` visits the octaves in order, so the scratch holds octave - 1's maps.
                let shared = share
                    .then(|| shared_source_width(ii, config, octave, scratch.len(), gw, gh))
                    .flatten();
                let from = match shared {
                    Some(previous_gw) => {
                        move_shared_rows(scratch, previous_gw, gw, 0..gh);
                        2
                    }
                    None => 0,
                };
                let maps = &mut scratch[..gw * gh * INTERVALS as usize];
                fill(octave, gw, gh, from, maps)?;
                let maps = OctaveMaps {
                    ii,
                    config,
                    octave,
                    maps,
                    grid: (gw, gh),
                };
                scan(&maps, sink, stats)?;
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

/// One octave's filled `f32` maps, for the `scan` of [`detect_with_fill_and_scan`]; shared by
/// threads that scan bands of its rows.
#[derive(Debug, Clone, Copy)]
pub struct OctaveMaps<'a> {
    ii: &'a IntegralImage<'a>,
    config: &'a SurfConfig,
    octave: u32,
    maps: &'a [u32],
    grid: (usize, usize),
}

impl OctaveMaps<'_> {
    /// Rows of the octave's sample grid.
    pub fn grid_height(&self) -> usize {
        self.grid.1
    }

    /// Scans grid rows `rows` of `interval` (1 or 2; rows outside its border are skipped) into
    /// `sink`, counting into `stats`: the keypoints [`detect`] finds there, in its order.
    pub fn scan_rows<T: KeypointSink>(
        &self,
        interval: u32,
        rows: core::ops::Range<usize>,
        sink: &mut T,
        stats: &mut DetectStats,
    ) -> Result<(), SurfError> {
        if !(1..=2).contains(&interval) {
            return Err(SurfError::Interval(interval));
        }
        let (gw, gh) = self.grid;
        scan_interval_rows::<Float, T>(
            self.ii,
            self.config,
            self.octave,
            self.maps,
            gw,
            gh,
            interval as usize,
            rows,
            sink,
            stats,
        );
        Ok(())
    }
}

/// Fills grid rows `rows` of `octave`'s response maps into `out`, as [`detect`] does: `out`
/// holds those rows only (`rows.len() * grid_w` samples of 4 `f32`-bit words in
/// [`Precision::F32`], one packed word in [`Precision::Packed8`], sample `(sx, sy)` at
/// `(sy - rows.start) * grid_w + sx`). Rows beyond the grid are ignored.
pub fn fill_octave_rows(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    out: &mut [u32],
) -> Result<(), SurfError> {
    fill_rows::<PortableBoxSums>(ii, config, octave, rows, out, None, 0)
}

/// [`fill_octave_rows`] faster on a machine with memory to spare: `columns` (at least
/// [`column_scratch_len`](super::column_scratch_len)`(width)` words, 68 bytes per image
/// column) holds the vertical differences of the integral table that a grid row's filters
/// share, so an interior sample costs half the table reads, and a grid row's interior samples
/// are computed as vectors (ARCHITECTURE.md, "The CPU fast path"). The responses are the same
/// bits; a shorter `columns` takes slower paths to them.
pub fn fill_octave_rows_with_columns(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    out: &mut [u32],
    columns: &mut [u32],
) -> Result<(), SurfError> {
    fill_octave_rows_with_columns_from(ii, config, octave, rows, out, columns, 0)
}

/// [`fill_octave_rows_with_columns`] of intervals `from_interval..4` only, for the `fill` of
/// [`detect_with_shared_fill_and_scan`]: in `F32` precision, intervals below `from_interval`
/// (0 or 2) are left as `out` holds them; `Packed8` fills every interval.
pub fn fill_octave_rows_with_columns_from(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    out: &mut [u32],
    columns: &mut [u32],
    from_interval: u32,
) -> Result<(), SurfError> {
    fill_octave_rows_with_columns_inlined::<PortableBoxSums>(
        ii,
        config,
        octave,
        rows,
        out,
        columns,
        from_interval,
    )
}

/// The body of [`fill_octave_rows_with_columns_from`], inlined where it is called: the std
/// backend compiles it with wider vector instructions where the CPU has them (as
/// `surfcl_core::describe::describe_all_inlined`).
#[inline(always)]
pub fn fill_octave_rows_with_columns_inlined<B: BoxSums>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    out: &mut [u32],
    columns: &mut [u32],
    from_interval: u32,
) -> Result<(), SurfError> {
    if from_interval != 0 && from_interval != 2 {
        return Err(SurfError::FirstInterval(from_interval));
    }
    fill_rows::<B>(
        ii,
        config,
        octave,
        rows,
        out,
        Some(columns),
        from_interval as usize,
    )
}

#[inline(always)]
fn fill_rows<B: BoxSums>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    out: &mut [u32],
    columns: Option<&mut [u32]>,
    from: usize,
) -> Result<(), SurfError> {
    config.validate()?;
    check_octave(config, octave)?;
    let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(config, octave));
    let visited = rows.end.min(gh).saturating_sub(rows.start.min(gh));
    let words = if config.precision == Precision::Packed8 {
        1
    } else {
        INTERVALS as usize
    };
    let expected = visited * gw * words;
    if out.len() < expected {
        return Err(SurfError::ScratchLength {
            expected,
            actual: out.len(),
        });
    }
    match config.precision {
        Precision::F32 => fill_f32_bits::<B>(ii, config, octave, rows, columns, out, from),
        Precision::Packed8 => {
            let table = PackedCodeTable::new(config.threshold);
            fill_packed(ii, config, octave, &table, rows, columns, out);
        }
    }
    Ok(())
}

/// The detection driver every arithmetic and precision shares: checks that `scratch` holds
/// `expected` words, clears the sink, calls `scan(octave, grid_w, grid_h, scratch, sink, stats)`
/// for each octave while its interior is not empty, then sorts the sink strongest first.
pub(crate) fn drive<S: KeypointSink>(
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

/// Records one decision.
pub(crate) fn record<S: KeypointSink>(r: Refinement, sink: &mut S, stats: &mut DetectStats) {
    match r {
        Refinement::Keypoint(k) => {
            stats.maxima += 1;
            stats.offered += 1;
            sink.offer(k);
        }
        Refinement::Unstable => {
            stats.maxima += 1;
            stats.discarded += 1;
        }
        Refinement::NotInterior | Refinement::BelowThreshold | Refinement::NotMaximum => {}
    }
}

/// Screening over one octave's packed words, then the exact decision on each candidate.
fn scan_packed<S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    view: &PackedResponses,
    sink: &mut S,
    stats: &mut DetectStats,
) {
    let (gw, gh) = (view.grid_w(), view.grid_h());
    for interval in 1..=2usize {
        let border = nms_border(config, octave, interval as u32) as usize;
        for sy in border + 1..gh.saturating_sub(border) {
            for sx in border + 1..gw.saturating_sub(border) {
                let code = view.code(sx, sy, interval);
                if code == 0 {
                    continue;
                }
                let mut candidate = true;
                'outer: for y in sy - 1..=sy + 1 {
                    for x in sx - 1..=sx + 1 {
                        let word = view.word(x, y);
                        for i in interval - 1..=interval + 1 {
                            if ((word >> (8 * i)) & 0x7f) as u8 > code {
                                candidate = false;
                                break 'outer;
                            }
                        }
                    }
                }
                if !candidate {
                    continue;
                }
                stats.candidates += 1;
                let site = SampleSite {
                    octave: octave as u8,
                    interval: interval as u8,
                    sx: sx as u32,
                    sy: sy as u32,
                };
                record(refine_exact(ii, config, site), sink, stats);
            }
        }
    }
}
