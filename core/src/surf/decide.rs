//! The detection decision on one sample, shared by every path: the 3x3x3 neighbourhood of
//! responses ([`ResponseCube`]), the threshold, the strict 26-neighbour maximum
//! ([`strict_maximum`], the one test the scans and the decisions all use) and the Brown-Lowe fit
//! ([`refine_candidate`]); [`refine_exact`] first recomputes that neighbourhood from the integral
//! image (what the packed mode does for each 8-bit candidate, and what a GPU path can call on
//! the candidates it read back). The counts of a detection ([`DetectStats`]) are kept here too.

use super::config::SurfConfig;
use super::geometry::{filter_size, grid_size, sample_step};
use super::response::Filter;
use crate::integral::IntegralImage;
use crate::keypoint::{Keypoint, KeypointSink};
use crate::math;

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

/// Statistics of one [`detect`](super::detect) call.
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
    /// caller that scans bands of rows into sinks of their own
    /// ([`OctaveMaps::scan_rows`](super::OctaveMaps::scan_rows)). `kept`
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
/// neither way, does not disqualify it; a NaN centre is rejected by nothing here, the threshold
/// test before refuses it). Shared by the `f32` and fixed-point decisions and the scans.
///
/// Where there are SIMD units the 26 tests are all made, without branches: which test rejects
/// a candidate is unpredictable, and on a textured frame mispredicted early exits cost more
/// than the tests. A microcontroller, which predicts nothing, keeps the early exit.
#[inline(always)]
pub(crate) fn strict_maximum<T: PartialOrd + Copy>(cube: &[[[T; 3]; 3]; 3]) -> bool {
    let v = cube[1][1][1];
    if math::SIMD_UNITS {
        let mut rejected = false;
        for (ds, plane) in cube.iter().enumerate() {
            for (dy, row) in plane.iter().enumerate() {
                for (dx, &n) in row.iter().enumerate() {
                    if (ds, dy, dx) != (1, 1, 1) {
                        rejected |= n >= v;
                    }
                }
            }
        }
        !rejected
    } else {
        !cube.iter().enumerate().any(|(ds, plane)| {
            plane.iter().enumerate().any(|(dy, row)| {
                row.iter()
                    .enumerate()
                    .any(|(dx, &n)| (ds, dy, dx) != (1, 1, 1) && n >= v)
            })
        })
    }
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

/// The Laplacian sign of filter `interval` of `octave` at sample `(sx, sy)`.
pub(crate) fn laplacian_at(ii: &IntegralImage, config: &SurfConfig, site: SampleSite) -> i8 {
    let step = sample_step(config, u32::from(site.octave)) as i32;
    let filter = Filter::octave(
        u32::from(site.octave),
        u32::from(site.interval),
        ii.width() + 1,
    );
    let (dxx, dyy, _) = filter.terms(ii, site.sy as i32 * step, site.sx as i32 * step);
    if dxx + dyy >= 0 { 1 } else { -1 }
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
