//! Checking incoming `sensor_msgs/Image` messages and turning them into 8-bit grayscale.
//!
//! Every declared field is checked against the others and against the core's size limits
//! *before* the node allocates or indexes anything with it: a message that declares
//! 100000 x 100000 pixels but carries a few bytes is rejected by arithmetic alone.
//!
//! Colour is converted with `Y = 0.299 R + 0.587 G + 0.114 B`, rounded half up, computed
//! exactly in integers as `(299 R + 587 G + 114 B + 500) / 1000`.

use crate::msg::Image;

/// The pixel encodings the node accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// One byte per pixel, gray.
    Mono8,
    /// R, G, B.
    Rgb8,
    /// B, G, R.
    Bgr8,
    /// R, G, B, A.
    Rgba8,
    /// B, G, R, A.
    Bgra8,
}

impl Encoding {
    /// Parses a `sensor_msgs/Image` encoding string (exact, as ROS writes them).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "mono8" | "8UC1" => Encoding::Mono8,
            "rgb8" => Encoding::Rgb8,
            "bgr8" => Encoding::Bgr8,
            "rgba8" => Encoding::Rgba8,
            "bgra8" => Encoding::Bgra8,
            _ => return None,
        })
    }

    /// Bytes per pixel.
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            Encoding::Mono8 => 1,
            Encoding::Rgb8 | Encoding::Bgr8 => 3,
            Encoding::Rgba8 | Encoding::Bgra8 => 4,
        }
    }

    /// Byte offsets of R, G and B inside one pixel (meaningless for mono8).
    fn rgb_offsets(self) -> (usize, usize, usize) {
        match self {
            Encoding::Rgb8 | Encoding::Rgba8 | Encoding::Mono8 => (0, 1, 2),
            Encoding::Bgr8 | Encoding::Bgra8 => (2, 1, 0),
        }
    }
}

/// Why an image message was dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageMsgError {
    /// The encoding is not one of mono8, rgb8, bgr8, rgba8, bgra8.
    #[error("unsupported encoding {0:?} (expected mono8, rgb8, bgr8, rgba8 or bgra8)")]
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
    /// `step` is smaller than one row of pixels.
    #[error("step {step} is smaller than width {width} x {bpp} bytes per pixel")]
    Step {
        /// Declared step.
        step: u32,
        /// Declared width.
        width: u32,
        /// Bytes per pixel of the encoding.
        bpp: usize,
    },
    /// `data` does not hold exactly `step * height` bytes.
    #[error("data has {actual} bytes, step {step} x height {height} requires {expected}")]
    DataLength {
        /// Declared step.
        step: u32,
        /// Declared height.
        height: u32,
        /// `step * height` (saturating).
        expected: u64,
        /// `data.len()`.
        actual: usize,
    },
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
}

/// Checks `msg` without allocating: known encoding, size within the core's limits, step covers
/// a row, and `data.len() == step * height`.
pub fn validate(msg: &Image) -> Result<Layout, ImageMsgError> {
    validate_fields(
        &msg.encoding,
        msg.width,
        msg.height,
        msg.step,
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
    let bpp = encoding.bytes_per_pixel();
    // Cannot overflow: width <= MAX_DIMENSION after check_dimensions.
    if (step as usize) < w * bpp {
        return Err(ImageMsgError::Step { step, width, bpp });
    }
    let expected = u64::from(step) * u64::from(height);
    if expected != data_len as u64 {
        return Err(ImageMsgError::DataLength {
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
    /// an empty frame, rows (`step`) shorter than a row of pixels, or data that ends before
    /// the last row's pixels do.
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
    convert_frame(data, layout, out);
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
        encoding,
        width,
        height,
        step,
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
    // The conversion stops where the data or a row runs out: checked here, so that it writes
    // every byte of `out` (and never sees a zero width or step, which it cannot split by).
    let row_bytes = width.saturating_mul(encoding.bytes_per_pixel());
    let data_end = step
        .saturating_mul(height.saturating_sub(1))
        .saturating_add(row_bytes);
    if expected == 0 || step < row_bytes || data.len() < data_end {
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

/// The conversion of [`to_gray`] and [`to_gray_into`]: `data` (laid out as `layout`) into `out`
/// (`width * height` bytes), row by row until either runs out.
fn convert_frame(data: &[u8], layout: &Layout, out: &mut [u8]) {
    let Layout {
        encoding,
        width,
        height,
        step,
    } = *layout;
    // Nothing to convert, and no rows to split `data` or `out` by: only a hand-made layout
    // (`validate` refuses zero sizes) gets here. `to_gray` then leaves `out` zeroed.
    if width == 0 || height == 0 || step == 0 {
        return;
    }
    // Large frames are converted in bands on several threads (a 4K rgb8 frame is 25 MB).
    let threads = if width * height >= PARALLEL_PIXELS {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8)
    } else {
        1
    };
    let band = height.div_ceil(threads).max(1);
    let (ro, go, bo) = encoding.rgb_offsets();
    let convert = |src: &[u8], dst: &mut [u8]| match encoding {
        Encoding::Mono8 => rows::<1>(src, dst, step, width, (0, 0, 0)),
        Encoding::Rgb8 | Encoding::Bgr8 => rows::<3>(src, dst, step, width, (ro, go, bo)),
        Encoding::Rgba8 | Encoding::Bgra8 => rows::<4>(src, dst, step, width, (ro, go, bo)),
    };
    if threads == 1 {
        convert(data, out);
        return;
    }
    std::thread::scope(|scope| {
        for (k, dst) in out.chunks_mut(band * width).enumerate() {
            let start = (k * band * step).min(data.len());
            let src = &data[start..];
            scope.spawn(move || convert(src, dst));
        }
    });
}

/// Frames of at least this many pixels are converted on several threads.
const PARALLEL_PIXELS: usize = 1 << 21;

/// Converts the rows of `src` (each `step` bytes, `BPP` bytes per pixel) into `dst` (`width`
/// bytes per row) until either runs out.
fn rows<const BPP: usize>(
    src: &[u8],
    dst: &mut [u8],
    step: usize,
    width: usize,
    (ro, go, bo): (usize, usize, usize),
) {
    for (srow, drow) in src.chunks(step).zip(dst.chunks_exact_mut(width)) {
        let Some(srow) = srow.get(..width * BPP) else {
            return;
        };
        if BPP == 1 {
            drow.copy_from_slice(srow);
        } else {
            for (d, p) in drow.iter_mut().zip(srow.chunks_exact(BPP)) {
                *d = luminance(p[ro], p[go], p[bo]);
            }
        }
    }
}

/// The grayscale pixels of `data` (laid out as `layout`, as returned by [`validate`] for the same
/// message), `width * height` bytes: for tightly packed `mono8` the message's own bytes (no
/// copy), otherwise converted into `scratch` by [`to_gray`].
pub fn gray_view<'a>(data: &'a [u8], layout: &Layout, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    let n = layout.width * layout.height;
    if layout.encoding == Encoding::Mono8 && layout.step == layout.width && data.len() >= n {
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
            validate(&msg(4, 4, "yuv422", 8, 32)),
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
}
