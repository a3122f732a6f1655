//! The arithmetic of a detection, chosen by a type parameter of [`detect_with`]: [`Float`] (the
//! `f32` reference shared with the OpenCL kernels) or [`FixedPoint`] (integers only, for parts
//! without an FPU). Both run the same driver: one octave's four response maps at a time, the
//! 3x3x3 non-maximum suppression over intervals 1 and 2, the decision on each candidate, the
//! strongest-N sink. Only the responses and the decision differ.

use super::detect::{
    DetectStats, Refinement, SampleSite, drive, nms_border, record, refine_candidate,
};
use super::fixed::{FixedCube, fill_fixed, fixed_threshold, laplacian_at, refine_fixed};
use super::response::{PortableBoxSums, fill_f32_bits};
use super::{INTERVALS, SurfConfig, SurfError};
use crate::integral::IntegralImage;
use crate::keypoint::KeypointSink;
use crate::math;

mod sealed {
    pub trait Sealed {}
}

/// The arithmetic of a detection: how one octave's response maps are computed and stored (four
/// `u32` words per sample, grid-major), and how a candidate's neighbourhood is decided. Sealed:
/// implemented by [`Float`] and [`FixedPoint`].
pub trait Arithmetic: sealed::Sealed {
    /// A response as stored in a map word.
    type Value: Copy + PartialOrd + Default;
    /// Fills `maps` (4 words per sample of `octave`'s grid).
    fn fill(ii: &IntegralImage, config: &SurfConfig, octave: u32, maps: &mut [u32]);
    /// The response stored in `word`.
    fn value(word: u32) -> Self::Value;
    /// The threshold in this arithmetic.
    fn threshold(config: &SurfConfig) -> Self::Value;
    /// `v >= threshold` (false for NaN).
    fn reaches(v: Self::Value, threshold: Self::Value) -> bool;
    /// The full decision on a strict local maximum's neighbourhood.
    fn decide(
        ii: &IntegralImage,
        config: &SurfConfig,
        threshold: Self::Value,
        site: SampleSite,
        cube: &[[[Self::Value; 3]; 3]; 3],
    ) -> Refinement;
}

/// `f32` responses, bit-exact with the OpenCL kernels (`docs/ARCHITECTURE.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Float;

/// Fixed-point responses (Q29) and an integer Newton step: no floating-point operation at all
/// (`crate::fixed`). Keypoints within a fraction of a pixel of [`Float`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixedPoint;

impl sealed::Sealed for Float {}
impl sealed::Sealed for FixedPoint {}

impl Arithmetic for Float {
    type Value = f32;
    fn fill(ii: &IntegralImage, config: &SurfConfig, octave: u32, maps: &mut [u32]) {
        fill_f32_bits::<PortableBoxSums>(ii, config, octave, 0..usize::MAX, None, maps, 0);
    }
    #[inline(always)]
    fn value(word: u32) -> f32 {
        f32::from_bits(word)
    }
    fn threshold(config: &SurfConfig) -> f32 {
        config.threshold
    }
    #[inline(always)]
    fn reaches(v: f32, threshold: f32) -> bool {
        matches!(
            v.partial_cmp(&threshold),
            Some(core::cmp::Ordering::Greater | core::cmp::Ordering::Equal)
        )
    }
    fn decide(
        ii: &IntegralImage,
        config: &SurfConfig,
        _threshold: f32,
        site: SampleSite,
        cube: &[[[f32; 3]; 3]; 3],
    ) -> Refinement {
        refine_candidate(config, site, cube, laplacian_at(ii, config, site))
    }
}

impl Arithmetic for FixedPoint {
    type Value = i32;
    fn fill(ii: &IntegralImage, config: &SurfConfig, octave: u32, maps: &mut [u32]) {
        fill_fixed(ii, config, octave, maps);
    }
    #[inline(always)]
    fn value(word: u32) -> i32 {
        word as i32
    }
    fn threshold(config: &SurfConfig) -> i32 {
        fixed_threshold(config)
    }
    #[inline(always)]
    fn reaches(v: i32, threshold: i32) -> bool {
        v >= threshold
    }
    fn decide(
        ii: &IntegralImage,
        config: &SurfConfig,
        threshold: i32,
        site: SampleSite,
        cube: &FixedCube,
    ) -> Refinement {
        refine_fixed(
            config,
            threshold,
            site,
            cube,
            laplacian_at(ii, config, site),
        )
    }
}

/// The number of `u32` scratch words [`detect_with`] needs: 4 per sample of octave 0 (the
/// packed precision setting does not apply here).
pub fn scratch_len_with(
    config: &SurfConfig,
    width: usize,
    height: usize,
) -> Result<usize, SurfError> {
    let f32_config = SurfConfig {
        precision: super::Precision::F32,
        ..*config
    };
    super::scratch_len(&f32_config, width, height)
}

/// Detects SURF keypoints of `ii` into `sink` with arithmetic `A`: [`detect_with::<Float>`] is
/// [`super::detect`] with `f32` maps, [`detect_with::<FixedPoint>`] the integer-only path.
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
            scan_maps::<A, S>(ii, config, octave, maps, (gw, gh), 0..gh, sink, stats);
            Ok(())
        },
    )
}

/// NMS over grid rows `rows` of one octave's maps (4 words per sample, grid-major, a `gw x gh`
/// grid; rows outside an interval's border are skipped), then the decision on every strict
/// maximum at or above the threshold: intervals 1 then 2, each over those rows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_maps<A: Arithmetic, S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    maps: &[u32],
    (gw, gh): (usize, usize),
    rows: core::ops::Range<usize>,
    sink: &mut S,
    stats: &mut DetectStats,
) {
    for interval in 1..=2 {
        scan_interval_rows::<A, S>(
            ii,
            config,
            octave,
            maps,
            gw,
            gh,
            interval,
            rows.clone(),
            sink,
            stats,
        );
    }
}

/// [`scan_maps`] of one interval (1 or 2), over the grid rows of `rows` that are inside its
/// border, in row order: [`scan_maps`] is intervals 1 and 2 over `0..gh`, so scanning bands of
/// rows separately and offering each band's keypoints in band order offers the same keypoints
/// in the same order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_interval_rows<A: Arithmetic, S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    maps: &[u32],
    gw: usize,
    gh: usize,
    interval: usize,
    rows: core::ops::Range<usize>,
    sink: &mut S,
    stats: &mut DetectStats,
) {
    let at = |sx: usize, sy: usize, i: usize| A::value(maps[(sy * gw + sx) * 4 + i]);
    let threshold = A::threshold(config);
    let border = nms_border(config, octave, interval as u32) as usize;
    let columns = border + 1..gw.saturating_sub(border);
    let interior = (border + 1).max(rows.start)..gh.saturating_sub(border).min(rows.end);
    for sy in interior {
        let samples = &maps[sy * gw * 4..(sy + 1) * gw * 4];
        let lane = |sx: usize| A::value(samples[sx * 4 + interval]);
        let (above_row, below_row) = (
            &maps[(sy - 1) * gw * 4..sy * gw * 4],
            &maps[(sy + 1) * gw * 4..(sy + 2) * gw * 4],
        );
        let up = |sx: usize| A::value(above_row[sx * 4 + interval]);
        let down = |sx: usize| A::value(below_row[sx * 4 + interval]);
        // The full test's rejection, `n >= v` (false for NaN), kept in that form.
        let rejects = |n: A::Value, v: A::Value| n >= v;
        // Most samples are below the threshold or below a neighbour in their row or column,
        // and which ones is unpredictable: those tests are made for 64 samples at a time
        // without branches, into a mask whose set bits are then visited. The four
        // neighbours (left, right, above, below in the same interval) are four of the 26 of
        // the full test below, tested in the same form (`n >= v` rejects, so a NaN neighbour
        // does not), so the maxima are the same.
        for first in columns.clone().step_by(64) {
            let end = (first + 64).min(columns.end);
            // One byte per sample first (a vector compare), then packed into bits: shifting
            // each test's bit into a `u64` in the loop kept it from vectorising.
            let mut keeps = [0u8; 64];
            let mut reached = 0usize;
            for (keep_byte, sx) in keeps.iter_mut().zip(first..end) {
                let v = lane(sx);
                let reaches = A::reaches(v, threshold);
                let keep = reaches
                    & !rejects(lane(sx - 1), v)
                    & !rejects(lane(sx + 1), v)
                    & !rejects(up(sx), v)
                    & !rejects(down(sx), v);
                reached += usize::from(reaches);
                *keep_byte = u8::from(keep);
            }
            // `candidates` counts every sample at or above the threshold, as before.
            stats.candidates += reached;
            let mut mask = pack_bits(&keeps);
            while mask != 0 {
                let sx = first + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let v = at(sx, sy, interval);
                if strict_maximum::<A>(maps, gw, sx, sy, interval, v) {
                    let mut cube = [[[A::Value::default(); 3]; 3]; 3];
                    for (ds, plane) in cube.iter_mut().enumerate() {
                        for (dy, row) in plane.iter_mut().enumerate() {
                            for (dx, value) in row.iter_mut().enumerate() {
                                *value = at(sx + dx - 1, sy + dy - 1, interval + ds - 1);
                            }
                        }
                    }
                    let site = SampleSite {
                        octave: octave as u8,
                        interval: interval as u8,
                        sx: sx as u32,
                        sy: sy as u32,
                    };
                    record(A::decide(ii, config, threshold, site, &cube), sink, stats);
                }
            }
        }
    }
}

/// Bit `i` of the result is `bytes[i]`, for bytes that are 0 or 1: eight bytes at a time, a
/// multiplication gathers them into the top byte (`0x0102040810204080` puts byte `i` at bit
/// `56 + i`; the partial sums of the lower bytes stay below 256, so nothing carries into it).
#[inline(always)]
fn pack_bits(bytes: &[u8; 64]) -> u64 {
    let (chunks, _) = bytes.as_chunks::<8>();
    let mut bits = 0u64;
    for (k, chunk) in chunks.iter().enumerate() {
        let spread = u64::from_le_bytes(*chunk);
        bits |= (spread.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    bits
}

/// Whether the response `v` at `(sx, sy, interval)` is above all 26 neighbours of its 3x3x3
/// cube: no neighbour `n` with `n >= v` (so a NaN neighbour does not reject, and a NaN `v` is
/// rejected by nothing here; the threshold test before has refused it).
///
/// Where there are SIMD units the 26 tests are all made, without branches: which test rejects
/// a candidate is unpredictable, and on a textured 1080p frame the mispredicted early exits
/// were most of the scan. A microcontroller, which predicts nothing, keeps the early exit.
#[inline(always)]
fn strict_maximum<A: Arithmetic>(
    maps: &[u32],
    gw: usize,
    sx: usize,
    sy: usize,
    interval: usize,
    v: A::Value,
) -> bool {
    // The words of row `sy + dy - 1`, columns `sx - 1 ..= sx + 1`, from interval `interval - 1`:
    // column `dx`, interval `interval + ds - 1` is word `4 dx + ds`.
    let row = |dy: usize| {
        let first = ((sy + dy - 1) * gw + sx - 1) * 4 + interval - 1;
        &maps[first..first + 11]
    };
    if math::SIMD_UNITS {
        let mut rejected = false;
        for dy in 0..3 {
            let words = row(dy);
            for dx in 0..3 {
                for ds in 0..3 {
                    if (ds, dy, dx) != (1, 1, 1) {
                        rejected |= A::value(words[4 * dx + ds]) >= v;
                    }
                }
            }
        }
        !rejected
    } else {
        for ds in 0..3 {
            for dy in 0..3 {
                let words = row(dy);
                for dx in 0..3 {
                    if (ds, dy, dx) != (1, 1, 1) && A::value(words[4 * dx + ds]) >= v {
                        return false;
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::pack_bits;

    #[test]
    fn pack_bits_is_the_bitwise_definition() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for case in 0..2000 {
            // Random bytes of 0 and 1, plus all-zero and all-one rows.
            let mut bytes = [0u8; 64];
            for b in bytes.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = match case {
                    0 => 0,
                    1 => 1,
                    _ => (state >> 60) as u8 & 1,
                };
            }
            let expected = bytes
                .iter()
                .enumerate()
                .fold(0u64, |m, (i, &b)| m | (u64::from(b) << i));
            assert_eq!(pack_bits(&bytes), expected, "{bytes:?}");
        }
    }
}
