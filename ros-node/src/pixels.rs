//! Image messages deserialised into pixel buffers reused from frame to frame, or converted
//! straight into one of the backend's input frames.
//!
//! RustDDS hands a reader the reassembled bytes of a sample only as a borrowed slice, so the
//! pixels of every image are copied at least once. [`ReceiveSeed`] (the node's) makes that copy
//! the only one where it can: when the fields before `data` describe a valid image and a free
//! input frame of the backend is large enough ([`crate::frames::InputFrames`]: pinned memory on
//! the OpenCL backend), the pixel bytes are converted to gray (`mono8`: copied without row
//! padding) straight into it, by the same conversion as everywhere else
//! ([`crate::convert::to_gray_into`]). Otherwise, and for [`ImageSeed`], they are copied into the
//! message's `data`: into a fresh `Vec` that copy also pays a page fault per 4 KiB of new memory
//! (a 12 MB frame: 3000 of them); into a buffer that held an earlier frame it is a plain copy.
//! [`PixelBuffers`] keeps the buffers of frames the node is done with. The `Image` either seed
//! gives is the one serde's derived `Deserialize` gives (tests compare them), without `data`
//! when the pixels went into a frame.
//!
//! With the `compressed` transport [`ReceiveSeed`] reads a `sensor_msgs/CompressedImage`
//! instead and decodes its bytes where RustDDS lends them ([`crate::compressed`]) into a buffer
//! from [`PixelBuffers`]: the node then handles a `mono8` image.

use std::fmt;
use std::time::Instant;

use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};

use crate::compressed::{self, CompressedError, ImageTransport};
use crate::convert::{self, Layout};
use crate::frames::{InputFrames, PooledFrame};
use crate::msg::{Header, Image};
use crate::recycle::Recycler;

/// Pixel buffers of frames the node has finished with, for the next images to be deserialised
/// into; shared by the receive thread (takes) and the processing thread (gives back). At most 3
/// wait: one frame being processed, one waiting in the slot, one being received (large frames
/// are tens of megabytes).
pub type PixelBuffers = Recycler<3>;

/// Deserialises a `sensor_msgs/Image` with its pixels copied into a buffer from
/// [`PixelBuffers`].
#[derive(Debug, Clone)]
pub struct ImageSeed {
    /// Where the buffer comes from.
    pub buffers: PixelBuffers,
}

/// Deserialises an image message into a [`Received`]. A `sensor_msgs/Image` (transport
/// `raw`): its pixels converted to gray straight into a free frame of `frames` when the message
/// is valid and one fits, else copied into a buffer from `buffers` (as [`ImageSeed`]). A
/// `sensor_msgs/CompressedImage` (transport `compressed`): decoded from the serialized bytes
/// (no copy of the file is made) into a buffer from `buffers`, as a `mono8` image.
#[derive(Debug, Clone)]
pub struct ReceiveSeed {
    /// Where the buffer comes from, when the pixels do not go into a frame.
    pub buffers: PixelBuffers,
    /// The backend's input frames.
    pub frames: InputFrames,
    /// The message type: `sensor_msgs/Image` or `sensor_msgs/CompressedImage`.
    pub transport: ImageTransport,
}

/// An image message as the receive thread took it.
#[derive(Debug)]
pub struct Received {
    /// The message; its `data` is empty when the pixels went into `gray`. A compressed image
    /// arrives here decoded, as a `mono8` image with the compressed message's header.
    pub image: Image,
    /// The gray frame, when the pixels went into one of the backend's input frames.
    pub gray: Option<GrayFrame>,
    /// Why a compressed image could not be decoded (its `image` then has the header, the
    /// format string as `encoding`, and no pixels).
    pub undecodable: Option<CompressedError>,
}

/// A valid image converted to gray in one of the backend's input frames on receipt.
#[derive(Debug)]
pub struct GrayFrame {
    /// The frame: its first `width * height` bytes hold the gray pixels.
    pub frame: PooledFrame,
    /// The message's layout (as [`convert::validate`] gives it for the message).
    pub layout: Layout,
    /// Time of the conversion into the frame, ms (part of the deserialisation).
    pub convert_ms: f64,
}

const FIELDS: [&str; 7] = [
    "header",
    "height",
    "width",
    "encoding",
    "is_bigendian",
    "step",
    "data",
];

impl<'de> DeserializeSeed<'de> for ImageSeed {
    type Value = Image;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Image, D::Error> {
        let received = deserializer.deserialize_struct(
            "Image",
            &FIELDS,
            ImageVisitor {
                buffers: self.buffers,
                frames: None,
            },
        )?;
        Ok(received.image)
    }
}

impl<'de> DeserializeSeed<'de> for ReceiveSeed {
    type Value = Received;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Received, D::Error> {
        if self.transport == ImageTransport::Compressed {
            return deserializer.deserialize_struct(
                "CompressedImage",
                &["header", "format", "data"],
                CompressedVisitor {
                    buffers: self.buffers,
                },
            );
        }
        deserializer.deserialize_struct(
            "Image",
            &FIELDS,
            ImageVisitor {
                buffers: self.buffers,
                frames: Some(self.frames),
            },
        )
    }
}

struct ImageVisitor {
    buffers: PixelBuffers,
    frames: Option<InputFrames>,
}

fn field<'de, T: de::Deserialize<'de>, A: SeqAccess<'de>>(
    seq: &mut A,
    index: usize,
) -> Result<T, A::Error> {
    seq.next_element()?
        .ok_or_else(|| de::Error::invalid_length(index, &"a sensor_msgs/Image of 7 fields"))
}

impl<'de> Visitor<'de> for ImageVisitor {
    type Value = Received;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sensor_msgs/Image")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Received, A::Error> {
        let header: Header = field(&mut seq, 0)?;
        let height: u32 = field(&mut seq, 1)?;
        let width: u32 = field(&mut seq, 2)?;
        let encoding: String = field(&mut seq, 3)?;
        let is_bigendian: u8 = field(&mut seq, 4)?;
        let step: u32 = field(&mut seq, 5)?;
        let pixels = seq
            .next_element_seed(BytesSeed(PixelSeed {
                buffers: self.buffers,
                target: self.frames.map(|frames| FrameTarget {
                    frames,
                    encoding: &encoding,
                    width,
                    height,
                    step,
                    big_endian: is_bigendian != 0,
                }),
            }))?
            .ok_or_else(|| de::Error::invalid_length(6, &"a sensor_msgs/Image of 7 fields"))?;
        let (data, gray) = match pixels {
            Pixels::Heap(data) => (data, None),
            Pixels::Gray(gray) => (Vec::new(), Some(gray)),
        };
        Ok(Received {
            image: Image {
                header,
                height,
                width,
                encoding,
                is_bigendian,
                step,
                data,
            },
            gray,
            undecodable: None,
        })
    }
}

/// A `sensor_msgs/CompressedImage`: its header and format string, then its bytes decoded as
/// they are read ([`CompressedData`]).
struct CompressedVisitor {
    buffers: PixelBuffers,
}

impl<'de> Visitor<'de> for CompressedVisitor {
    type Value = Received;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sensor_msgs/CompressedImage")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Received, A::Error> {
        let missing =
            |i| de::Error::invalid_length(i, &"a sensor_msgs/CompressedImage of 3 fields");
        let header: Header = seq.next_element()?.ok_or_else(|| missing(0))?;
        let format: String = seq.next_element()?.ok_or_else(|| missing(1))?;
        let decoded = seq
            .next_element_seed(BytesSeed(CompressedData {
                format: &format,
                buffers: &self.buffers,
            }))?
            .ok_or_else(|| missing(2))?;
        Ok(match decoded {
            Ok((width, height, data)) => Received {
                image: Image {
                    header,
                    // Sizes within the core's limits (checked before decoding) fit a u32.
                    height: height as u32,
                    width: width as u32,
                    encoding: "mono8".into(),
                    is_bigendian: 0,
                    step: width as u32,
                    data,
                },
                gray: None,
                undecodable: None,
            },
            Err(e) => Received {
                image: Image {
                    header,
                    encoding: format,
                    ..Image::default()
                },
                gray: None,
                undecodable: Some(e),
            },
        })
    }
}

/// The `data` of a compressed image, decoded to gray into a buffer from `buffers` (given back
/// when decoding fails). A decoding failure is the value, not a deserialisation error: the
/// message was read whole, its contents are what is wrong.
struct CompressedData<'a> {
    format: &'a str,
    buffers: &'a PixelBuffers,
}

type Decoded = Result<(usize, usize, Vec<u8>), CompressedError>;

impl CompressedData<'_> {
    fn decode(&self, bytes: &[u8]) -> Decoded {
        let mut buf = self.buffers.take();
        match compressed::decode_gray(self.format, bytes, &mut buf) {
            Ok((width, height)) => Ok((width, height, buf)),
            Err(e) => {
                self.buffers.give(buf);
                Err(e)
            }
        }
    }
}

impl ReadBytes for CompressedData<'_> {
    type Value = Decoded;
    const EXPECTING: &'static str = "the bytes of a compressed image";
    fn read_slice(self, v: &[u8]) -> Decoded {
        self.decode(v)
    }
}

/// What a `bytes` field is read into: the one part in which the seeds of the `data` fields
/// differ ([`BytesSeed`] does the rest).
trait ReadBytes {
    type Value;
    /// What the field holds, for deserialisation errors.
    const EXPECTING: &'static str;
    fn read_slice(self, v: &[u8]) -> Self::Value;
    /// An owned buffer (handed over by the deserializer, or collected from a sequence).
    fn read_vec(self, v: Vec<u8>) -> Self::Value
    where
        Self: Sized,
    {
        self.read_slice(&v)
    }
}

/// Deserializes a `bytes` field (as bytes when the format has them, else as a sequence of
/// `u8`) into what `F` makes of it.
struct BytesSeed<F>(F);

impl<'de, F: ReadBytes> DeserializeSeed<'de> for BytesSeed<F> {
    type Value = F::Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<F::Value, D::Error> {
        deserializer.deserialize_bytes(self)
    }
}

impl<'de, F: ReadBytes> Visitor<'de> for BytesSeed<F> {
    type Value = F::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(F::EXPECTING)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<F::Value, E> {
        Ok(self.0.read_slice(v))
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<F::Value, E> {
        Ok(self.0.read_vec(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<F::Value, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        Ok(self.0.read_vec(bytes))
    }
}

/// Where the pixels of a message went.
enum Pixels {
    /// Copied as they are into the message's `data`.
    Heap(Vec<u8>),
    /// Converted to gray into an input frame.
    Gray(GrayFrame),
}

/// What the `data` field needs to go into an input frame: the frames and the fields before it.
struct FrameTarget<'a> {
    frames: InputFrames,
    encoding: &'a str,
    width: u32,
    height: u32,
    step: u32,
    big_endian: bool,
}

impl FrameTarget<'_> {
    /// Converts `bytes` into a free frame when they make a valid image and one fits. `None`
    /// (the caller copies them into the message) otherwise: an invalid message is then refused
    /// by the node's validation of the whole message, with the same words as always.
    fn convert(&self, bytes: &[u8]) -> Option<GrayFrame> {
        let layout = convert::validate_fields(
            self.encoding,
            self.width,
            self.height,
            self.step,
            self.big_endian,
            bytes.len(),
        )
        .ok()?;
        let n = layout.width * layout.height;
        let mut frame = self.frames.take(n)?;
        let t = Instant::now();
        let written = match frame.frame().map(|f| f.pixels_mut()) {
            Some(Ok(pixels)) => pixels
                .get_mut(..n)
                .is_some_and(|out| convert::to_gray_into(bytes, &layout, out).is_ok()),
            // The frame's device failed: it is not given back.
            Some(Err(_)) | None => {
                frame.discard();
                return None;
            }
        };
        // A frame not written (it cannot happen for a validated layout) goes back unused.
        written.then(|| GrayFrame {
            frame,
            layout,
            convert_ms: t.elapsed().as_secs_f64() * 1e3,
        })
    }
}

/// The `data` field: into an input frame (see [`FrameTarget`]), or a byte sequence copied into a
/// buffer from `buffers` (emptied first, capacity kept).
struct PixelSeed<'a> {
    buffers: PixelBuffers,
    target: Option<FrameTarget<'a>>,
}

impl ReadBytes for PixelSeed<'_> {
    type Value = Pixels;
    const EXPECTING: &'static str = "the pixel bytes of an image";
    fn read_slice(self, v: &[u8]) -> Pixels {
        if let Some(gray) = self.target.as_ref().and_then(|t| t.convert(v)) {
            return Pixels::Gray(gray);
        }
        let mut buf = self.buffers.take();
        buf.clear();
        buf.extend_from_slice(v);
        Pixels::Heap(buf)
    }
    fn read_vec(self, v: Vec<u8>) -> Pixels {
        Pixels::Heap(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use byteorder::{BigEndian, LittleEndian};
    use ros2_client::builtin_interfaces::Time;
    use ros2_client::dds::rustdds::cdr_encoding;

    fn image(w: u32, h: u32, encoding: &str, frame: &str) -> Image {
        let step = w * if encoding == "mono8" { 1 } else { 3 };
        Image {
            header: Header {
                stamp: Time::new(12, 345),
                frame_id: frame.into(),
            },
            height: h,
            width: w,
            encoding: encoding.into(),
            is_bigendian: 0,
            step,
            data: (0..step * h).map(|i| (i * 7 % 251) as u8).collect(),
        }
    }

    fn seeded_le(bytes: &[u8], buffers: &PixelBuffers) -> Result<Image, String> {
        let mut de = cdr_encoding::CdrDeserializer::<LittleEndian>::new(bytes);
        ImageSeed {
            buffers: buffers.clone(),
        }
        .deserialize(&mut de)
        .map_err(|e| e.to_string())
    }

    #[test]
    fn images_read_into_reused_buffers_equal_serde() {
        let buffers = PixelBuffers::default();
        for (w, h, enc, frame) in [
            (4, 3, "mono8", "cam"),
            (5, 2, "rgb8", ""),
            (1, 1, "mono8", "a"),
            (0, 0, "mono8", "empty"),
            (64, 48, "bgr8", "camera_optical"),
        ] {
            let img = image(w, h, enc, frame);
            let bytes = cdr_encoding::to_vec::<Image, LittleEndian>(&img).unwrap();
            let (serde, _) = cdr_encoding::from_bytes::<Image, LittleEndian>(&bytes).unwrap();
            // Twice: the second time into the buffer the first one gave back.
            for _ in 0..2 {
                let got = seeded_le(&bytes, &buffers).unwrap();
                assert_eq!(got, serde, "{w}x{h} {enc}");
                buffers.give(got.data);
            }
            let be = cdr_encoding::to_vec::<Image, BigEndian>(&img).unwrap();
            let mut de = cdr_encoding::CdrDeserializer::<BigEndian>::new(&be);
            let got = ImageSeed {
                buffers: buffers.clone(),
            }
            .deserialize(&mut de)
            .unwrap();
            assert_eq!(got, img);
            buffers.give(got.data);
        }
    }

    #[test]
    fn a_returned_buffer_is_reused_and_the_pool_is_bounded() {
        let buffers = PixelBuffers::default();
        let img = image(32, 32, "mono8", "cam");
        let bytes = cdr_encoding::to_vec::<Image, LittleEndian>(&img).unwrap();
        let first = seeded_le(&bytes, &buffers).unwrap();
        let ptr = first.data.as_ptr();
        buffers.give(first.data);
        assert_eq!(buffers.available(), 1);
        let second = seeded_le(&bytes, &buffers).unwrap();
        assert_eq!(second.data.as_ptr(), ptr, "the buffer given back was used");
        assert_eq!(second, img);
        assert_eq!(buffers.available(), 0);
        for _ in 0..PixelBuffers::MAX_KEPT + 2 {
            buffers.give(vec![0; 8]);
        }
        assert_eq!(buffers.available(), PixelBuffers::MAX_KEPT);
        buffers.give(Vec::new());
        assert_eq!(buffers.available(), PixelBuffers::MAX_KEPT);
    }

    #[test]
    fn truncated_images_are_errors_as_with_serde() {
        let buffers = PixelBuffers::default();
        let bytes =
            cdr_encoding::to_vec::<Image, LittleEndian>(&image(6, 5, "rgb8", "cam")).unwrap();
        for len in 0..bytes.len() {
            let serde = cdr_encoding::from_bytes::<Image, LittleEndian>(&bytes[..len]);
            let ours = seeded_le(&bytes[..len], &buffers);
            assert_eq!(ours.is_err(), serde.is_err(), "prefix of {len}");
            assert!(ours.is_err(), "prefix of {len} of {}", bytes.len());
        }
    }

    /// Host memory standing in for a backend's input frame.
    struct Heap(Vec<u8>);

    impl crate::processor::InputFrame for Heap {
        fn capacity(&self) -> usize {
            self.0.len()
        }
        fn pixels_mut(&mut self) -> Result<&mut [u8], crate::processor::ProcessorError> {
            Ok(&mut self.0)
        }
    }

    fn received(bytes: &[u8], seed: &ReceiveSeed) -> Result<Received, String> {
        let mut de = cdr_encoding::CdrDeserializer::<LittleEndian>::new(bytes);
        seed.clone().deserialize(&mut de).map_err(|e| e.to_string())
    }

    #[test]
    fn valid_images_go_into_a_free_frame_as_their_gray_pixels() {
        let seed = ReceiveSeed {
            buffers: PixelBuffers::default(),
            frames: InputFrames::default(),
            transport: ImageTransport::Raw,
        };
        seed.frames
            .refill(64 * 48, |n| Ok(Some(Box::new(Heap(vec![0xaa; n])))))
            .unwrap();
        let mut padded = image(5, 3, "rgb8", "cam");
        padded.step = 17;
        padded.data = (0..17 * 3).map(|i| (i * 11 % 256) as u8).collect();
        for img in [
            image(4, 3, "mono8", "cam"),
            image(64, 48, "bgr8", "camera_optical"),
            padded,
        ] {
            let bytes = cdr_encoding::to_vec::<Image, LittleEndian>(&img).unwrap();
            let got = received(&bytes, &seed).unwrap();
            let layout = convert::validate(&img).unwrap();
            let mut want = Vec::new();
            convert::to_gray(&img.data, &layout, &mut want);
            let mut gray = got.gray.expect("a frame was free");
            assert_eq!(gray.layout, layout);
            let n = layout.width * layout.height;
            let frame = gray.frame.frame().unwrap();
            assert_eq!(&frame.pixels_mut().unwrap()[..n], &want[..]);
            assert_eq!(
                got.image,
                Image {
                    data: Vec::new(),
                    ..img
                },
                "every field but data, as serde reads them"
            );
            assert_eq!(seed.frames.available(), InputFrames::FRAMES - 1);
        }
        assert_eq!(
            seed.frames.available(),
            InputFrames::FRAMES,
            "frames came back"
        );
    }

    #[test]
    fn invalid_images_and_images_without_a_free_frame_keep_their_bytes() {
        let seed = ReceiveSeed {
            buffers: PixelBuffers::default(),
            frames: InputFrames::default(),
            transport: ImageTransport::Raw,
        };
        let img = image(8, 6, "mono8", "cam");
        let bytes = cdr_encoding::to_vec::<Image, LittleEndian>(&img).unwrap();
        // No frames yet: the message as serde reads it.
        let got = received(&bytes, &seed).unwrap();
        assert!(got.gray.is_none());
        assert_eq!(got.image, img);
        // Frames too small for it.
        seed.frames
            .refill(8 * 6 - 1, |n| Ok(Some(Box::new(Heap(vec![0; n])))))
            .unwrap();
        assert!(received(&bytes, &seed).unwrap().gray.is_none());
        // Frames that fit, and messages the node's validation refuses.
        seed.frames
            .refill(1 << 12, |n| Ok(Some(Box::new(Heap(vec![0; n])))))
            .unwrap();
        let mut bad = Vec::new();
        let mut short = img.clone();
        short.data.pop();
        bad.push(short);
        let mut unknown = img.clone();
        unknown.encoding = "yuv420".into();
        bad.push(unknown);
        let mut narrow = img.clone();
        narrow.step = 7;
        narrow.data.truncate(7 * 6);
        bad.push(narrow);
        let mut empty = img.clone();
        (empty.width, empty.height, empty.step, empty.data) = (0, 0, 0, Vec::new());
        bad.push(empty);
        for m in bad {
            let bytes = cdr_encoding::to_vec::<Image, LittleEndian>(&m).unwrap();
            let got = received(&bytes, &seed).unwrap();
            assert!(got.gray.is_none(), "{m:?}");
            assert_eq!(got.image, m);
            assert!(convert::validate(&got.image).is_err());
        }
        assert_eq!(seed.frames.available(), InputFrames::FRAMES);
        // Truncated messages are errors, and lend no frame for good.
        for len in 0..bytes.len() {
            assert!(received(&bytes[..len], &seed).is_err(), "prefix of {len}");
        }
        assert_eq!(seed.frames.available(), InputFrames::FRAMES);
        assert!(received(&bytes, &seed).unwrap().gray.is_some());
    }

    fn compressed_bytes(format: &str, data: Vec<u8>) -> Vec<u8> {
        let msg = crate::compressed::CompressedImage {
            header: Header {
                stamp: Time::new(3, 4),
                frame_id: "cam".into(),
            },
            format: format.into(),
            data,
        };
        cdr_encoding::to_vec::<_, LittleEndian>(&msg).unwrap()
    }

    #[test]
    fn compressed_images_are_decoded_on_receipt_into_reused_buffers() {
        let seed = ReceiveSeed {
            buffers: PixelBuffers::default(),
            frames: InputFrames::default(),
            transport: ImageTransport::Compressed,
        };
        let gray = image::GrayImage::from_fn(21, 13, |x, y| image::Luma([(x * 11 + y * 3) as u8]));
        let mut png = Vec::new();
        image::DynamicImage::ImageLuma8(gray.clone())
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let bytes = compressed_bytes("mono8; png compressed mono8", png);
        let got = received(&bytes, &seed).unwrap();
        assert!(got.undecodable.is_none() && got.gray.is_none());
        assert_eq!(
            got.image,
            Image {
                header: Header {
                    stamp: Time::new(3, 4),
                    frame_id: "cam".into(),
                },
                height: 13,
                width: 21,
                encoding: "mono8".into(),
                is_bigendian: 0,
                step: 21,
                data: gray.into_raw(),
            }
        );
        assert!(convert::validate(&got.image).is_ok());
        // The buffer given back is decoded into next time.
        let ptr = got.image.data.as_ptr();
        seed.buffers.give(got.image.data);
        assert_eq!(received(&bytes, &seed).unwrap().image.data.as_ptr(), ptr);
        // A corrupt file and an unknown format: read, not decoded, the buffer kept for later.
        for (format, data, kind) in [
            ("jpeg", b"\xff\xd8\xff garbage".to_vec(), "decode"),
            ("bgr8; webp compressed bgr8", vec![1, 2, 3], "format"),
        ] {
            let got = received(&compressed_bytes(format, data), &seed).unwrap();
            let e = got.undecodable.expect("undecodable");
            assert_eq!(e.kind().0, kind, "{e}");
            assert_eq!(got.image.encoding, format);
            assert!(got.image.data.is_empty() && got.gray.is_none());
        }
        // A truncated message is a deserialisation error, as for raw images.
        for len in 0..bytes.len() {
            assert!(received(&bytes[..len], &seed).is_err(), "prefix of {len}");
        }
    }

    #[test]
    fn camera_encodings_go_into_a_free_frame_with_their_byte_order() {
        let seed = ReceiveSeed {
            buffers: PixelBuffers::default(),
            frames: InputFrames::default(),
            transport: ImageTransport::Raw,
        };
        seed.frames
            .refill(64 * 48, |n| Ok(Some(Box::new(Heap(vec![0xaa; n])))))
            .unwrap();
        // Odd widths and padded rows; mono16 in both byte orders (the field before `step`
        // decides how the pixels are read).
        let cases = [
            ("mono16", 7u32, 5u32, 17u32, 5 * 17, 1u8),
            ("mono16", 7, 5, 14, 5 * 14, 0),
            ("yuyv", 9, 4, 20, 4 * 20, 0),
            ("uyvy", 9, 4, 18, 4 * 18, 0),
            ("nv12", 9, 6, 11, 6 * 11 * 3 / 2, 0),
            ("nv21", 8, 4, 8, 4 * 8 * 3 / 2, 0),
            ("bayer_gbrg8", 11, 7, 13, 7 * 13, 0),
        ];
        for (encoding, width, height, step, len, is_bigendian) in cases {
            let img = Image {
                header: Header {
                    stamp: Time::new(1, 2),
                    frame_id: "cam".into(),
                },
                height,
                width,
                encoding: encoding.into(),
                is_bigendian,
                step,
                data: (0..len).map(|i| (i * 29 % 253) as u8).collect(),
            };
            let bytes = cdr_encoding::to_vec::<Image, LittleEndian>(&img).unwrap();
            let got = received(&bytes, &seed).unwrap();
            let layout = convert::validate(&img).unwrap();
            assert_eq!(layout.big_endian, is_bigendian == 1);
            let mut want = Vec::new();
            convert::to_gray(&img.data, &layout, &mut want);
            let mut gray = got.gray.expect("a frame was free");
            assert_eq!(gray.layout, layout, "{encoding}");
            let n = layout.width * layout.height;
            let frame = gray.frame.frame().unwrap();
            assert_eq!(&frame.pixels_mut().unwrap()[..n], &want[..], "{encoding}");
        }
        // The byte order matters: the same bytes read little-endian give other pixels.
        let big = Image {
            height: 1,
            width: 2,
            encoding: "mono16".into(),
            is_bigendian: 1,
            step: 4,
            data: vec![0x12, 0x00, 0xff, 0x00],
            ..Image::default()
        };
        let little = Image {
            is_bigendian: 0,
            ..big.clone()
        };
        let gray_of = |img: &Image| {
            let bytes = cdr_encoding::to_vec::<Image, LittleEndian>(img).unwrap();
            let mut got = received(&bytes, &seed)
                .unwrap()
                .gray
                .expect("a frame was free");
            got.frame.frame().unwrap().pixels_mut().unwrap()[..2].to_vec()
        };
        // 0x1200 = 4608 -> 18, 0xff00 = 65280 -> 254; 0x0012 = 18 -> 0, 0x00ff = 255 -> 1.
        assert_eq!(gray_of(&big), vec![18, 254]);
        assert_eq!(gray_of(&little), vec![0, 1]);
    }
}
