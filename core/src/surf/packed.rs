//! The 8-bit packed response format: log-companded codes with the Laplacian sign, four intervals
//! per `u32` word, and a typed, checked view over such words.
//!
//! Byte layout (sign-magnitude): bit 7 is set when the Laplacian is negative (`Dxx + Dyy < 0`, a
//! bright blob); bits 0..6 hold the code `#{ k in 1..=127 : response >= T[k] }` with
//! `T[k] = threshold * 2^((k - 1) / 8)` (8 codes per doubling, code 0 = below threshold). The code
//! is monotonic in the response, so a strict `f32` maximum always has a code `>=` all its
//! neighbours' codes: screening on codes loses no keypoint.
//!
//! ```
//! use surfcl_core::surf::{PackedCodeTable, PackedResponses, pack_byte};
//! let table = PackedCodeTable::new(0.0004);
//! assert_eq!(table.code(0.0003), 0);
//! assert_eq!(table.code(0.0004), 1);
//! assert_eq!(table.code(0.0008), 9); // one doubling = 8 codes
//! let words = [u32::from(pack_byte(9, -1)) << 8];
//! let view = PackedResponses::new_checked(&words, 1, 1).unwrap();
//! assert_eq!(view.code(0, 0, 1), 9);
//! assert_eq!(view.laplacian(0, 0, 1), -1);
//! ```

use super::config::SurfError;

/// Number of non-zero codes.
pub const CODES: usize = 127;

/// The 127 code thresholds `T[1..=127]` of one detection threshold (`as_slice()[k - 1] = T[k]`).
/// Computed once on the host and uploaded to the device, so both sides compare the same `f32`s.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedCodeTable {
    thresholds: [f32; CODES],
}

/// `2^(j / 8)` for `j` in `0..8`, rounded to `f32` (the literals are the correctly rounded
/// decimal expansions; a test checks them against `f64`).
const EIGHTH_POWERS: [f32; 8] = [
    1.0,
    1.090_507_7,
    1.189_207_1,
    1.296_839_6,
    core::f32::consts::SQRT_2,
    1.542_210_8,
    1.681_792_9,
    1.834_008_1,
];

impl PackedCodeTable {
    /// The table of `threshold`: `T[k] = (threshold * F[j]) * 2^q` with `k - 1 = 8 q + j`
    /// (`j` in `0..8`) and `F[j] = 2^(j / 8)` rounded to `f32`: one rounded `f32` multiply, then
    /// an exact power of two (while `T[k]` stays a normal `f32`), so no `f64` at run time.
    /// Non-decreasing for any finite `threshold >= 0` (`F` increases and `F[7] < 2 F[0]`; validate
    /// the configuration first; a NaN threshold gives a table that codes every response 0).
    pub fn new(threshold: f32) -> Self {
        let mut thresholds = [0f32; CODES];
        let mut power = 1.0f32;
        for (k, t) in thresholds.iter_mut().enumerate() {
            if k > 0 && k % 8 == 0 {
                power *= 2.0;
            }
            *t = (threshold * EIGHTH_POWERS[k % 8]) * power;
        }
        Self { thresholds }
    }

    /// The code of `response`: how many thresholds it reaches (0 for a NaN or below-threshold
    /// response, 127 at most).
    #[inline]
    pub fn code(&self, response: f32) -> u8 {
        // Most samples are below the threshold: one predictable comparison settles them (also
        // NaN). The table is non-decreasing, so "response >= T[k]" holds on a prefix: a binary
        // search counts it. (A linear count gives the same number; kernels may do either.)
        if response.is_nan() || response < self.thresholds[0] {
            return 0;
        }
        self.thresholds.partition_point(|&t| response >= t) as u8
    }

    /// The smallest integer determinant `d` whose response `response(d)` has a code above 0,
    /// `i64::MAX` when there is none, for a `response` that does not decrease as `d` grows
    /// (`d as f32` times a norm `>= 0`, one `f32` multiply): every determinant below it has
    /// code 0, so a fill can skip the response of most samples. Found by bisection, started
    /// around `T[1] / norm` (a few dozen evaluations per filter).
    pub(crate) fn det_cutoff(&self, response: impl Fn(i64) -> f32) -> i64 {
        // `>= T[1]`, false for NaN: the test of `code` for a code above 0.
        let coded = |d: i64| response(d) >= self.thresholds[0];
        if coded(i64::MIN) {
            return i64::MIN;
        }
        if !coded(i64::MAX) {
            return i64::MAX;
        }
        // Invariant: !coded(lo), coded(hi). A bracket around the estimate `T[1] / response(1)`
        // (within a few f32 roundings of the cutoff) when it holds, else the whole range.
        let estimate = self.thresholds[0] / response(1);
        let (mut lo, mut hi) = (i64::MIN, i64::MAX);
        if estimate.is_finite() && estimate.abs() < 4.0e18 {
            let centre = estimate as i64;
            let margin = (centre.unsigned_abs() >> 16) as i64 + 2;
            let (below, above) = (centre.saturating_sub(margin), centre.saturating_add(margin));
            if !coded(below) && coded(above) {
                (lo, hi) = (below, above);
            }
        }
        while hi.abs_diff(lo) > 1 {
            let mid = lo + (hi.abs_diff(lo) / 2) as i64;
            if coded(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// The thresholds, `[T[1], ..., T[127]]`.
    pub fn as_slice(&self) -> &[f32; CODES] {
        &self.thresholds
    }
}

/// One packed byte: `code` in bits 0..6 (higher bits of `code` are ignored), bit 7 set when
/// `laplacian < 0`.
#[inline]
pub fn pack_byte(code: u8, laplacian: i8) -> u8 {
    (code & 0x7f) | if laplacian < 0 { 0x80 } else { 0 }
}

/// The inverse of [`pack_byte`]: `(code, laplacian)` with `laplacian` `-1` or `1`.
#[inline]
pub fn unpack_byte(byte: u8) -> (u8, i8) {
    (byte & 0x7f, if byte & 0x80 != 0 { -1 } else { 1 })
}

/// A typed view over one octave's packed response words (`grid_w * grid_h` words, row-major,
/// byte `i` of each word = interval `i`), after the manner of smoltcp's packet views.
#[derive(Debug, Clone, Copy)]
pub struct PackedResponses<'a> {
    words: &'a [u32],
    grid_w: usize,
    grid_h: usize,
}

impl<'a> PackedResponses<'a> {
    /// Wraps `words` after checking it holds at least `grid_w * grid_h` words (a longer buffer,
    /// such as a scratch sized for octave 0, is fine: the rest is ignored).
    pub fn new_checked(words: &'a [u32], grid_w: usize, grid_h: usize) -> Result<Self, SurfError> {
        let expected = grid_w.checked_mul(grid_h).ok_or(SurfError::ScratchLength {
            expected: usize::MAX,
            actual: words.len(),
        })?;
        if words.len() < expected {
            return Err(SurfError::ScratchLength {
                expected,
                actual: words.len(),
            });
        }
        Ok(Self {
            words: &words[..expected],
            grid_w,
            grid_h,
        })
    }

    /// Grid width in samples.
    pub fn grid_w(&self) -> usize {
        self.grid_w
    }
    /// Grid height in samples.
    pub fn grid_h(&self) -> usize {
        self.grid_h
    }
    /// The words, exactly `grid_w * grid_h`.
    pub fn words(&self) -> &'a [u32] {
        self.words
    }

    /// The word of sample `(sx, sy)`; 0 (all codes 0) outside the grid.
    #[inline]
    pub fn word(&self, sx: usize, sy: usize) -> u32 {
        if sx >= self.grid_w || sy >= self.grid_h {
            return 0;
        }
        self.words.get(sy * self.grid_w + sx).copied().unwrap_or(0)
    }

    /// The byte of interval `interval` (0..4) at sample `(sx, sy)`; 0 outside the grid or for an
    /// interval `>= 4`.
    #[inline]
    pub fn byte(&self, sx: usize, sy: usize, interval: usize) -> u8 {
        if interval >= 4 {
            return 0;
        }
        (self.word(sx, sy) >> (8 * interval)) as u8
    }

    /// The code (0..=127) of interval `interval` at `(sx, sy)`.
    #[inline]
    pub fn code(&self, sx: usize, sy: usize, interval: usize) -> u8 {
        self.byte(sx, sy, interval) & 0x7f
    }

    /// The Laplacian sign (`-1` or `1`) of interval `interval` at `(sx, sy)`.
    #[inline]
    pub fn laplacian(&self, sx: usize, sy: usize, interval: usize) -> i8 {
        unpack_byte(self.byte(sx, sy, interval)).1
    }
}
