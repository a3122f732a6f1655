//! `sensor_msgs/CompressedImage`, as image_transport's `compressed` transport sends it, decoded
//! to the luminance the pipeline takes.
//!
//! The transport (ROS 2's `compressed_image_transport`) writes JPEG or PNG bytes and a format
//! string naming the raw encoding and the codec, e.g. `"bgr8; jpeg compressed bgr8"`,
//! `"mono8; png compressed mono8"`, `"mono16; png compressed mono16"`; older and other
//! publishers write the codec alone (`"jpeg"`, `"png"`). [`parse_format`] reads the codec; the
//! other words do not matter here, because a JPEG or PNG file carries its own colour layout
//! (the transport writes a standard file whatever the raw encoding was). `compressedDepth`
//! (`compressed_depth_image_transport`'s quantised depth) is refused.
//!
//! Decoding uses the `image` crate, as the command line does for image files, with the same
//! safeguards (the size in the file's header is checked against the core's limits before any
//! pixel is decoded; the decoder runs under allocation limits) and the same luminance: gray as
//! it is, 16-bit samples rounded to 8 bits (`(v + 128) / 257`), colour by the BT.601 weights of
//! [`crate::convert::luminance`], alpha ignored. The decoder writes into a buffer the node
//! reuses, and the luminance is computed in place there: no image is allocated per frame.

use std::io::Cursor;

use image::{ColorType, ImageDecoder, ImageFormat, ImageReader, Limits};
use ros2_client::{Message, MessageTypeName};
use serde::{Deserialize, Serialize};

use crate::convert::luminance;
use crate::msg::Header;

/// `sensor_msgs/CompressedImage`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompressedImage {
    /// Stamp and frame of the image.
    pub header: Header,
    /// The codec and encodings, e.g. `"bgr8; jpeg compressed bgr8"` or `"png"`.
    pub format: String,
    /// The compressed file's bytes.
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}
impl Message for CompressedImage {}

/// DDS type name of [`CompressedImage`].
pub fn compressed_image_type() -> MessageTypeName {
    MessageTypeName::new("sensor_msgs", "CompressedImage")
        .with_type_hash(crate::msg::type_hashes::COMPRESSED_IMAGE)
}

/// How the node receives images: image_transport's transport of its image subscription
/// (the `image_transport` parameter, at start-up only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageTransport {
    /// `sensor_msgs/Image` on the image topic.
    #[default]
    Raw,
    /// `sensor_msgs/CompressedImage` on `<image topic>/compressed`, decoded on receipt.
    Compressed,
}

impl ImageTransport {
    /// Parses the parameter's value: `raw` or `compressed`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "raw" => Some(ImageTransport::Raw),
            "compressed" => Some(ImageTransport::Compressed),
            _ => None,
        }
    }

    /// The parameter's value for this transport.
    pub fn name(self) -> &'static str {
        match self {
            ImageTransport::Raw => "raw",
            ImageTransport::Compressed => "compressed",
        }
    }

    /// The topic this transport subscribes to for the (resolved) image topic `base`, as
    /// image_transport names it.
    pub fn topic(self, base: &str) -> String {
        match self {
            ImageTransport::Raw => base.to_string(),
            ImageTransport::Compressed => format!("{}/compressed", base.trim_end_matches('/')),
        }
    }

    /// The message type of the topic.
    pub fn message_type(self) -> MessageTypeName {
        match self {
            ImageTransport::Raw => crate::msg::image_type(),
            ImageTransport::Compressed => compressed_image_type(),
        }
    }

    /// The message type's ROS name, for logs.
    pub fn message_name(self) -> &'static str {
        match self {
            ImageTransport::Raw => "sensor_msgs/Image",
            ImageTransport::Compressed => "sensor_msgs/CompressedImage",
        }
    }
}

/// The codecs the node decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// JPEG.
    Jpeg,
    /// PNG.
    Png,
}

impl Codec {
    fn image_format(self) -> ImageFormat {
        match self {
            Codec::Jpeg => ImageFormat::Jpeg,
            Codec::Png => ImageFormat::Png,
        }
    }
}

/// Why a compressed image was dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompressedError {
    /// The format string names no codec the node decodes.
    #[error(
        "unsupported compressed format {0:?} (expected compressed_image_transport's \
         \"<encoding>; jpeg compressed <encoding>\" or \"...; png compressed ...\", or \"jpeg\" / \"png\")"
    )]
    Format(String),
    /// The message carries no bytes.
    #[error("{0:?} image with no data")]
    Empty(Codec),
    /// The file's header declares a size the core cannot process.
    #[error("{codec:?} image {width}x{height}: {reason}")]
    Size {
        /// The codec.
        codec: Codec,
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// The core's verdict.
        reason: surfcl_core::ImageError,
    },
    /// The decoder failed: a corrupt or truncated file, or one of another codec.
    #[error("cannot decode {codec:?} image: {message}")]
    Decode {
        /// The codec.
        codec: Codec,
        /// The decoder's words.
        message: String,
    },
    /// The decoder gave a sample layout without a luminance rule (floating point).
    #[error("{codec:?} image decoded as {color:?}, which has no luminance rule")]
    Color {
        /// The codec.
        codec: Codec,
        /// The decoded layout.
        color: String,
    },
}

impl CompressedError {
    /// The kind of this error, for logging the first of each kind: what went wrong and, where
    /// known, with which codec.
    pub fn kind(&self) -> (&'static str, Option<Codec>) {
        match self {
            CompressedError::Format(_) => ("format", None),
            CompressedError::Empty(codec) => ("empty", Some(*codec)),
            CompressedError::Size { codec, .. } => ("size", Some(*codec)),
            CompressedError::Decode { codec, .. } => ("decode", Some(*codec)),
            CompressedError::Color { codec, .. } => ("color", Some(*codec)),
        }
    }
}

/// The codec of a `CompressedImage` format string: the first word after the `;` when there is
/// one (`"bgr8; jpeg compressed bgr8"`), else the whole string (`"jpeg"`, `"jpg"`, `"png"`);
/// case is ignored.
pub fn parse_format(format: &str) -> Result<Codec, CompressedError> {
    let codec_part = match format.split_once(';') {
        Some((_, rest)) => rest,
        None => format,
    };
    let mut words = codec_part.split_whitespace();
    let codec = words.next().unwrap_or("").to_ascii_lowercase();
    // After the codec, compressed_image_transport writes "compressed" and the target encoding;
    // compressed_depth_image_transport writes "compressedDepth" first, which is refused.
    let rest_ok = matches!(words.next(), None | Some("compressed"));
    match codec.as_str() {
        "jpeg" | "jpg" if rest_ok => Ok(Codec::Jpeg),
        "png" if rest_ok => Ok(Codec::Png),
        _ => Err(CompressedError::Format(format.to_string())),
    }
}

/// Allocation allowed to the decoder beyond the decoded image (rows, chunk buffers, the
/// ancillary chunks a PNG decoder inflates while looking for the header).
const DECODER_ALLOC: u64 = 16 << 20;

/// Decoding limits matching the core's: no side above `MAX_DIMENSION`, at most `max_alloc`.
fn limits(max_alloc: u64) -> Limits {
    let mut limits = Limits::default();
    let side = surfcl_core::image::MAX_DIMENSION as u32;
    limits.max_image_width = Some(side);
    limits.max_image_height = Some(side);
    limits.max_alloc = Some(max_alloc);
    limits
}

/// Decodes `data` (a file of the codec `format` names) into `out` (resized, capacity kept) as
/// `width * height` luminance bytes; returns `(width, height)`. On error `out` holds no image.
pub fn decode_gray(
    format: &str,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<(usize, usize), CompressedError> {
    out.clear();
    let codec = parse_format(format)?;
    if data.is_empty() {
        return Err(CompressedError::Empty(codec));
    }
    if codec == Codec::Jpeg && !has_jpeg_end(data) {
        return Err(CompressedError::Decode {
            codec,
            message: "no end-of-image marker at the end of the file: truncated".into(),
        });
    }
    let decode_error = |e: image::ImageError| CompressedError::Decode {
        codec,
        message: e.to_string(),
    };
    let decoder = |max_alloc: u64| {
        let mut reader = ImageReader::with_format(Cursor::new(data), codec.image_format());
        reader.limits(limits(max_alloc));
        reader.into_decoder().map_err(decode_error)
    };
    // The header first: a size the core cannot process is refused before anything is decoded.
    let (width, height) = decoder(DECODER_ALLOC)?.dimensions();
    surfcl_core::image::check_dimensions(width as usize, height as usize).map_err(|reason| {
        CompressedError::Size {
            codec,
            width,
            height,
            reason,
        }
    })?;
    let decoder = decoder(DECODER_ALLOC + u64::from(width) * u64::from(height) * 8)?;
    let color = decoder.color_type();
    let bytes = usize::try_from(decoder.total_bytes()).unwrap_or(usize::MAX);
    let pixels = width as usize * height as usize;
    // At most 8 bytes per pixel (RGBA16) of a size within the core's limits.
    out.resize(bytes, 0);
    if let Err(e) = decoder.read_image(out) {
        out.clear();
        return Err(decode_error(e));
    }
    if !to_luminance_in_place(out, color, pixels) {
        out.clear();
        return Err(CompressedError::Color {
            codec,
            color: format!("{color:?}"),
        });
    }
    Ok((width as usize, height as usize))
}

/// Whether a JPEG file ends with its end-of-image marker (`FF D9`), allowing a few bytes of
/// padding after it. The decoder fills what a truncated file lacks with gray and reports no
/// error; such a frame would give keypoints on the fill. The marker cannot occur inside the
/// entropy-coded data (an `FF` there is followed by `00` or a restart marker `D0`-`D7`).
fn has_jpeg_end(data: &[u8]) -> bool {
    const PADDING: usize = 64;
    let tail = &data[data.len().saturating_sub(PADDING + 2)..];
    tail.windows(2).any(|w| w == [0xff, 0xd9])
}

/// Reduces the decoded samples in `buf` (`pixels` pixels of `color`, 16-bit samples in native
/// byte order) to one luminance byte per pixel, in place, and truncates `buf` to them. `false`
/// (and `buf` untouched) for a layout without a luminance rule.
fn to_luminance_in_place(buf: &mut Vec<u8>, color: ColorType, pixels: usize) -> bool {
    // Pixel `i`'s bytes start at `i * bpp >= i`: each pixel is read before its byte `i` (or
    // any later one) is written, so the reduction can run front to back in the same buffer.
    let reduce16 = |b: &[u8], at: usize| {
        let v = u16::from_ne_bytes([b[at], b[at + 1]]);
        ((u32::from(v) + 128) / 257) as u8
    };
    let gray = |buf: &mut Vec<u8>, bpp: usize, pixel: &dyn Fn(&[u8]) -> u8| {
        for i in 0..pixels {
            let y = pixel(&buf[i * bpp..(i + 1) * bpp]);
            buf[i] = y;
        }
    };
    match color {
        ColorType::L8 => {}
        ColorType::La8 => gray(buf, 2, &|p| p[0]),
        ColorType::Rgb8 => gray(buf, 3, &|p| luminance(p[0], p[1], p[2])),
        ColorType::Rgba8 => gray(buf, 4, &|p| luminance(p[0], p[1], p[2])),
        ColorType::L16 => gray(buf, 2, &|p| reduce16(p, 0)),
        ColorType::La16 => gray(buf, 4, &|p| reduce16(p, 0)),
        ColorType::Rgb16 => gray(buf, 6, &|p| {
            luminance(reduce16(p, 0), reduce16(p, 2), reduce16(p, 4))
        }),
        ColorType::Rgba16 => gray(buf, 8, &|p| {
            luminance(reduce16(p, 0), reduce16(p, 2), reduce16(p, 4))
        }),
        _ => return false,
    }
    buf.truncate(pixels);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{DynamicImage, ImageBuffer, Luma, Rgb, Rgba};

    #[test]
    fn compressed_image_type_carries_its_hash() {
        let hash = crate::msg::type_hashes::COMPRESSED_IMAGE;
        assert_eq!(compressed_image_type().type_hash(), Some(hash));
        assert!(crate::msg::type_hashes::ALL.contains(&("sensor_msgs/msg/CompressedImage", hash)));
    }

    fn encode(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut bytes = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut bytes), format)
            .unwrap();
        bytes
    }

    /// A colour picture whose channels differ, with structure in every channel.
    fn colour_picture(w: u32, h: u32) -> image::RgbImage {
        ImageBuffer::from_fn(w, h, |x, y| {
            Rgb([
                (x * 5 + y) as u8,
                (x * y / 3) as u8,
                (255 - (x + 2 * y) % 256) as u8,
            ])
        })
    }

    #[test]
    fn transports_and_their_topics() {
        assert_eq!(ImageTransport::parse("raw"), Some(ImageTransport::Raw));
        assert_eq!(
            ImageTransport::parse("compressed"),
            Some(ImageTransport::Compressed)
        );
        assert_eq!(ImageTransport::parse("theora"), None);
        for t in [ImageTransport::Raw, ImageTransport::Compressed] {
            assert_eq!(ImageTransport::parse(t.name()), Some(t));
        }
        assert_eq!(
            ImageTransport::Compressed.topic("/camera/image_raw"),
            "/camera/image_raw/compressed"
        );
        assert_eq!(ImageTransport::Raw.topic("/image"), "/image");
        assert_eq!(
            ImageTransport::Compressed.message_type().dds_msg_type(),
            "sensor_msgs::msg::dds_::CompressedImage_"
        );
    }

    #[test]
    fn format_strings_of_the_transports() {
        for (format, codec) in [
            ("bgr8; jpeg compressed bgr8", Codec::Jpeg),
            ("rgb8; jpeg compressed bgr8", Codec::Jpeg),
            ("mono8; jpeg compressed mono8", Codec::Jpeg),
            ("bgr8; png compressed bgr8", Codec::Png),
            ("mono16; png compressed mono16", Codec::Png),
            ("bgr8; png compressed", Codec::Png),
            ("jpeg", Codec::Jpeg),
            ("jpg", Codec::Jpeg),
            ("JPEG", Codec::Jpeg),
            ("png", Codec::Png),
            (" png ", Codec::Png),
        ] {
            assert_eq!(parse_format(format), Ok(codec), "{format:?}");
        }
        for format in [
            "",
            "bmp",
            "bgr8; webp compressed bgr8",
            "16UC1; compressedDepth png",
            "32FC1; compressedDepth rvl",
            "bgr8;",
            "jpeg2000",
            "bgr8; jpeg decompressed",
        ] {
            assert_eq!(
                parse_format(format),
                Err(CompressedError::Format(format.into())),
                "{format:?}"
            );
        }
    }

    #[test]
    fn png_and_jpeg_decode_to_the_luminance_of_the_decoded_picture() {
        let rgb = colour_picture(37, 23);
        let want: Vec<u8> = rgb.pixels().map(|p| luminance(p[0], p[1], p[2])).collect();
        let mut out = Vec::new();
        // PNG is lossless: the luminance of the very picture.
        let png = encode(DynamicImage::ImageRgb8(rgb.clone()), ImageFormat::Png);
        assert_eq!(
            decode_gray("bgr8; png compressed bgr8", &png, &mut out),
            Ok((37, 23))
        );
        assert_eq!(out, want);
        // JPEG: the luminance of what the image crate decodes from the file.
        let jpeg = encode(DynamicImage::ImageRgb8(rgb), ImageFormat::Jpeg);
        let decoded = image::load_from_memory_with_format(&jpeg, ImageFormat::Jpeg)
            .unwrap()
            .to_rgb8();
        let want: Vec<u8> = decoded
            .pixels()
            .map(|p| luminance(p[0], p[1], p[2]))
            .collect();
        assert_eq!(
            decode_gray("bgr8; jpeg compressed bgr8", &jpeg, &mut out),
            Ok((37, 23))
        );
        assert_eq!(out, want);
    }

    #[test]
    fn gray_alpha_and_sixteen_bit_pictures_follow_the_command_lines_rules() {
        let mut out = Vec::new();
        let gray: ImageBuffer<Luma<u8>, _> =
            ImageBuffer::from_fn(9, 4, |x, y| Luma([(x * 20 + y) as u8]));
        let png = encode(DynamicImage::ImageLuma8(gray.clone()), ImageFormat::Png);
        decode_gray("mono8; png compressed mono8", &png, &mut out).unwrap();
        assert_eq!(out, gray.into_raw());
        let deep: ImageBuffer<Luma<u16>, _> =
            ImageBuffer::from_raw(4, 1, vec![0u16, 128, 129, 65_535]).unwrap();
        let png = encode(DynamicImage::ImageLuma16(deep), ImageFormat::Png);
        decode_gray("mono16; png compressed mono16", &png, &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 1, 255]);
        let rgba: ImageBuffer<Rgba<u8>, _> = ImageBuffer::from_fn(5, 3, |x, y| {
            Rgba([(x * 40) as u8, (y * 70) as u8, 200, (x * y) as u8])
        });
        let want: Vec<u8> = rgba.pixels().map(|p| luminance(p[0], p[1], p[2])).collect();
        let png = encode(DynamicImage::ImageRgba8(rgba), ImageFormat::Png);
        decode_gray("bgra8; png compressed bgra8", &png, &mut out).unwrap();
        assert_eq!(out, want);
        let rgb16: ImageBuffer<Rgb<u16>, _> = ImageBuffer::from_fn(3, 2, |x, y| {
            Rgb([(x * 20_000) as u16, (y * 30_000) as u16, 40_000])
        });
        let want: Vec<u8> = DynamicImage::ImageRgb16(rgb16.clone())
            .to_rgb8()
            .pixels()
            .map(|p| luminance(p[0], p[1], p[2]))
            .collect();
        let png = encode(DynamicImage::ImageRgb16(rgb16), ImageFormat::Png);
        decode_gray("png", &png, &mut out).unwrap();
        assert_eq!(out, want);
    }

    #[test]
    fn corrupt_truncated_mislabelled_and_empty_files_are_errors() {
        let rgb = colour_picture(32, 16);
        let jpeg = encode(DynamicImage::ImageRgb8(rgb.clone()), ImageFormat::Jpeg);
        let png = encode(DynamicImage::ImageRgb8(rgb), ImageFormat::Png);
        let mut out = vec![1, 2, 3];
        let mut garbled = jpeg.clone();
        // Past the headers: the entropy-coded data, then the end marker gone.
        for b in &mut garbled[jpeg.len() / 2..] {
            *b = 0xff;
        }
        let cases: [(&str, &[u8], &str); 6] = [
            ("jpeg", &jpeg[..jpeg.len() / 3], "decode"),
            ("jpeg", &garbled, "decode"),
            ("jpeg", b"not a jpeg at all", "decode"),
            ("png", &png[..png.len() - 20], "decode"),
            ("jpeg", &png, "decode"),
            ("png", &[], "empty"),
        ];
        for (format, data, kind) in cases {
            let err = decode_gray(format, data, &mut out).unwrap_err();
            assert_eq!(err.kind().0, kind, "{format} {} bytes: {err}", data.len());
            assert!(out.is_empty(), "{err}");
        }
        assert_eq!(
            decode_gray("tiff", &png, &mut out),
            Err(CompressedError::Format("tiff".into()))
        );
        // A larger picture cut inside its entropy-coded data: the decoder alone would fill the
        // rest with gray and succeed.
        let big = encode(
            DynamicImage::ImageRgb8(colour_picture(256, 192)),
            ImageFormat::Jpeg,
        );
        let cut = &big[..big.len() * 2 / 3];
        assert!(image::load_from_memory_with_format(cut, ImageFormat::Jpeg).is_ok());
        let err = decode_gray("jpeg", cut, &mut out).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        // Padding after the end-of-image marker is allowed.
        let mut padded = big.clone();
        padded.extend([0u8; 16]);
        assert_eq!(decode_gray("jpeg", &padded, &mut out), Ok((256, 192)));
    }

    #[test]
    fn a_header_beyond_the_core_limits_is_refused_before_decoding() {
        // A PNG header (IHDR) declaring 20000 x 20000 pixels and no image data.
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = b"IHDR".to_vec();
        ihdr.extend(20_000u32.to_be_bytes());
        ihdr.extend(20_000u32.to_be_bytes());
        ihdr.extend([8, 0, 0, 0, 0]);
        png.extend(13u32.to_be_bytes());
        png.extend(&ihdr);
        let crc = crc32(&ihdr);
        png.extend(crc.to_be_bytes());
        let mut out = Vec::new();
        let err = decode_gray("png", &png, &mut out).unwrap_err();
        assert!(matches!(err.kind(), ("size", _) | ("decode", _)), "{err}");
        assert!(
            out.capacity() < 1 << 20,
            "nothing of the declared size was allocated"
        );
    }

    /// CRC-32 of a PNG chunk (type and data).
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn the_output_buffer_is_reused() {
        let png = encode(
            DynamicImage::ImageRgb8(colour_picture(64, 48)),
            ImageFormat::Png,
        );
        let mut out = Vec::new();
        decode_gray("png", &png, &mut out).unwrap();
        let (ptr, capacity) = (out.as_ptr(), out.capacity());
        decode_gray("png", &png, &mut out).unwrap();
        assert_eq!((out.as_ptr(), out.capacity()), (ptr, capacity));
        assert_eq!(out.len(), 64 * 48);
    }
}
