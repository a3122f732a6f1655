//! The Harris corner detector (Harris & Stephens 1988; the GPU pipeline of Loundagin 2015), in
//! exact integer stages up to one floating-point step, so that the OpenCL kernels reproduce it.
//!
//! # Definition
//!
//! `I` is the 8-bit image, `W x H`. Every stage reads its input with **replicated borders**:
//! `cx(x) = clamp(x, 0, W - 1)`, `cy(y) = clamp(y, 0, H - 1)`. `w = [1, 2, 1]`.
//!
//! 1. **Gaussian**, unnormalised (x16): `G(y, x) = sum_{i,j in -1..=1} w[i] w[j] I(cy(y+i), cx(x+j))`,
//!    in `[0, 4080]`.
//! 2. **Sobel** of `G`, unnormalised (x8 a unit-slope derivative):
//!    `Gx(y, x) = sum_i w[i] (G(cy(y+i), cx(x+1)) - G(cy(y+i), cx(x-1)))`,
//!    `Gy(y, x) = sum_j w[j] (G(cy(y+1), cx(x+j)) - G(cy(y-1), cx(x+j)))`.
//!    `|Gx|, |Gy| <= 255 * 48 = 12240` (48 is the positive mass of the combined 5x5 kernel
//!    `[1 4 6 4 1]^T [-1 -2 0 2 1]`; clamping only merges weights of equal sign).
//! 3. **Products** `Pxx = Gx^2`, `Pyy = Gy^2`, `Pxy = Gx Gy`, `|P| <= 12240^2 = 149_817_600` (`i32`).
//! 4. **Window sums** over the `n x n` window (`n` = [`HarrisConfig::window`], odd, 3..=13,
//!    `r = n / 2`): `S(y, x) = sum_{i,j in -r..=r} P(cy(y+i), cx(x+j))`, exact integers
//!    (`|S| <= 169 * 149_817_600 < 2^35`). Computed as column sums in `i32` (at most
//!    `13 * 149_817_600 < 2^31`), then row sums: in `i32` for `n = 3` (`9 * 149_817_600 < 2^31`),
//!    else in `f64` (exact below `2^53`). Any integer type holding 36 bits (`long` in OpenCL) is
//!    exact too; only the value matters, since the next stage rounds it once.
//! 5. **Response**, in `f32`, each operation rounded once (no fused multiply-add; OpenCL:
//!    `#pragma OPENCL FP_CONTRACT OFF`): `NORM = 1 / 32640^2` computed in `f64` and rounded to
//!    `f32` (32640 = 16 * 8 * 255 undoes the Gaussian, Sobel and 8-bit scalings, so the
//!    derivatives are those of intensities in `[0, 1]`, per pixel);
//!    `a = f32(Sxx) * NORM`, `b = f32(Sxy) * NORM`, `c = f32(Syy) * NORM` (integer to `f32`
//!    conversion rounds to nearest even); `det = a * c - b * b`; `tr = a + c`;
//!    `R = det - k * (tr * tr)`.
//! 6. **Threshold**: [`HarrisThreshold::Absolute`]`(t)` uses `t`; [`HarrisThreshold::Relative`]`(f)`
//!    uses `t = f * max R` (one `f32` multiply; max over the whole map). A pixel is a candidate
//!    when `R > 0` and `R >= t`.
//! 7. **5x5 non-maximum suppression**: a candidate `p` is kept when, for every other pixel `q` of
//!    its 5x5 neighbourhood inside the image, `R(p) > R(q)` if `q` comes before `p` in raster
//!    order and `R(p) >= R(q)` if after (so on a plateau the first pixel in raster order wins).
//! 8. **Sub-pixel position** (when [`HarrisConfig::subpixel`]): per axis, with `l, c, r` the
//!    responses left, at and right of the pixel (up, at, down for `y`), `den = (l + r) - 2 * c`;
//!    the offset is `(l - r) / (2 * den)` when `den < 0` and both neighbours are inside the image,
//!    else 0, clamped to `[-0.5, 0.5]` (`f32`; OpenCL needs correctly rounded division for bit
//!    equality, else it is within 3 ulp). `x = px + offset_x`, `y = py + offset_y`.
//! 9. **Strongest N**: every kept pixel is offered to the [`KeypointSink`] as a [`Keypoint`] with
//!    `response = R`, `laplacian = 0` (compatible with every sign in matching), `orientation = 0`,
//!    `scale = descriptor_scale` (Harris points get an upright SURF-64 descriptor at this fixed
//!    scale), `octave = interval = 0`, `sample_x = px`, `sample_y = py`; the sink's total order
//!    makes the kept set independent of offer order.
//!
//! Rows are streamed through small ring buffers (one pass over the image, cache-friendly); only the
//! response map is image-sized.
//!
//! ```
//! use surfcl_core::{GrayImage, KeypointSet, KeypointSink, harris::{self, HarrisConfig}};
//! // A white square on black: its four corners.
//! let (w, h) = (32, 32);
//! let mut pixels = [0u8; 32 * 32];
//! for y in 8..24 {
//!     for x in 8..24 {
//!         pixels[y * w + x] = 255;
//!     }
//! }
//! let image = GrayImage::new(&pixels, w, h).unwrap();
//! let config = HarrisConfig::default();
//! let mut scratch = vec![0i32; harris::scratch_len(w, h).unwrap()];
//! let mut points = KeypointSet::<16>::new();
//! let stats = harris::detect(&image, &config, &mut scratch, &mut points).unwrap();
//! assert_eq!(points.len(), 4);
//! assert_eq!(stats.kept, 4);
//! ```

use core::fmt;

use crate::image::{GrayImage, ImageError, check_dimensions};
use crate::keypoint::{Keypoint, KeypointSink};

/// Largest window side: keeps the column sums of products inside `i32` (module docs, stage 4).
pub const MAX_WINDOW: usize = 13;

/// How the response threshold is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HarrisThreshold {
    /// A fixed threshold on `R` (finite, `>= 0`), in the units of the module docs.
    Absolute(f32),
    /// A fraction in `[0, 1]` of the image's largest response.
    Relative(f32),
}

/// Harris parameters, shared by the CPU and OpenCL paths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HarrisConfig {
    /// Harris `k`, in `[0, 0.25)` (for `k >= 0.25`, `R <= 0` everywhere). Default 0.04.
    pub k: f32,
    /// Side of the summation window, odd, 3..=[`MAX_WINDOW`]. Default 3.
    pub window: usize,
    /// Threshold. Default `Relative(0.01)`.
    pub threshold: HarrisThreshold,
    /// Scale written into the keypoints (the SURF descriptor scale), finite and `> 0`. Default 2.
    pub descriptor_scale: f32,
    /// Parabola-fit sub-pixel positions (module docs, stage 8). Default true.
    pub subpixel: bool,
}

impl Default for HarrisConfig {
    fn default() -> Self {
        Self {
            k: 0.04,
            window: 3,
            threshold: HarrisThreshold::Relative(0.01),
            descriptor_scale: 2.0,
            subpixel: true,
        }
    }
}

impl HarrisConfig {
    /// Checks the parameters (every function of this module calls it too).
    pub fn validate(&self) -> Result<(), HarrisError> {
        if !(self.k >= 0.0 && self.k < 0.25) {
            return Err(HarrisError::InvalidK);
        }
        if self.window < 3 || self.window > MAX_WINDOW || self.window.is_multiple_of(2) {
            return Err(HarrisError::InvalidWindow {
                window: self.window,
            });
        }
        let threshold_ok = match self.threshold {
            HarrisThreshold::Absolute(t) => t.is_finite() && t >= 0.0,
            HarrisThreshold::Relative(f) => (0.0..=1.0).contains(&f),
        };
        if !threshold_ok {
            return Err(HarrisError::InvalidThreshold);
        }
        if !(self.descriptor_scale.is_finite() && self.descriptor_scale > 0.0) {
            return Err(HarrisError::InvalidScale);
        }
        Ok(())
    }
}

/// Why Harris detection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HarrisError {
    /// `k` is not in `[0, 0.25)` (or is NaN).
    InvalidK,
    /// The window is even, below 3 or above [`MAX_WINDOW`].
    InvalidWindow {
        /// The window given.
        window: usize,
    },
    /// The threshold is negative, NaN, infinite, or a fraction above 1.
    InvalidThreshold,
    /// The descriptor scale is not finite and positive.
    InvalidScale,
    /// The image size is not acceptable.
    Image(ImageError),
    /// The scratch buffer is shorter than [`scratch_len`].
    ScratchLength {
        /// Elements required.
        expected: usize,
        /// Elements given.
        actual: usize,
    },
    /// The response map does not have `width * height` elements.
    OutputLength {
        /// Elements required.
        expected: usize,
        /// Elements given.
        actual: usize,
    },
}

impl fmt::Display for HarrisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarrisError::InvalidK => write!(f, "Harris k must be in [0, 0.25)"),
            HarrisError::InvalidWindow { window } => write!(
                f,
                "Harris window {window} must be odd and in 3..={MAX_WINDOW}"
            ),
            HarrisError::InvalidThreshold => write!(
                f,
                "Harris threshold must be finite and >= 0 (relative: in [0, 1])"
            ),
            HarrisError::InvalidScale => write!(f, "descriptor scale must be finite and > 0"),
            HarrisError::Image(e) => write!(f, "{e}"),
            HarrisError::ScratchLength { expected, actual } => {
                write!(f, "scratch has {actual} elements, {expected} required")
            }
            HarrisError::OutputLength { expected, actual } => {
                write!(f, "response map has {actual} elements, {expected} required")
            }
        }
    }
}

impl core::error::Error for HarrisError {}

impl From<ImageError> for HarrisError {
    fn from(e: ImageError) -> Self {
        HarrisError::Image(e)
    }
}

/// What one detection found.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HarrisStats {
    /// Largest response of the image.
    pub max_response: f32,
    /// Threshold applied.
    pub threshold: f32,
    /// Pixels that survived threshold and non-maximum suppression (all offered to the sink).
    pub candidates: usize,
    /// Points the sink holds afterwards.
    pub kept: usize,
    /// Points the sink dropped (its capacity was exceeded).
    pub dropped: usize,
}

/// Ring and temporary rows (in units of the image width): Gaussian rows of the horizontal pass
/// (3) and of `G` (3), two temporaries, products (3 channels x `MAX_WINDOW` rows), column sums (3,
/// each padded by `MAX_WINDOW` for the replicated border).
const ROWS: usize = 3 + 3 + 2 + 3 * MAX_WINDOW + 3;

/// Scratch elements in front of the response map.
const fn ring_len(width: usize) -> usize {
    ROWS * width + 3 * MAX_WINDOW
}

/// Pixels per block of the response stage (stack arrays of this many `f32`).
const BLOCK: usize = 64;

/// Row sums of `n` consecutive padded column sums, converted to `f32` and scaled:
/// `out[i] = f32(sum_{j < n} padded[i + j]) * NORM` for `i < out.len()`.
///
/// Exact before the one rounding to `f32`: for `n = 3` the sums fit `i32`
/// (`9 * 149_817_600 < 2^31`) and convert directly; above, they are summed in `f64`, exact for
/// integers below `2^53`, and `f64 -> f32` rounds the exact value once, as `i64 -> f32` would.
#[inline]
fn row_sums(padded: &[i32], n: usize, out: &mut [f32]) {
    let len = out.len();
    if n == 3 {
        for ((o, w), _) in out.iter_mut().zip(padded.windows(3)).zip(0..len) {
            *o = ((w[0] + w[1] + w[2]) as f32) * NORM;
        }
    } else {
        let mut sum = [0.0f64; BLOCK];
        let sum = &mut sum[..len];
        for j in 0..n {
            for (s, &v) in sum.iter_mut().zip(&padded[j..j + len]) {
                *s += f64::from(v);
            }
        }
        for (o, &s) in out.iter_mut().zip(sum.iter()) {
            *o = (s as f32) * NORM;
        }
    }
}

/// Number of `i32` scratch elements [`detect`] needs (independent of the configuration; enough
/// for [`response_map`] too): about 50 rows of ring buffers plus the `width * height` response map.
pub fn scratch_len(width: usize, height: usize) -> Result<usize, HarrisError> {
    let pixels = check_dimensions(width, height)?;
    // Cannot overflow: pixels <= MAX_PIXELS and width <= MAX_DIMENSION.
    Ok(ring_len(width) + pixels)
}

/// `NORM = 1 / 32640^2` (module docs, stage 5), rounded once to `f32`.
pub const NORM: f32 = (1.0f64 / (32640.0f64 * 32640.0f64)) as f32;

/// `dst[x] = src[cx(x-1)] + 2 src[x] + src[cx(x+1)]`.
#[inline]
fn smooth_row<T: Copy + Into<i32>>(src: &[T], dst: &mut [i32]) {
    let n = src.len();
    if n == 1 {
        dst[0] = 4 * src[0].into();
        return;
    }
    dst[0] = 3 * src[0].into() + src[1].into();
    for (d, s) in dst[1..n - 1].iter_mut().zip(src.windows(3)) {
        *d = s[0].into() + 2 * s[1].into() + s[2].into();
    }
    dst[n - 1] = src[n - 2].into() + 3 * src[n - 1].into();
}

/// The streaming state: ring rows carved out of the scratch.
struct Rings<'s, 'i> {
    image: &'i [u8],
    width: usize,
    height: usize,
    window: usize,
    h: &'s mut [i32],
    g: &'s mut [i32],
    vs: &'s mut [i32],
    vd: &'s mut [i32],
    p: &'s mut [i32],
    v: &'s mut [i32],
    next_h: usize,
    next_g: usize,
    next_p: usize,
}

impl Rings<'_, '_> {
    fn row(&self, y: isize) -> usize {
        y.clamp(0, self.height as isize - 1) as usize
    }

    /// Horizontal [1 2 1] of image row `next_h` into ring slot `next_h % 3`.
    fn push_h(&mut self) {
        let (w, j) = (self.width, self.next_h);
        let src = &self.image[j * w..(j + 1) * w];
        smooth_row(src, &mut self.h[(j % 3) * w..(j % 3 + 1) * w]);
        self.next_h += 1;
    }

    /// `G` row `next_g` into ring slot `next_g % 3`.
    fn push_g(&mut self) {
        let j = self.next_g as isize;
        let need = self.row(j + 1);
        while self.next_h <= need {
            self.push_h();
        }
        let w = self.width;
        let (a, b, c) = (self.row(j - 1) % 3, self.next_g % 3, need % 3);
        let slot = self.next_g % 3;
        let (ha, hb, hc) = (
            &self.h[a * w..(a + 1) * w],
            &self.h[b * w..(b + 1) * w],
            &self.h[c * w..(c + 1) * w],
        );
        let dst = &mut self.g[slot * w..(slot + 1) * w];
        for (((d, &u), &m), &l) in dst.iter_mut().zip(ha).zip(hb).zip(hc) {
            *d = u + 2 * m + l;
        }
        self.next_g += 1;
    }

    /// Products of row `next_p` into the product ring (slot `next_p % window`).
    fn push_p(&mut self) {
        let j = self.next_p as isize;
        let need = self.row(j + 1);
        while self.next_g <= need {
            self.push_g();
        }
        let w = self.width;
        let (up, mid, down) = (self.row(j - 1) % 3, self.next_p % 3, need % 3);
        {
            let (gu, gm, gd) = (
                &self.g[up * w..(up + 1) * w],
                &self.g[mid * w..(mid + 1) * w],
                &self.g[down * w..(down + 1) * w],
            );
            for x in 0..w {
                // Vertical [1 2 1] for Gx, vertical difference for Gy.
                self.vs[x] = gu[x] + 2 * gm[x] + gd[x];
                self.vd[x] = gd[x] - gu[x];
            }
        }
        let slot = self.next_p % self.window;
        let plane = self.window * w;
        let (pxx, rest) = self.p.split_at_mut(plane);
        let (pyy, pxy) = rest.split_at_mut(plane);
        let range = slot * w..(slot + 1) * w;
        let (pxx, pyy, pxy) = (
            &mut pxx[range.clone()],
            &mut pyy[range.clone()],
            &mut pxy[range],
        );
        let (vs, vd) = (&*self.vs, &*self.vd);
        let mut put = |x: usize, gx: i32, gy: i32| {
            pxx[x] = gx * gx;
            pyy[x] = gy * gy;
            pxy[x] = gx * gy;
        };
        if w == 1 {
            put(0, 0, 4 * vd[0]);
        } else {
            put(0, vs[1] - vs[0], 3 * vd[0] + vd[1]);
            for x in 1..w - 1 {
                put(x, vs[x + 1] - vs[x - 1], vd[x - 1] + 2 * vd[x] + vd[x + 1]);
            }
            put(w - 1, vs[w - 1] - vs[w - 2], vd[w - 2] + 3 * vd[w - 1]);
        }
        self.next_p += 1;
    }

    /// Response row `y` (all of `0..height` in order), handed to `emit` as `(x, R)`.
    fn response_row(&mut self, y: usize, k: f32, mut emit: impl FnMut(usize, f32)) {
        let r = self.window / 2;
        let need = self.row((y + r) as isize);
        while self.next_p <= need {
            self.push_p();
        }
        let w = self.width;
        let plane = self.window * w;
        // Column sums over the window rows (clamped rows repeat), stored at offset r of rows
        // padded by r replicated entries on each side (the replicated border of stage 4).
        let padded = w + 2 * r;
        let (vxx, rest) = self.v.split_at_mut(w + MAX_WINDOW);
        let (vyy, vxy) = rest.split_at_mut(w + MAX_WINDOW);
        let (vxx, vyy, vxy) = (&mut vxx[..padded], &mut vyy[..padded], &mut vxy[..padded]);
        vxx.fill(0);
        vyy.fill(0);
        vxy.fill(0);
        for i in -(r as isize)..=(r as isize) {
            let slot = (y as isize + i).clamp(0, self.height as isize - 1) as usize % self.window;
            let base = slot * w;
            let pxx = &self.p[base..base + w];
            let pyy = &self.p[plane + base..plane + base + w];
            let pxy = &self.p[2 * plane + base..2 * plane + base + w];
            for (((sx, sy), sxy), ((&a, &b), &c)) in vxx[r..r + w]
                .iter_mut()
                .zip(vyy[r..r + w].iter_mut())
                .zip(vxy[r..r + w].iter_mut())
                .zip(pxx.iter().zip(pyy).zip(pxy))
            {
                *sx += a;
                *sy += b;
                *sxy += c;
            }
        }
        for row in [&mut *vxx, &mut *vyy, &mut *vxy] {
            let (first, last) = (row[r], row[r + w - 1]);
            row[..r].fill(first);
            row[r + w..].fill(last);
        }
        // Row sums and the response, in blocks of BLOCK pixels.
        let (mut a, mut b, mut c) = ([0.0f32; BLOCK], [0.0f32; BLOCK], [0.0f32; BLOCK]);
        let n = self.window;
        let mut x0 = 0;
        while x0 < w {
            let len = BLOCK.min(w - x0);
            row_sums(&vxx[x0..x0 + len + n - 1], n, &mut a[..len]);
            row_sums(&vxy[x0..x0 + len + n - 1], n, &mut b[..len]);
            row_sums(&vyy[x0..x0 + len + n - 1], n, &mut c[..len]);
            for i in 0..len {
                let det = a[i] * c[i] - b[i] * b[i];
                let tr = a[i] + c[i];
                emit(x0 + i, det - k * (tr * tr));
            }
            x0 += len;
        }
    }
}

/// Checks everything and runs the response stage, handing `(index, R)` to `emit` in raster order.
/// Returns the scratch tail after the ring rows (the response-map area).
fn run(
    image: &GrayImage<'_>,
    config: &HarrisConfig,
    scratch: &mut [i32],
    mut emit: impl FnMut(usize, f32, &mut [i32]),
) -> Result<(), HarrisError> {
    config.validate()?;
    let (width, height) = (image.width(), image.height());
    let expected = scratch_len(width, height)?;
    if scratch.len() < expected {
        return Err(HarrisError::ScratchLength {
            expected,
            actual: scratch.len(),
        });
    }
    let (h, rest) = scratch.split_at_mut(3 * width);
    let (g, rest) = rest.split_at_mut(3 * width);
    let (vs, rest) = rest.split_at_mut(width);
    let (vd, rest) = rest.split_at_mut(width);
    let (p, rest) = rest.split_at_mut(3 * MAX_WINDOW * width);
    let (v, map) = rest.split_at_mut(3 * (width + MAX_WINDOW));
    let mut rings = Rings {
        image: image.pixels(),
        width,
        height,
        window: config.window,
        h,
        g,
        vs,
        vd,
        p,
        v,
        next_h: 0,
        next_g: 0,
        next_p: 0,
    };
    for y in 0..height {
        rings.response_row(y, config.k, |x, r| emit(y * width + x, r, map));
    }
    Ok(())
}

/// Computes the response map `R` (module docs, stages 1 to 5) into `out` (`width * height`,
/// row-major). `scratch` needs at least [`scratch_len`] elements.
pub fn response_map(
    image: &GrayImage<'_>,
    config: &HarrisConfig,
    scratch: &mut [i32],
    out: &mut [f32],
) -> Result<(), HarrisError> {
    let pixels = image.width() * image.height();
    if out.len() != pixels {
        return Err(HarrisError::OutputLength {
            expected: pixels,
            actual: out.len(),
        });
    }
    run(image, config, scratch, |i, r, _| out[i] = r)
}

/// Detects Harris corners (module docs) and offers them to `sink`. `scratch` needs at least
/// [`scratch_len`] elements. The sink is not cleared first.
pub fn detect<S: KeypointSink>(
    image: &GrayImage<'_>,
    config: &HarrisConfig,
    scratch: &mut [i32],
    sink: &mut S,
) -> Result<HarrisStats, HarrisError> {
    let mut max_response = f32::NEG_INFINITY;
    // The map lives in the scratch as f32 bit patterns (one buffer type for the caller).
    run(image, config, scratch, |i, r, map| {
        map[i] = r.to_bits() as i32;
        max_response = max_response.max(r);
    })?;
    let (width, height) = (image.width(), image.height());
    let map = &scratch[ring_len(width)..ring_len(width) + width * height];
    let at = |x: usize, y: usize| f32::from_bits(map[y * width + x] as u32);
    let threshold = match config.threshold {
        HarrisThreshold::Absolute(t) => t,
        HarrisThreshold::Relative(f) => f * max_response,
    };
    let dropped_before = sink.dropped();
    // `R > 0 && R >= t` as one integer comparison on the bit patterns: for a positive bound
    // `b`, `R >= b` exactly when `R.to_bits() as i32 >= b.to_bits() as i32` (negative floats
    // have negative patterns; R is never NaN), and `R > 0` is `R >= ` the smallest subnormal.
    let bound = if threshold > 0.0 {
        threshold
    } else {
        f32::from_bits(1)
    };
    let bound_bits = bound.to_bits() as i32;
    let mut candidates = 0;
    for y in 0..height {
        let row = &map[y * width..(y + 1) * width];
        let mut scan_from = 0;
        // Tight scan to the next pixel above the bound (most pixels are below it).
        while let Some(skip) = row[scan_from..].iter().position(|&bits| bits >= bound_bits) {
            let x = scan_from + skip;
            let value = f32::from_bits(row[x] as u32);
            // The scan resumes after this pixel.
            scan_from = x + 1;
            let interior = x >= 2 && y >= 2 && x + 2 < width && y + 2 < height;
            let keep = if interior {
                is_local_max_interior(map, y * width + x, width, value)
            } else {
                is_local_max(&at, x, y, width, height, value)
            };
            if !keep {
                continue;
            }
            candidates += 1;
            let (mut fx, mut fy) = (x as f32, y as f32);
            if config.subpixel {
                if x > 0 && x + 1 < width {
                    fx += parabola(at(x - 1, y), value, at(x + 1, y));
                }
                if y > 0 && y + 1 < height {
                    fy += parabola(at(x, y - 1), value, at(x, y + 1));
                }
            }
            sink.offer(Keypoint {
                x: fx,
                y: fy,
                scale: config.descriptor_scale,
                orientation: 0.0,
                response: value,
                laplacian: 0,
                octave: 0,
                interval: 0,
                sample_x: x as u32,
                sample_y: y as u32,
            });
        }
    }
    Ok(HarrisStats {
        max_response,
        threshold,
        candidates,
        kept: sink.points().len(),
        dropped: sink.dropped() - dropped_before,
    })
}

/// The 24 neighbours of the 5x5 window as `(dy, dx)`, nearest first (the spiral order of
/// Loundagin 2015): most pixels fail against a direct neighbour, after one or two comparisons.
const SPIRAL: [(i8, i8); 24] = [
    (0, 1),
    (0, -1),
    (1, 0),
    (-1, 0),
    (1, 1),
    (-1, -1),
    (1, -1),
    (-1, 1),
    (0, 2),
    (0, -2),
    (2, 0),
    (-2, 0),
    (2, 1),
    (-2, -1),
    (1, 2),
    (-1, -2),
    (2, -1),
    (-2, 1),
    (-1, 2),
    (1, -2),
    (2, 2),
    (-2, -2),
    (2, -2),
    (-2, 2),
];

/// Stage 7 for a pixel at least 2 pixels inside the image (`i` = its index): no bounds to check.
#[inline]
fn is_local_max_interior(map: &[i32], i: usize, width: usize, value: f32) -> bool {
    SPIRAL.iter().all(|&(dy, dx)| {
        let offset = isize::from(dy) * width as isize + isize::from(dx);
        let other = f32::from_bits(map[i.wrapping_add_signed(offset)] as u32);
        // Earlier in raster order: strict.
        if dy < 0 || (dy == 0 && dx < 0) {
            value > other
        } else {
            value >= other
        }
    })
}

/// Stage 7: strict against earlier pixels of the 5x5 neighbourhood, non-strict against later ones.
#[inline]
fn is_local_max(
    at: &impl Fn(usize, usize) -> f32,
    x: usize,
    y: usize,
    width: usize,
    height: usize,
    value: f32,
) -> bool {
    for ny in y.saturating_sub(2)..(y + 3).min(height) {
        for nx in x.saturating_sub(2)..(x + 3).min(width) {
            let other = at(nx, ny);
            let earlier = (ny, nx) < (y, x);
            let later = (ny, nx) > (y, x);
            // R is never NaN (module docs, stage 5), so these are the negations of `>` / `>=`.
            if (earlier && value <= other) || (later && value < other) {
                return false;
            }
        }
    }
    true
}

/// Stage 8: offset of the vertex of the parabola through `(-1, l), (0, c), (1, r)`.
#[inline]
fn parabola(l: f32, c: f32, r: f32) -> f32 {
    let den = (l + r) - 2.0 * c;
    if den < 0.0 {
        ((l - r) / (2.0 * den)).clamp(-0.5, 0.5)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keypoint::{KeypointBuffer, KeypointSet};
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use std::vec;
    use std::vec::Vec;

    /// The module's definition evaluated directly in f64 on normalised intensities.
    fn naive(pixels: &[u8], w: usize, h: usize, window: usize, k: f64) -> (Vec<f64>, Vec<f64>) {
        let cl = |v: isize, n: usize| v.clamp(0, n as isize - 1) as usize;
        let wt = [1.0, 2.0, 1.0];
        let img = |y: isize, x: isize| f64::from(pixels[cl(y, h) * w + cl(x, w)]) / 255.0;
        let g = |y: isize, x: isize| {
            let (y, x) = (cl(y, h) as isize, cl(x, w) as isize);
            let mut s = 0.0;
            for i in -1..=1isize {
                for j in -1..=1isize {
                    s += wt[(i + 1) as usize] * wt[(j + 1) as usize] * img(y + i, x + j);
                }
            }
            s / 16.0
        };
        let grad = |y: isize, x: isize| {
            let (y, x) = (cl(y, h) as isize, cl(x, w) as isize);
            let mut gx = 0.0;
            let mut gy = 0.0;
            for i in -1..=1isize {
                gx += wt[(i + 1) as usize] * (g(y + i, x + 1) - g(y + i, x - 1));
                gy += wt[(i + 1) as usize] * (g(y + 1, x + i) - g(y - 1, x + i));
            }
            (gx / 8.0, gy / 8.0)
        };
        let r = (window / 2) as isize;
        let mut out = vec![0.0; w * h];
        let mut scale = vec![0.0; w * h];
        for y in 0..h as isize {
            for x in 0..w as isize {
                let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
                for i in -r..=r {
                    for j in -r..=r {
                        let (gx, gy) = grad(y + i, x + j);
                        a += gx * gx;
                        b += gx * gy;
                        c += gy * gy;
                    }
                }
                out[y as usize * w + x as usize] = a * c - b * b - k * (a + c) * (a + c);
                scale[y as usize * w + x as usize] = (a + c) * (a + c);
            }
        }
        (out, scale)
    }

    #[test]
    fn response_map_equals_direct_f64_evaluation() {
        let mut rng = StdRng::seed_from_u64(17);
        for (w, h, window) in [(37, 29, 3), (1, 9, 3), (8, 1, 5), (23, 31, 13), (2, 2, 7)] {
            // Blocks of random grey levels plus noise: strong, varied gradients.
            let pixels: Vec<u8> = (0..w * h)
                .map(|i| {
                    let (x, y) = (i % w, i / w);
                    let block = ((x / 5) * 7 + (y / 4) * 13) % 5;
                    (block as u8 * 50).saturating_add(rng.gen_range(0..20))
                })
                .collect();
            let image = GrayImage::new(&pixels, w, h).unwrap();
            let config = HarrisConfig {
                window,
                k: 0.05,
                ..HarrisConfig::default()
            };
            let mut scratch = vec![0i32; scratch_len(w, h).unwrap()];
            let mut map = vec![0.0f32; w * h];
            response_map(&image, &config, &mut scratch, &mut map).unwrap();
            let (expected, scale) = naive(&pixels, w, h, window, 0.05);
            let mut nonzero = 0;
            for i in 0..w * h {
                // Stated tolerance: 1e-5 of tr^2 (the f32 rounding of a, b, c and det is about
                // 1e-7 relative to tr^2), plus 1e-12 absolute.
                let tol = 1e-5 * scale[i] + 1e-12;
                assert!(
                    (f64::from(map[i]) - expected[i]).abs() <= tol,
                    "{w}x{h} n={window} at {i}: {} vs {}",
                    map[i],
                    expected[i]
                );
                nonzero += usize::from(expected[i].abs() > 1e-6);
            }
            if w > 2 && h > 2 {
                assert!(nonzero > w * h / 4);
            }
        }
    }

    fn checkerboard(w: usize, h: usize, cell: usize, margin: usize) -> Vec<u8> {
        (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if x < margin || y < margin || x >= w - margin || y >= h - margin {
                    128
                } else if ((x - margin) / cell + (y - margin) / cell).is_multiple_of(2) {
                    230
                } else {
                    20
                }
            })
            .collect()
    }

    #[test]
    fn checkerboard_corners_within_one_pixel() {
        let (w, h, cell, margin) = (150, 130, 16, 11);
        let pixels = checkerboard(w, h, cell, margin);
        let image = GrayImage::new(&pixels, w, h).unwrap();
        let mut scratch = vec![0i32; scratch_len(w, h).unwrap()];
        let mut storage = vec![Keypoint::default(); 400];
        let mut sink = KeypointBuffer::new(&mut storage);
        let config = HarrisConfig {
            threshold: HarrisThreshold::Relative(0.1),
            ..HarrisConfig::default()
        };
        let stats = detect(&image, &config, &mut scratch, &mut sink).unwrap();
        // Interior grid corners (between pixels: at c - 0.5).
        let mut truth = Vec::new();
        let mut cy = margin + cell;
        while cy < h - margin {
            let mut cx = margin + cell;
            while cx < w - margin {
                truth.push((cx as f32 - 0.5, cy as f32 - 0.5));
                cx += cell;
            }
            cy += cell;
        }
        assert!(truth.len() >= 40);
        for &(tx, ty) in &truth {
            let found = sink
                .points()
                .iter()
                .any(|p| (p.x - tx).abs() <= 1.0 && (p.y - ty).abs() <= 1.0);
            assert!(found, "corner ({tx}, {ty}) not found");
        }
        // Symmetric corners: the plateau tie and the parabola put the point exactly between pixels.
        let exact = sink
            .points()
            .iter()
            .filter(|p| truth.iter().any(|&(tx, ty)| p.x == tx && p.y == ty))
            .count();
        assert!(exact >= truth.len() / 2, "{exact}");
        assert_eq!(stats.kept, sink.len());
        assert_eq!(stats.candidates, sink.len() + stats.dropped);
        for p in sink.points() {
            assert_eq!(
                (p.laplacian, p.octave, p.orientation, p.scale),
                (0, 0, 0.0, 2.0)
            );
            assert!(p.response >= stats.threshold && p.response > 0.0);
        }
        // Strongest-N into a small set keeps the strongest, independent of anything else.
        let mut small = KeypointSet::<5>::new();
        let s2 = detect(&image, &config, &mut scratch, &mut small).unwrap();
        small.sort();
        let mut all = sink.points().to_vec();
        all.sort_by(Keypoint::rank_cmp);
        assert_eq!(small.as_slice(), &all[..5]);
        assert_eq!(s2.dropped, all.len() - 5);
    }

    #[test]
    fn nms_interior_fast_path_equals_general_rule() {
        let mut rng = StdRng::seed_from_u64(3);
        let (w, h) = (9usize, 8usize);
        for _ in 0..300 {
            // Few distinct values: many ties and plateaus.
            let map: Vec<f32> = (0..w * h).map(|_| rng.gen_range(0..4) as f32).collect();
            let bits: Vec<i32> = map.iter().map(|v| v.to_bits() as i32).collect();
            let at = |x: usize, y: usize| map[y * w + x];
            for y in 2..h - 2 {
                for x in 2..w - 2 {
                    let v = at(x, y);
                    assert_eq!(
                        is_local_max_interior(&bits, y * w + x, w, v),
                        is_local_max(&at, x, y, w, h, v)
                    );
                }
            }
        }
    }

    #[test]
    fn nms_keeps_isolated_peaks_and_plateau_first() {
        // A map with a plateau: check the rule directly.
        let (w, h) = (7usize, 5usize);
        let mut map = vec![0.0f32; w * h];
        map[2 * w + 2] = 5.0;
        map[2 * w + 3] = 5.0; // plateau with (2, 2)
        map[2 * w + 6] = 4.0; // within 5x5 of (3, 2)? dx = 3: no
        let at = |x: usize, y: usize| map[y * w + x];
        assert!(is_local_max(&at, 2, 2, w, h, 5.0));
        assert!(!is_local_max(&at, 3, 2, w, h, 5.0));
        assert!(is_local_max(&at, 6, 2, w, h, 4.0));
        assert_eq!(parabola(1.0, 2.0, 2.0), 0.5);
        assert_eq!(parabola(2.0, 2.0, 1.0), -0.5);
        assert_eq!(parabola(1.0, 2.0, 1.0), 0.0);
        assert_eq!(parabola(1.0, 1.0, 1.0), 0.0);
    }

    #[test]
    fn bad_inputs_are_typed_errors_and_tiny_images_are_empty() {
        let pixels = [7u8; 1];
        let image = GrayImage::new(&pixels, 1, 1).unwrap();
        let mut scratch = vec![0i32; scratch_len(1, 1).unwrap()];
        let mut set = KeypointSet::<4>::new();
        let stats = detect(&image, &HarrisConfig::default(), &mut scratch, &mut set).unwrap();
        assert_eq!((set.len(), stats.candidates), (0, 0));
        assert_eq!(
            scratch_len(0, 0),
            Err(HarrisError::Image(ImageError::Empty))
        );
        assert!(GrayImage::new(&[], 0, 0).is_err());
        let bad = |c: HarrisConfig| {
            let mut s = vec![0i32; scratch_len(1, 1).unwrap()];
            let mut set = KeypointSet::<4>::new();
            (c.validate(), detect(&image, &c, &mut s, &mut set).err())
        };
        let d = HarrisConfig::default();
        for k in [f32::NAN, -0.1, 0.25, f32::INFINITY] {
            assert_eq!(
                bad(HarrisConfig { k, ..d }),
                (Err(HarrisError::InvalidK), Some(HarrisError::InvalidK))
            );
        }
        for window in [0, 1, 2, 4, 15] {
            let e = HarrisError::InvalidWindow { window };
            assert_eq!(bad(HarrisConfig { window, ..d }), (Err(e), Some(e)));
        }
        for threshold in [
            HarrisThreshold::Absolute(-1.0),
            HarrisThreshold::Absolute(f32::NAN),
            HarrisThreshold::Relative(1.5),
            HarrisThreshold::Relative(f32::NAN),
        ] {
            assert_eq!(
                bad(HarrisConfig { threshold, ..d }).0,
                Err(HarrisError::InvalidThreshold)
            );
        }
        assert_eq!(
            bad(HarrisConfig {
                descriptor_scale: 0.0,
                ..d
            })
            .0,
            Err(HarrisError::InvalidScale)
        );
        let pixels = [0u8; 12];
        let image = GrayImage::new(&pixels, 4, 3).unwrap();
        let mut short = vec![0i32; scratch_len(4, 3).unwrap() - 1];
        assert_eq!(
            detect(&image, &d, &mut short, &mut set).err(),
            Some(HarrisError::ScratchLength {
                expected: short.len() + 1,
                actual: short.len()
            })
        );
        let mut scratch = vec![0i32; scratch_len(4, 3).unwrap()];
        let mut map = vec![0.0f32; 11];
        assert_eq!(
            response_map(&image, &d, &mut scratch, &mut map).err(),
            Some(HarrisError::OutputLength {
                expected: 12,
                actual: 11
            })
        );
        assert!(std::format!("{}", HarrisError::InvalidWindow { window: 4 }).contains('4'));
    }

    #[test]
    fn absolute_threshold_and_extreme_contrast() {
        // Full-contrast 1-pixel checkerboard: the largest possible gradients stay exact.
        let (w, h) = (40usize, 40usize);
        let pixels: Vec<u8> = (0..w * h)
            .map(|i| if (i % w + i / w) % 2 == 0 { 255 } else { 0 })
            .collect();
        let image = GrayImage::new(&pixels, w, h).unwrap();
        let mut scratch = vec![0i32; scratch_len(w, h).unwrap()];
        let mut map = vec![0.0f32; w * h];
        let config = HarrisConfig {
            window: 13,
            ..HarrisConfig::default()
        };
        response_map(&image, &config, &mut scratch, &mut map).unwrap();
        assert!(map.iter().all(|r| r.is_finite()));
        let (expected, scale) = naive(&pixels, w, h, 13, 0.04);
        for i in 0..w * h {
            assert!((f64::from(map[i]) - expected[i]).abs() <= 1e-5 * scale[i] + 1e-12);
        }
        // An absolute threshold above every response finds nothing.
        let max = map.iter().cloned().fold(f32::MIN, f32::max);
        let config = HarrisConfig {
            threshold: HarrisThreshold::Absolute(max * 2.0 + 1.0),
            ..config
        };
        let mut set = KeypointSet::<8>::new();
        let stats = detect(&image, &config, &mut scratch, &mut set).unwrap();
        assert_eq!((stats.candidates, set.len()), (0, 0));
    }
}
