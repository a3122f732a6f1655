//! The non-maximum suppression scans: over an octave's response maps of either arithmetic
//! (four words per sample, whole or a band of rows), and over the packed 8-bit maps. Each
//! strict maximum at or above the threshold goes to the decision of [`super::decide`] and is
//! counted into [`DetectStats`].

use core::ops::Range;

use super::arith::Arithmetic;
use super::config::{INTERVALS, SurfConfig};
use super::decide::{DetectStats, SampleSite, nms_border, record, refine_exact, strict_maximum};
use super::packed::PackedResponses;
use crate::integral::IntegralImage;
use crate::keypoint::KeypointSink;

/// Consecutive grid rows of one octave's maps: `maps` holds rows `first_row..` (as many as it
/// has whole rows of), four words per sample, of a `grid.0 x grid.1` grid.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MapRows<'a> {
    pub maps: &'a [u32],
    pub first_row: usize,
    pub grid: (usize, usize),
}

impl MapRows<'_> {
    /// Words of one grid row.
    fn row_words(&self) -> usize {
        self.grid.0 * INTERVALS as usize
    }

    /// The rows that can be scanned: those whose rows above and below are in the view.
    fn scannable(&self) -> Range<usize> {
        let rows = self.maps.len().checked_div(self.row_words()).unwrap_or(0);
        self.first_row + 1..(self.first_row + rows).saturating_sub(1)
    }

    /// The words of grid row `sy`, which is in the view.
    #[inline(always)]
    fn row(&self, sy: usize) -> &[u32] {
        let words = self.row_words();
        let start = (sy - self.first_row) * words;
        &self.maps[start..start + words]
    }
}

/// NMS of one interval (1 or 2) over the grid rows of `rows` that are inside its border and
/// scannable in `view`, in row order, then the decision on every strict maximum at or above the
/// threshold. Rows scanned in bands, each band's keypoints offered in any order, give the same
/// kept keypoints and counts as all rows at once: the sink keeps the strongest under a total
/// order, and the counts are sums.
///
/// Never inlined: a function of its own whatever its callers' sizes, so that its vector loop
/// can be found in the binary (`scripts/cross/insn-check.sh` checks it is NEON code on aarch64).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn scan_interval_rows<A: Arithmetic, S: KeypointSink>(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    view: MapRows<'_>,
    interval: usize,
    rows: Range<usize>,
    sink: &mut S,
    stats: &mut DetectStats,
) {
    let (gw, gh) = view.grid;
    let threshold = A::threshold(config);
    let border = nms_border(config, octave, interval as u32) as usize;
    let columns = border + 1..gw.saturating_sub(border);
    let scannable = view.scannable();
    let first = (border + 1).max(rows.start).max(scannable.start);
    let end = gh.saturating_sub(border).min(rows.end).min(scannable.end);
    for sy in first..end {
        let (above_row, samples, below_row) = (view.row(sy - 1), view.row(sy), view.row(sy + 1));
        let lane = |sx: usize| A::value(samples[sx * 4 + interval]);
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
            // `candidates` counts every sample at or above the threshold.
            stats.candidates += reached;
            let mut mask = pack_bits(&keeps);
            while mask != 0 {
                let sx = first + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let cube = cube_at::<A>(&[above_row, samples, below_row], sx, interval);
                if strict_maximum(&cube) {
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

/// The 3x3x3 neighbourhood (`cube[ds][dy][dx]`) of column `sx`, `interval` from the three
/// rows around it: row `dy`'s words `4 (sx - 1) + interval - 1 ..` hold column `dx`, interval
/// `interval + ds - 1` at `4 dx + ds`.
#[inline(always)]
fn cube_at<A: Arithmetic>(
    rows: &[&[u32]; 3],
    sx: usize,
    interval: usize,
) -> [[[A::Value; 3]; 3]; 3] {
    let mut cube = [[[A::Value::default(); 3]; 3]; 3];
    for (dy, row) in rows.iter().enumerate() {
        let first = (sx - 1) * 4 + interval - 1;
        let words = &row[first..first + 11];
        for dx in 0..3 {
            for (ds, plane) in cube.iter_mut().enumerate() {
                plane[dy][dx] = A::value(words[4 * dx + ds]);
            }
        }
    }
    cube
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

/// Screening over one octave's packed words, then the exact decision on each candidate.
pub(crate) fn scan_packed<S: KeypointSink>(
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
