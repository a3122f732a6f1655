//! Checking incoming `sensor_msgs/Image` messages and turning them into 8-bit grayscale.
//!
//! Every declared field is checked against the others and against the core's size limits
//! *before* the node allocates or indexes anything with it: a message that declares
//! 100000 x 100000 pixels but carries a few bytes is rejected by arithmetic alone.
//!
//! The luminance of each encoding follows the rules of the command line's image files
//! (`surfcl_cli::io`), so a picture gives the same gray pixels whichever way it enters:
//! - colour (`rgb8`, `bgr8`, `rgba8`, `bgra8`, and OpenCV's `8UC3` / `8UC4`, which are BGR and
//!   BGRA as `cv_bridge` reads them): `Y = 0.299 R + 0.587 G + 0.114 B`, rounded half up,
//!   computed exactly in integers as `(299 R + 587 G + 114 B + 500) / 1000`
//!   ([`luminance`]); alpha is ignored;
//! - `mono8` / `8UC1`: the bytes as they are;
//! - `mono16` / `16UC1`: each sample `v` reduced to 8 bits as `(v + 128) / 257` (the rounding
//!   the `image` crate applies to a 16-bit PNG or PGM, so `surfcl detect` on the same picture
//!   saved as a 16-bit file sees the same pixels), in the byte order `is_bigendian` declares;
//! - YUV (`yuv422_yuy2` / `yuyv`: Y0 U Y1 V; `uyvy` / `yuv422`: U Y0 V Y1; `nv12` / `nv21`: a
//!   Y plane then a half-resolution interleaved chroma plane): the Y plane, which is the
//!   luminance; chroma is not read. A 4:2:2 row holds 2 bytes per pixel, `2 * width` bytes: with
//!   an odd width the last pixel's pair lacks its second half, which carries no luminance of
//!   it. NV12 and NV21 need an even height (the chroma plane has `height / 2` rows of `step`
//!   bytes after the Y plane: the message holds `step * height * 3 / 2` bytes), any width;
//! - Bayer (`bayer_rggb8`, `bayer_bggr8`, `bayer_gbrg8`, `bayer_grbg8`): bilinear demosaicing
//!   then the colour rule. At each pixel the two missing colours are the mean of the nearest
//!   pixels of that colour (the 2 horizontal or 2 vertical neighbours, or the 4 orthogonal or 4
//!   diagonal ones), each mean rounded half up to 8 bits; rows and columns beyond the border are
//!   mirrored without repeating the edge (`-1` reads `1`, `width` reads `width - 2`), which
//!   keeps the colour pattern; then [`luminance`] of the pixel's R, G, B. The frame keeps its
//!   full resolution, so keypoints are in the camera's pixel coordinates. Bayer frames need at
//!   least 2 x 2 pixels.
//!
//! Rows may carry padding (`step` larger than a row of pixels); it is never read.

use crate::msg::Image;

/// The colours of a Bayer filter's top-left 2 x 2 cell, row by row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BayerPattern {
    /// R G / G B.
    Rggb,
    /// B G / G R.
    Bggr,
    /// G B / R G.
    Gbrg,
    /// G R / B G.
    Grbg,
}

/// One colour of a Bayer filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    Red,
    Green,
    Blue,
}

impl BayerPattern {
    /// The filter colour at pixel (`x`, `y`).
    fn at(self, x: usize, y: usize) -> Filter {
        use Filter::{Blue as B, Green as G, Red as R};
        let cell = match self {
            BayerPattern::Rggb => [R, G, G, B],
            BayerPattern::Bggr => [B, G, G, R],
            BayerPattern::Gbrg => [G, B, R, G],
            BayerPattern::Grbg => [G, R, B, G],
        };
        cell[(y & 1) * 2 + (x & 1)]
    }
}

/// The pixel encodings the node accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// One byte per pixel, gray (`mono8`, `8UC1`).
    Mono8,
    /// R, G, B.
    Rgb8,
    /// B, G, R (`bgr8`, `8UC3`).
    Bgr8,
    /// R, G, B, A.
    Rgba8,
    /// B, G, R, A (`bgra8`, `8UC4`).
    Bgra8,
    /// Two bytes per pixel, gray, in the byte order of the message's `is_bigendian`
    /// (`mono16`, `16UC1`).
    Mono16,
    /// YUV 4:2:2, Y0 U Y1 V (`yuv422_yuy2`, `yuyv`).
    Yuyv,
    /// YUV 4:2:2, U Y0 V Y1 (`uyvy`, `yuv422`).
    Uyvy,
    /// YUV 4:2:0: a Y plane, then `height / 2` rows of interleaved U V.
    Nv12,
    /// YUV 4:2:0: a Y plane, then `height / 2` rows of interleaved V U.
    Nv21,
    /// One byte per pixel behind a Bayer colour filter.
    Bayer(BayerPattern),
}

/// Every encoding string [`Encoding::parse`] accepts, for messages and documentation.
pub const ENCODING_NAMES: [&str; 20] = [
    "mono8",
    "8UC1",
    "rgb8",
    "bgr8",
    "8UC3",
    "rgba8",
    "bgra8",
    "8UC4",
    "mono16",
    "16UC1",
    "yuv422_yuy2",
    "yuyv",
    "uyvy",
    "yuv422",
    "nv12",
    "nv21",
    "bayer_rggb8",
    "bayer_bggr8",
    "bayer_gbrg8",
    "bayer_grbg8",
];

impl Encoding {
    /// Parses a `sensor_msgs/Image` encoding string (exact, as ROS writes them; the names of
    /// `sensor_msgs/image_encodings.hpp`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "mono8" | "8UC1" => Encoding::Mono8,
            "rgb8" => Encoding::Rgb8,
            "bgr8" | "8UC3" => Encoding::Bgr8,
            "rgba8" => Encoding::Rgba8,
            "bgra8" | "8UC4" => Encoding::Bgra8,
            "mono16" | "16UC1" => Encoding::Mono16,
            "yuv422_yuy2" | "yuyv" => Encoding::Yuyv,
            "uyvy" | "yuv422" => Encoding::Uyvy,
            "nv12" => Encoding::Nv12,
            "nv21" => Encoding::Nv21,
            "bayer_rggb8" => Encoding::Bayer(BayerPattern::Rggb),
            "bayer_bggr8" => Encoding::Bayer(BayerPattern::Bggr),
            "bayer_gbrg8" => Encoding::Bayer(BayerPattern::Gbrg),
            "bayer_grbg8" => Encoding::Bayer(BayerPattern::Grbg),
            _ => return None,
        })
    }

    /// Bytes per pixel in a row (for NV12 and NV21, of the Y plane).
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            Encoding::Mono8 | Encoding::Nv12 | Encoding::Nv21 | Encoding::Bayer(_) => 1,
            Encoding::Mono16 | Encoding::Yuyv | Encoding::Uyvy => 2,
            Encoding::Rgb8 | Encoding::Bgr8 => 3,
            Encoding::Rgba8 | Encoding::Bgra8 => 4,
        }
    }

    /// Whether the first `height` rows of the message are the luminance itself, one byte per
    /// pixel (a mono8 image with the message's `step`): such a frame is copied, not converted,
    /// and a tightly packed one is used where it lies.
    pub fn is_gray_plane(self) -> bool {
        matches!(self, Encoding::Mono8 | Encoding::Nv12 | Encoding::Nv21)
    }

    /// Bytes a message of `height` rows of `step` bytes holds: `step * height`, and for NV12
    /// and NV21 the chroma plane's `step * height / 2` more.
    fn data_len(self, step: u32, height: u32) -> u64 {
        let plane = u64::from(step) * u64::from(height);
        match self {
            Encoding::Nv12 | Encoding::Nv21 => plane + plane / 2,
            _ => plane,
        }
    }

    /// Byte offsets of R, G and B inside one pixel (meaningful for the colour encodings only).
    fn rgb_offsets(self) -> (usize, usize, usize) {
        match self {
            Encoding::Bgr8 | Encoding::Bgra8 => (2, 1, 0),
            _ => (0, 1, 2),
        }
    }
}

/// Why an image message was dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageMsgError {
    /// The encoding is not one the node reads.
    #[error(
        "unsupported encoding {0:?} (expected mono8/8UC1, rgb8, bgr8/8UC3, rgba8, bgra8/8UC4, \
         mono16/16UC1, yuv422_yuy2/yuyv, uyvy/yuv422, nv12, nv21 or bayer_rggb8/bggr8/gbrg8/grbg8)"
    )]
    Encoding(String),
    /// The size is zero or beyond the core's limits.
    #[error("image {width}x{height}: {reason}")]
    Size {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// The core's verdict.
        reason: surfcl_core::ImageError,
    },
    /// The size does not suit the encoding (an odd height for NV12 or NV21, less than 2 x 2
    /// pixels for Bayer).
    #[error("{encoding:?} image {width}x{height}: {reason}")]
    Shape {
        /// The encoding.
        encoding: Encoding,
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// What the encoding needs.
        reason: &'static str,
    },
    /// `step` is smaller than one row of pixels.
    #[error("{encoding:?}: step {step} is smaller than width {width} x {bpp} bytes per pixel")]
    Step {
        /// The encoding.
        encoding: Encoding,
        /// Declared step.
        step: u32,
        /// Declared width.
        width: u32,
        /// Bytes per pixel of the encoding.
        bpp: usize,
    },
    /// `data` does not hold exactly the bytes `step` and `height` declare (`step * height`,
    /// 3/2 of it for NV12 and NV21).
    #[error(
        "{encoding:?}: data has {actual} bytes, step {step} x height {height} requires {expected}"
    )]
    DataLength {
        /// The encoding.
        encoding: Encoding,
        /// Declared step.
        step: u32,
        /// Declared height.
        height: u32,
        /// The bytes the encoding needs.
        expected: u64,
        /// `data.len()`.
        actual: usize,
    },
}

/// The kind of a dropped message, as logged: the node logs the first message of each kind and
/// counts the others (a camera sending a wrong step sends it with every frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropKind {
    /// What was wrong: `"encoding"`, `"size"`, `"shape"`, `"step"` or `"data length"`.
    pub reason: &'static str,
    /// The message's encoding, when the node reads it.
    pub encoding: Option<Encoding>,
}

impl ImageMsgError {
    /// The kind of this error, for logging the first of each kind.
    pub fn kind(&self) -> DropKind {
        let (reason, encoding) = match self {
            ImageMsgError::Encoding(_) => ("encoding", None),
            ImageMsgError::Size { .. } => ("size", None),
            ImageMsgError::Shape { encoding, .. } => ("shape", Some(*encoding)),
            ImageMsgError::Step { encoding, .. } => ("step", Some(*encoding)),
            ImageMsgError::DataLength { encoding, .. } => ("data length", Some(*encoding)),
        };
        DropKind { reason, encoding }
    }
}

/// The kinds of problems logged so far: the first of each kind is logged, the rest only
/// counted. The kinds are a small closed set (the error kinds times the known encodings), so
/// the list stays short whatever a publisher sends.
#[derive(Debug, Clone)]
pub struct LoggedKinds<K> {
    seen: Vec<K>,
}

impl<K> Default for LoggedKinds<K> {
    fn default() -> Self {
        Self { seen: Vec::new() }
    }
}

impl<K: PartialEq> LoggedKinds<K> {
    /// Whether `kind` is seen for the first time (then it is remembered).
    pub fn first(&mut self, kind: K) -> bool {
        if self.seen.contains(&kind) {
            return false;
        }
        self.seen.push(kind);
        true
    }
}

/// A message that passed [`validate`]: the facts the conversion relies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Encoding.
    pub encoding: Encoding,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Bytes per row in the message.
    pub step: usize,
    /// Byte order of 16-bit samples (the message's `is_bigendian`); unused by 8-bit encodings.
    pub big_endian: bool,
}

/// Checks `msg` without allocating: known encoding, size within the core's limits and suited
/// to the encoding, step covers a row, and `data` holds exactly the bytes the fields declare.
pub fn validate(msg: &Image) -> Result<Layout, ImageMsgError> {
    validate_fields(
        &msg.encoding,
        msg.width,
        msg.height,
        msg.step,
        msg.is_bigendian != 0,
        msg.data.len(),
    )
}

/// [`validate`] of a message's declared fields and the length of its `data`: what the receive
/// thread knows when it reaches the pixel bytes, before it decides where they go.
pub fn validate_fields(
    encoding: &str,
    width: u32,
    height: u32,
    step: u32,
    big_endian: bool,
    data_len: usize,
) -> Result<Layout, ImageMsgError> {
    let encoding =
        Encoding::parse(encoding).ok_or_else(|| ImageMsgError::Encoding(encoding.to_string()))?;
    let (w, h) = (width as usize, height as usize);
    surfcl_core::image::check_dimensions(w, h).map_err(|reason| ImageMsgError::Size {
        width,
        height,
        reason,
    })?;
    let shape = |reason| ImageMsgError::Shape {
        encoding,
        width,
        height,
        reason,
    };
    match encoding {
        Encoding::Nv12 | Encoding::Nv21 if !height.is_multiple_of(2) => {
            return Err(shape("4:2:0 chroma needs an even height"));
        }
        Encoding::Bayer(_) if width < 2 || height < 2 => {
            return Err(shape("demosaicing needs at least 2 x 2 pixels"));
        }
        _ => {}
    }
    let bpp = encoding.bytes_per_pixel();
    // Cannot overflow: width <= MAX_DIMENSION after check_dimensions.
    if (step as usize) < w * bpp {
        return Err(ImageMsgError::Step {
            encoding,
            step,
            width,
            bpp,
        });
    }
    let expected = encoding.data_len(step, height);
    if expected != data_len as u64 {
        return Err(ImageMsgError::DataLength {
            encoding,
            step,
            height,
            expected,
            actual: data_len,
        });
    }
    Ok(Layout {
        encoding,
        width: w,
        height: h,
        step: step as usize,
        big_endian,
    })
}

pub use surfcl_core::image::luminance;

/// Why [`to_gray_into`] wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GrayIntoError {
    /// The destination is not exactly one gray frame, `width * height` bytes.
    #[error("a {width}x{height} gray frame is {expected} bytes, the destination has {actual}")]
    Destination {
        /// Frame width.
        width: usize,
        /// Frame height.
        height: usize,
        /// `width * height`.
        expected: usize,
        /// The destination's length.
        actual: usize,
    },
    /// The layout does not fit `data` (it is not the one [`validate`] returned for this data):
    /// an empty frame, rows (`step`) shorter than a row of pixels, data that ends before the
    /// last row's pixels do, or a Bayer frame of less than 2 x 2 pixels.
    #[error("a {width}x{height} layout with step {step} does not fit {actual} bytes of data")]
    Layout {
        /// Frame width.
        width: usize,
        /// Frame height.
        height: usize,
        /// Bytes per row.
        step: usize,
        /// `data.len()`.
        actual: usize,
    },
}

/// Writes the grayscale version of `data` (laid out as `layout`, as returned by [`validate`] for
/// the same message) into `out`, resized to `width * height`. `out` is reused between frames so
/// that steady-state processing does not allocate.
pub fn to_gray(data: &[u8], layout: &Layout, out: &mut Vec<u8>) {
    out.clear();
    out.resize(layout.width * layout.height, 0);
    if fits(data, layout) {
        convert_frame(data, layout, out);
    }
}

/// Whether `layout` describes a frame that `data` holds whole: the conversion never reads past
/// a row's pixels or the data, and never meets a zero width or step, which it cannot split by.
fn fits(data: &[u8], layout: &Layout) -> bool {
    let Layout {
        encoding,
        width,
        height,
        step,
        ..
    } = *layout;
    let row_bytes = width.saturating_mul(encoding.bytes_per_pixel());
    let data_end = step
        .saturating_mul(height.saturating_sub(1))
        .saturating_add(row_bytes);
    let bayer_ok = !matches!(encoding, Encoding::Bayer(_)) || (width >= 2 && height >= 2);
    width > 0 && height > 0 && step >= row_bytes && data.len() >= data_end && bayer_ok
}

/// Writes the grayscale version of `data` (laid out as `layout`, as returned by [`validate`] for
/// the same message) into `out`, which must be exactly `width * height` bytes: memory the caller
/// does not own as a `Vec`, such as a backend's input area (the node converts straight into the
/// OpenCL detector's pinned memory). The pixels are those [`to_gray`] writes.
///
/// Every byte of `out` is written, or none: the sizes are checked first, so a frame never
/// leaves an earlier frame's pixels behind.
pub fn to_gray_into(data: &[u8], layout: &Layout, out: &mut [u8]) -> Result<(), GrayIntoError> {
    let Layout {
        width,
        height,
        step,
        ..
    } = *layout;
    // No overflow for a layout from `validate` (sizes within the core's limits); saturating for
    // any other.
    let expected = width.saturating_mul(height);
    if out.len() != expected {
        return Err(GrayIntoError::Destination {
            width,
            height,
            expected,
            actual: out.len(),
        });
    }
    if !fits(data, layout) {
        return Err(GrayIntoError::Layout {
            width,
            height,
            step,
            actual: data.len(),
        });
    }
    convert_frame(data, layout, out);
    Ok(())
}

/// The conversion of [`to_gray`] and [`to_gray_into`]: `data` (laid out as `layout`, which
/// [`fits`] it) into `out` (`width * height` bytes).
fn convert_frame(data: &[u8], layout: &Layout, out: &mut [u8]) {
    let Layout { width, height, .. } = *layout;
    // Large frames are converted in bands on several threads (a 4K rgb8 frame is 25 MB);
    // demosaicing costs several times a colour conversion per pixel, so Bayer frames from a
    // smaller size on.
    let parallel_from = match layout.encoding {
        Encoding::Bayer(_) => PARALLEL_PIXELS / 8,
        _ => PARALLEL_PIXELS,
    };
    let threads = if width * height >= parallel_from {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8)
    } else {
        1
    };
    let band = height.div_ceil(threads).max(1);
    if threads == 1 {
        convert_band(data, layout, 0, out);
        return;
    }
    std::thread::scope(|scope| {
        for (k, dst) in out.chunks_mut(band * width).enumerate() {
            scope.spawn(move || convert_band(data, layout, k * band, dst));
        }
    });
}

/// Frames of at least this many pixels are converted on several threads.
const PARALLEL_PIXELS: usize = 1 << 21;

/// Converts the rows from `first_row` on into `dst` (whole rows of `width` bytes), until `dst`
/// or the frame runs out.
fn convert_band(data: &[u8], layout: &Layout, first_row: usize, dst: &mut [u8]) {
    let Layout {
        encoding,
        width,
        step,
        big_endian,
        ..
    } = *layout;
    let src = &data[first_row.saturating_mul(step).min(data.len())..];
    let rgb = encoding.rgb_offsets();
    match encoding {
        Encoding::Mono8 | Encoding::Nv12 | Encoding::Nv21 => {
            rows::<1>(src, dst, step, width, |p| p[0]);
        }
        Encoding::Rgb8 | Encoding::Bgr8 => {
            rows::<3>(src, dst, step, width, |p| {
                luminance(p[rgb.0], p[rgb.1], p[rgb.2])
            });
        }
        Encoding::Rgba8 | Encoding::Bgra8 => {
            rows::<4>(src, dst, step, width, |p| {
                luminance(p[rgb.0], p[rgb.1], p[rgb.2])
            });
        }
        // One loop per byte order, each with its conversion inlined.
        Encoding::Mono16 if big_endian => rows::<2>(src, dst, step, width, |p| {
            reduce16(u16::from_be_bytes([p[0], p[1]]))
        }),
        Encoding::Mono16 => rows::<2>(src, dst, step, width, |p| {
            reduce16(u16::from_le_bytes([p[0], p[1]]))
        }),
        Encoding::Yuyv => rows::<2>(src, dst, step, width, |p| p[0]),
        Encoding::Uyvy => rows::<2>(src, dst, step, width, |p| p[1]),
        Encoding::Bayer(pattern) => bayer_rows(data, layout, pattern, first_row, dst),
    }
}

/// A 16-bit sample reduced to 8 bits, rounded: `(v + 128) / 257`, the `image` crate's rule.
#[inline]
fn reduce16(v: u16) -> u8 {
    // (65535 + 128) / 257 = 255.5..: the quotient is at most 255.
    ((u32::from(v) + 128) / 257) as u8
}

/// Converts the rows of `src` (each `step` bytes, `BPP` bytes per pixel) into `dst` (`width`
/// bytes per row), pixel by pixel with `gray`, until either runs out.
fn rows<const BPP: usize>(
    src: &[u8],
    dst: &mut [u8],
    step: usize,
    width: usize,
    gray: impl Fn(&[u8]) -> u8,
) {
    for (srow, drow) in src.chunks(step).zip(dst.chunks_exact_mut(width)) {
        let Some(srow) = srow.get(..width * BPP) else {
            return;
        };
        if BPP == 1 {
            drow.copy_from_slice(srow);
        } else {
            for (d, p) in drow.iter_mut().zip(srow.chunks_exact(BPP)) {
                *d = gray(p);
            }
        }
    }
}

/// The index `i` steps from `at` inside `0..n`, mirrored at the ends without repeating the
/// edge (`-1` is `1`, `n` is `n - 2`): the Bayer pattern's colour at the mirrored index is the
/// one the missing pixel would have had. `n >= 2`.
#[inline]
fn mirror(at: usize, delta: isize, n: usize) -> usize {
    match at.checked_add_signed(delta) {
        None => 1,
        Some(i) if i >= n => n - 2,
        Some(i) => i,
    }
}

/// Bilinear demosaicing of the Bayer rows from `first_row` on into `dst`, then [`luminance`]
/// (the rule is in the module's documentation). `data` holds the whole frame ([`fits`]).
fn bayer_rows(
    data: &[u8],
    layout: &Layout,
    pattern: BayerPattern,
    first_row: usize,
    dst: &mut [u8],
) {
    let Layout {
        width,
        height,
        step,
        ..
    } = *layout;
    let row = |y: usize| &data[y * step..y * step + width];
    for (k, out) in dst.chunks_exact_mut(width).enumerate() {
        let y = first_row + k;
        if y >= height {
            return;
        }
        let rows = BayerRows {
            up: row(mirror(y, -1, height)),
            here: row(y),
            down: row(mirror(y, 1, height)),
        };
        // One loop per pair of filter colours (even and odd columns), so that the colour of
        // each pixel is known when the loop is compiled.
        use Filter::{Blue as B, Green as G, Red as R};
        match (pattern.at(0, y), pattern.at(1, y)) {
            (R, _) => bayer_row::<RED, GREEN>(&rows, out),
            (B, _) => bayer_row::<BLUE, GREEN>(&rows, out),
            (G, R) => bayer_row::<GREEN, RED>(&rows, out),
            (G, _) => bayer_row::<GREEN, BLUE>(&rows, out),
        }
    }
}

/// The filter colours as const parameters of [`bayer_row`].
const RED: u8 = 0;
const GREEN: u8 = 1;
const BLUE: u8 = 2;

/// A Bayer row and the rows above and below it (mirrored at the frame's edges), each `width`
/// pixels.
struct BayerRows<'a> {
    up: &'a [u8],
    here: &'a [u8],
    down: &'a [u8],
}

impl BayerRows<'_> {
    /// The luminance of the pixel at `x` of filter colour `C` in a row of red (`red_row`: its
    /// green pixels have red beside them) or blue, with its left and right neighbours at `l`
    /// and `r`.
    #[inline(always)]
    fn luminance<const C: u8>(&self, red_row: bool, l: usize, x: usize, r: usize) -> u8 {
        let (up, here, down) = (self.up, self.here, self.down);
        let mean2 = |a: u8, b: u8| (u16::from(a) + u16::from(b)).div_ceil(2) as u8;
        let mean4 = |a: u8, b: u8, c: u8, d: u8| {
            ((u16::from(a) + u16::from(b) + u16::from(c) + u16::from(d) + 2) / 4) as u8
        };
        let (red, green, blue) = match C {
            RED => (
                here[x],
                mean4(here[l], here[r], up[x], down[x]),
                mean4(up[l], up[r], down[l], down[r]),
            ),
            BLUE => (
                mean4(up[l], up[r], down[l], down[r]),
                mean4(here[l], here[r], up[x], down[x]),
                here[x],
            ),
            _ if red_row => (mean2(here[l], here[r]), here[x], mean2(up[x], down[x])),
            _ => (mean2(up[x], down[x]), here[x], mean2(here[l], here[r])),
        };
        luminance(red, green, blue)
    }
}

/// One Bayer row whose even columns are of colour `EVEN` and odd ones of `ODD` into `out`.
fn bayer_row<const EVEN: u8, const ODD: u8>(rows: &BayerRows<'_>, out: &mut [u8]) {
    let width = out.len();
    let red_row = EVEN == RED || ODD == RED;
    // The edge columns mirror: column -1 reads column 1, column `width` reads `width - 2`.
    out[0] = rows.luminance::<EVEN>(red_row, 1, 0, 1);
    let last = width - 1;
    let mut x = 1;
    // Pairs of interior columns: an odd one, then an even one.
    while x + 2 < width {
        out[x] = rows.luminance::<ODD>(red_row, x - 1, x, x + 1);
        out[x + 1] = rows.luminance::<EVEN>(red_row, x, x + 1, x + 2);
        x += 2;
    }
    if x < last {
        out[x] = rows.luminance::<ODD>(red_row, x - 1, x, x + 1);
    }
    out[last] = if last.is_multiple_of(2) {
        rows.luminance::<EVEN>(red_row, last - 1, last, last - 1)
    } else {
        rows.luminance::<ODD>(red_row, last - 1, last, last - 1)
    };
}

/// The grayscale pixels of `data` (laid out as `layout`, as returned by [`validate`] for the same
/// message), `width * height` bytes: for a tightly packed gray plane (`mono8`, NV12's and NV21's
/// Y plane) the message's own bytes (no copy), otherwise converted into `scratch` by
/// [`to_gray`].
pub fn gray_view<'a>(data: &'a [u8], layout: &Layout, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    let n = layout.width * layout.height;
    if layout.encoding.is_gray_plane() && layout.step == layout.width && data.len() >= n {
        return &data[..n];
    }
    to_gray(data, layout, scratch);
    scratch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(width: u32, height: u32, encoding: &str, step: u32, len: usize) -> Image {
        Image {
            width,
            height,
            encoding: encoding.into(),
            step,
            data: vec![7; len],
            ..Default::default()
        }
    }

    #[test]
    fn accepts_each_encoding_with_padding() {
        for (enc, bpp) in [
            ("mono8", 1),
            ("rgb8", 3),
            ("bgr8", 3),
            ("rgba8", 4),
            ("bgra8", 4),
        ] {
            let m = msg(5, 3, enc, 5 * bpp + 2, (5 * bpp as usize + 2) * 3);
            let layout = validate(&m).unwrap();
            assert_eq!(layout.encoding.bytes_per_pixel(), bpp as usize);
            let mut out = Vec::new();
            to_gray(&m.data, &layout, &mut out);
            assert_eq!(out, vec![7; 15], "{enc}");
        }
    }

    #[test]
    fn gray_view_borrows_packed_mono8_and_converts_the_rest() {
        let m = msg(4, 2, "mono8", 4, 8);
        let mut scratch = Vec::new();
        let v = gray_view(&m.data, &validate(&m).unwrap(), &mut scratch);
        assert_eq!(
            v.as_ptr(),
            m.data.as_ptr(),
            "packed mono8 must not be copied"
        );
        assert!(scratch.is_empty());
        let m = msg(4, 2, "mono8", 6, 12);
        let v = gray_view(&m.data, &validate(&m).unwrap(), &mut scratch).to_vec();
        assert_eq!(v, vec![7; 8]);
        let m = msg(4, 2, "bgr8", 12, 24);
        let v = gray_view(&m.data, &validate(&m).unwrap(), &mut scratch).to_vec();
        assert_eq!(v, vec![7; 8]);
    }

    #[test]
    fn large_frames_convert_in_bands_like_small_ones() {
        // Above PARALLEL_PIXELS, with padding and an odd height, every pixel as the scalar rule.
        let (w, h, bpp, pad) = (1931usize, 1097usize, 3usize, 5usize);
        let step = w * bpp + pad;
        let data: Vec<u8> = (0..step * h).map(|i| (i * 7 % 251) as u8).collect();
        let m = Image {
            width: w as u32,
            height: h as u32,
            encoding: "bgr8".into(),
            step: step as u32,
            data,
            ..Default::default()
        };
        let layout = validate(&m).unwrap();
        let mut out = Vec::new();
        to_gray(&m.data, &layout, &mut out);
        assert_eq!(out.len(), w * h);
        for y in [0, 1, h / 2, h - 1] {
            for x in [0, 1, w / 3, w - 1] {
                let p = &m.data[y * step + x * 3..];
                assert_eq!(out[y * w + x], luminance(p[2], p[1], p[0]), "({x}, {y})");
            }
        }
        assert!(w * h >= PARALLEL_PIXELS);
    }

    #[test]
    fn conversion_into_a_slice_equals_to_gray() {
        // Every encoding, packed and padded rows, a small frame and one converted in bands;
        // the destination starts as garbage, so a byte left unwritten shows.
        for (w, h) in [(7usize, 5usize), (1931, 1097)] {
            for (enc, bpp) in [
                ("mono8", 1usize),
                ("rgb8", 3),
                ("bgr8", 3),
                ("rgba8", 4),
                ("bgra8", 4),
            ] {
                for pad in [0usize, 3] {
                    let step = w * bpp + pad;
                    let m = Image {
                        width: w as u32,
                        height: h as u32,
                        encoding: enc.into(),
                        step: step as u32,
                        data: (0..step * h).map(|i| (i * 13 % 253) as u8).collect(),
                        ..Default::default()
                    };
                    let layout = validate(&m).unwrap();
                    let mut want = Vec::new();
                    to_gray(&m.data, &layout, &mut want);
                    let mut got = vec![0xa5; w * h];
                    to_gray_into(&m.data, &layout, &mut got).unwrap();
                    assert!(got == want, "{enc} {w}x{h}, {pad} bytes of padding");
                }
            }
        }
    }

    #[test]
    fn conversion_into_a_slice_refuses_other_sizes_and_writes_nothing() {
        let m = msg(5, 3, "rgb8", 17, 51);
        let layout = validate(&m).unwrap();
        for len in [0, 14, 16] {
            let mut out = vec![1; len];
            assert_eq!(
                to_gray_into(&m.data, &layout, &mut out),
                Err(GrayIntoError::Destination {
                    width: 5,
                    height: 3,
                    expected: 15,
                    actual: len
                })
            );
            assert!(out.iter().all(|&b| b == 1), "{len}");
        }
        // Layouts that do not fit the data: short data, rows shorter than a row of pixels, an
        // empty frame, a zero step. None panics, none writes.
        let mut out = vec![1; 15];
        let bad = [
            (&m.data[..48], layout),
            (&m.data[..], Layout { step: 14, ..layout }),
            (&m.data[..], Layout { step: 0, ..layout }),
        ];
        for (data, layout) in bad {
            assert!(
                matches!(
                    to_gray_into(data, &layout, &mut out),
                    Err(GrayIntoError::Layout { .. })
                ),
                "{layout:?}"
            );
            assert!(out.iter().all(|&b| b == 1), "{layout:?}");
        }
        let empty = Layout {
            width: 0,
            step: 0,
            ..layout
        };
        assert!(to_gray_into(&m.data, &empty, &mut []).is_err());
        // The last row needs no padding after it (the data may end with the pixels).
        assert!(to_gray_into(&m.data[..49], &layout, &mut out).is_ok());
    }

    #[test]
    fn hand_made_layouts_without_rows_convert_nothing_and_do_not_panic() {
        let data = [7u8; 64];
        for (width, height, step) in [(0, 4, 4), (4, 0, 4), (4, 4, 0), (0, 0, 0)] {
            for encoding in [Encoding::Mono8, Encoding::Bgra8] {
                let layout = Layout {
                    encoding,
                    width,
                    height,
                    step,
                    big_endian: false,
                };
                let mut out = vec![1u8; 3];
                to_gray(&data, &layout, &mut out);
                assert_eq!(out, vec![0u8; width * height], "{layout:?}");
                let mut area = vec![1u8; width * height];
                assert!(
                    to_gray_into(&data, &layout, &mut area).is_err(),
                    "{layout:?}"
                );
            }
        }
    }

    #[test]
    fn rejects_malformed() {
        assert!(matches!(
            validate(&msg(4, 4, "mono8", 4, 15)),
            Err(ImageMsgError::DataLength { .. })
        ));
        assert!(matches!(
            validate(&msg(0, 4, "mono8", 0, 0)),
            Err(ImageMsgError::Size { .. })
        ));
        assert!(matches!(
            validate(&msg(4, 0, "mono8", 4, 0)),
            Err(ImageMsgError::Size { .. })
        ));
        assert!(matches!(
            validate(&msg(4, 4, "yuv420", 8, 32)),
            Err(ImageMsgError::Encoding(_))
        ));
        assert!(matches!(
            validate(&msg(4, 4, "rgb8", 11, 44)),
            Err(ImageMsgError::Step { .. })
        ));
        assert!(matches!(
            validate(&msg(100_000, 100_000, "mono8", 100_000, 16)),
            Err(ImageMsgError::Size { .. })
        ));
        // Within the size limits but the data is short: step * height overflows nothing in u64.
        assert!(matches!(
            validate(&msg(4000, 4000, "mono8", u32::MAX, 16)),
            Err(ImageMsgError::Size { .. }) | Err(ImageMsgError::DataLength { .. })
        ));
    }

    #[test]
    fn colour_orders_agree() {
        let (r, g, b) = (200u8, 100u8, 30u8);
        let y = luminance(r, g, b);
        // 0.299*200 + 0.587*100 + 0.114*30 = 59.8 + 58.7 + 3.42 = 121.92
        assert_eq!(y, 122);
        let cases: [(&str, Vec<u8>); 4] = [
            ("rgb8", vec![r, g, b]),
            ("bgr8", vec![b, g, r]),
            ("rgba8", vec![r, g, b, 9]),
            ("bgra8", vec![b, g, r, 9]),
        ];
        for (enc, px) in cases {
            let m = Image {
                width: 1,
                height: 1,
                encoding: enc.into(),
                step: px.len() as u32,
                data: px,
                ..Default::default()
            };
            let mut out = Vec::new();
            to_gray(&m.data, &validate(&m).unwrap(), &mut out);
            assert_eq!(out, vec![y], "{enc}");
        }
    }

    #[test]
    fn luminance_extremes() {
        assert_eq!(luminance(255, 255, 255), 255);
        assert_eq!(luminance(0, 0, 0), 0);
        assert_eq!(luminance(255, 0, 0), 76); // 76.245
        assert_eq!(luminance(0, 255, 0), 150); // 149.685
        assert_eq!(luminance(0, 0, 255), 29); // 29.07
    }

    /// An `encoding` message of `width x height` whose rows are `step` bytes, filled with a
    /// pattern (the padding included, so that a conversion reading it shows).
    fn patterned(encoding: &str, width: u32, height: u32, step: u32, len: usize) -> Image {
        Image {
            width,
            height,
            encoding: encoding.into(),
            step,
            data: (0..len).map(|i| (i * 37 % 251) as u8).collect(),
            ..Default::default()
        }
    }

    fn gray_of(m: &Image) -> Vec<u8> {
        let layout = validate(m).unwrap();
        let mut out = Vec::new();
        to_gray(&m.data, &layout, &mut out);
        out
    }

    #[test]
    fn yuv_422_is_its_y_samples_with_odd_widths_and_padding() {
        for (enc, y_at) in [("yuv422_yuy2", 0), ("yuyv", 0), ("uyvy", 1), ("yuv422", 1)] {
            for (w, pad) in [(6usize, 0usize), (5, 0), (7, 3)] {
                let (h, step) = (3usize, 2 * w + pad);
                let m = patterned(enc, w as u32, h as u32, step as u32, step * h);
                let want: Vec<u8> = (0..h)
                    .flat_map(|y| (0..w).map(move |x| (y, x)))
                    .map(|(y, x)| m.data[y * step + 2 * x + y_at])
                    .collect();
                assert_eq!(gray_of(&m), want, "{enc} {w}x{h} step {step}");
            }
        }
    }

    #[test]
    fn nv12_and_nv21_are_their_y_plane_and_packed_ones_are_not_copied() {
        for enc in ["nv12", "nv21"] {
            for (w, h, step) in [(6usize, 4usize, 6usize), (5, 2, 8)] {
                let m = patterned(enc, w as u32, h as u32, step as u32, step * h * 3 / 2);
                let want: Vec<u8> = (0..h)
                    .flat_map(|y| m.data[y * step..y * step + w].to_vec())
                    .collect();
                assert_eq!(gray_of(&m), want, "{enc} {w}x{h}");
                let mut scratch = Vec::new();
                let view = gray_view(&m.data, &validate(&m).unwrap(), &mut scratch);
                assert_eq!(view, &want[..]);
                assert_eq!(
                    view.as_ptr() == m.data.as_ptr(),
                    step == w,
                    "a packed Y plane is used where it lies"
                );
            }
        }
    }

    #[test]
    fn mono16_is_rounded_to_8_bits_in_the_declared_byte_order() {
        // (v + 128) / 257 is v / 257 rounded to nearest: 128 / 257 = 0.498 -> 0,
        // 129 / 257 = 0.502 -> 1, 25828 / 257 = 100.498 -> 100, 65406 / 257 = 254.498 -> 254.
        let samples: [u16; 6] = [0, 128, 129, 25_828, 65_406, 65_535];
        let want = vec![0u8, 0, 1, 100, 254, 255];
        for enc in ["mono16", "16UC1"] {
            for big_endian in [false, true] {
                let mut data = Vec::new();
                for v in samples {
                    data.extend(if big_endian {
                        v.to_be_bytes()
                    } else {
                        v.to_le_bytes()
                    });
                    data.push(0xee);
                }
                let m = Image {
                    width: 1,
                    height: 6,
                    encoding: enc.into(),
                    step: 3,
                    is_bigendian: u8::from(big_endian),
                    data,
                    ..Default::default()
                };
                assert_eq!(gray_of(&m), want, "{enc} big endian {big_endian}");
            }
        }
        // Every 8-bit gray written as 16 bits (v * 257) comes back as it was.
        let m = Image {
            width: 256,
            height: 1,
            encoding: "mono16".into(),
            step: 512,
            data: (0..=255u16).flat_map(|v| (v * 257).to_le_bytes()).collect(),
            ..Default::default()
        };
        assert_eq!(gray_of(&m), (0..=255u8).collect::<Vec<_>>());
    }

    #[test]
    fn opencv_8uc3_and_8uc4_are_bgr_and_bgra() {
        let px = [30u8, 100, 200, 9];
        for (twin, enc, bpp) in [("8UC3", "bgr8", 3), ("8UC4", "bgra8", 4)] {
            let m = |e: &str| Image {
                width: 1,
                height: 1,
                encoding: e.into(),
                step: bpp,
                data: px[..bpp as usize].to_vec(),
                ..Default::default()
            };
            assert_eq!(gray_of(&m(twin)), gray_of(&m(enc)));
            assert_eq!(gray_of(&m(twin)), vec![luminance(200, 100, 30)]);
        }
    }

    /// The filter colour (0 red, 1 green, 2 blue) at (`x`, `y`) of a pattern named as ROS does.
    fn filter(pattern: &str, x: usize, y: usize) -> usize {
        let letter = pattern.as_bytes()[(y % 2) * 2 + x % 2];
        match letter {
            b'r' => 0,
            b'g' => 1,
            _ => 2,
        }
    }

    /// A Bayer mosaic of `rgb` (a colour per pixel, row-major) under `pattern`.
    fn mosaic(pattern: &str, rgb: &[[u8; 3]], w: usize, h: usize, step: usize) -> Image {
        let mut data = vec![0xee; step * h];
        for y in 0..h {
            for x in 0..w {
                data[y * step + x] = rgb[y * w + x][filter(pattern, x, y)];
            }
        }
        Image {
            width: w as u32,
            height: h as u32,
            encoding: format!("bayer_{pattern}8"),
            step: step as u32,
            data,
            ..Default::default()
        }
    }

    /// Bilinear demosaicing written the long way: a pixel's own colour is its sample; each
    /// missing colour is the rounded mean of the pixels of that colour among its 8 neighbours
    /// (mirrored at the border, which keeps the pattern's colour at each place), which for a
    /// Bayer pattern are the 2 or 4 nearest ones.
    fn demosaic_reference(m: &Image, pattern: &str) -> Vec<u8> {
        let (w, h, step) = (m.width as i64, m.height as i64, m.step as i64);
        let mirror = |i: i64, n: i64| {
            if i < 0 {
                -i
            } else if i >= n {
                2 * n - 2 - i
            } else {
                i
            }
        };
        let sample =
            |x: i64, y: i64| u32::from(m.data[(mirror(y, h) * step + mirror(x, w)) as usize]);
        let colour_at =
            |x: i64, y: i64| filter(pattern, x.rem_euclid(2) as usize, y.rem_euclid(2) as usize);
        let mut out = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let mut rgb = [0u8; 3];
                for (colour, value) in rgb.iter_mut().enumerate() {
                    if colour_at(x, y) == colour {
                        *value = sample(x, y) as u8;
                        continue;
                    }
                    let (mut sum, mut n) = (0u32, 0u32);
                    for (dx, dy) in [
                        (-1, -1),
                        (0, -1),
                        (1, -1),
                        (-1, 0),
                        (1, 0),
                        (-1, 1),
                        (0, 1),
                        (1, 1),
                    ] {
                        if colour_at(x + dx, y + dy) == colour {
                            sum += sample(x + dx, y + dy);
                            n += 1;
                        }
                    }
                    assert!(
                        n == 2 || n == 4,
                        "{pattern} ({x}, {y}) colour {colour}: {n}"
                    );
                    *value = ((sum + n / 2) / n) as u8;
                }
                out.push(luminance(rgb[0], rgb[1], rgb[2]));
            }
        }
        out
    }

    #[test]
    fn bayer_of_a_uniform_colour_is_its_luminance() {
        for pattern in ["rggb", "bggr", "gbrg", "grbg"] {
            for (w, h) in [(6usize, 4usize), (5, 3), (2, 2)] {
                let colour = [200u8, 100, 30];
                let m = mosaic(pattern, &vec![colour; w * h], w, h, w + 1);
                assert_eq!(
                    gray_of(&m),
                    vec![luminance(200, 100, 30); w * h],
                    "{pattern} {w}x{h}"
                );
            }
        }
    }

    #[test]
    fn bayer_demosaicing_equals_the_reference_with_odd_sizes_and_padding() {
        for pattern in ["rggb", "bggr", "gbrg", "grbg"] {
            for (w, h, pad) in [(8usize, 6usize, 0usize), (7, 5, 3), (2, 3, 1)] {
                let rgb: Vec<[u8; 3]> = (0..w * h)
                    .map(|i| {
                        [
                            (i * 29 % 256) as u8,
                            (i * 53 % 251) as u8,
                            (i * 97 % 241) as u8,
                        ]
                    })
                    .collect();
                let m = mosaic(pattern, &rgb, w, h, w + pad);
                assert_eq!(
                    gray_of(&m),
                    demosaic_reference(&m, pattern),
                    "{pattern} {w}x{h} pad {pad}"
                );
            }
        }
    }

    #[test]
    fn bad_variants_of_the_camera_encodings_are_refused() {
        // Truncated YUV, an odd NV12 height, a step shorter than a YUV row, NV12 without its
        // chroma plane, a Bayer frame too small to demosaic.
        let cases: [(Image, &str); 7] = [
            (patterned("yuyv", 4, 4, 8, 31), "data length"),
            (patterned("uyvy", 5, 2, 10, 21), "data length"),
            (patterned("nv12", 4, 3, 4, 18), "shape"),
            (patterned("nv21", 4, 4, 4, 16), "data length"),
            (patterned("yuv422_yuy2", 4, 4, 7, 28), "step"),
            (patterned("mono16", 4, 4, 6, 24), "step"),
            (patterned("bayer_rggb8", 1, 4, 1, 4), "shape"),
        ];
        for (m, reason) in cases {
            let err = validate(&m).unwrap_err();
            let kind = err.kind();
            assert_eq!(kind.reason, reason, "{m:?}: {err}");
            assert_eq!(kind.encoding, Encoding::parse(&m.encoding), "{err}");
        }
        // The chroma plane is part of the length: 4x4 NV12 is 24 bytes.
        assert!(validate(&patterned("nv12", 4, 4, 4, 24)).is_ok());
    }

    #[test]
    fn each_kind_is_logged_once() {
        let mut logged = LoggedKinds::default();
        let short = validate(&patterned("yuyv", 4, 4, 8, 31)).unwrap_err();
        let short_nv12 = validate(&patterned("nv12", 4, 4, 4, 23)).unwrap_err();
        let unknown = validate(&patterned("yuv420", 4, 4, 4, 16)).unwrap_err();
        assert!(logged.first(short.kind()));
        assert!(!logged.first(short.kind()));
        assert!(logged.first(short_nv12.kind()), "another encoding");
        assert!(logged.first(unknown.kind()));
        let other_unknown = validate(&patterned("yuv411", 4, 4, 4, 16)).unwrap_err();
        assert!(!logged.first(other_unknown.kind()));
    }

    #[test]
    fn every_listed_encoding_parses() {
        for name in ENCODING_NAMES {
            assert!(Encoding::parse(name).is_some(), "{name}");
        }
        for near_miss in ["MONO8", "bayer_rggb16", "yuv420", "nv16", ""] {
            assert_eq!(Encoding::parse(near_miss), None, "{near_miss}");
        }
    }

    #[test]
    fn every_encoding_converts_in_bands_like_in_one_pass() {
        // Above PARALLEL_PIXELS with padding and an odd height: the banded conversion equals
        // one band over the whole frame (Bayer bands read the rows around their edges).
        let (w, h) = (1931usize, 1098usize);
        assert!(w * h >= PARALLEL_PIXELS);
        let mut done = Vec::new();
        for enc in ENCODING_NAMES {
            let encoding = Encoding::parse(enc).unwrap();
            // Aliases convert alike: one name of each.
            if done.contains(&encoding) {
                continue;
            }
            done.push(encoding);
            let step = w * encoding.bytes_per_pixel() + 3;
            let len = encoding.data_len(step as u32, h as u32) as usize;
            let m = patterned(enc, w as u32, h as u32, step as u32, len);
            let layout = validate(&m).unwrap();
            let banded = gray_of(&m);
            let mut whole = vec![0u8; w * h];
            convert_band(&m.data, &layout, 0, &mut whole);
            assert!(banded == whole, "{enc}");
            let mut into = vec![0xa5u8; w * h];
            to_gray_into(&m.data, &layout, &mut into).unwrap();
            assert!(into == whole, "{enc}");
        }
    }
}
