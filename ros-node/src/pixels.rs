//! Image messages deserialised into pixel buffers reused from frame to frame.
//!
//! RustDDS hands a reader the reassembled bytes of a sample only as a borrowed slice, so the
//! pixels of every image are copied once into the message's `data`. Into a fresh `Vec` that copy
//! also pays a page fault per 4 KiB of new memory (a 12 MB frame: 3000 of them); into a buffer
//! that held an earlier frame it is a plain copy. [`PixelBuffers`] keeps the buffers of frames
//! the node is done with, and [`ImageSeed`] deserialises the next image into one of them. The
//! result is the same `Image` that serde's derived `Deserialize` gives (a test compares them).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};

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
        deserializer.deserialize_struct(
            "Image",
            &FIELDS,
            ImageVisitor {
                buf: self.buffers.take(),
            },
        )
    }
}

struct ImageVisitor {
    buf: Vec<u8>,
}

fn field<'de, T: de::Deserialize<'de>, A: SeqAccess<'de>>(
    seq: &mut A,
    index: usize,
) -> Result<T, A::Error> {
    seq.next_element()?
        .ok_or_else(|| de::Error::invalid_length(index, &"a sensor_msgs/Image of 7 fields"))
}

impl<'de> Visitor<'de> for ImageVisitor {
    type Value = Image;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sensor_msgs/Image")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Image, A::Error> {
        let header: Header = field(&mut seq, 0)?;
        let height: u32 = field(&mut seq, 1)?;
        let width: u32 = field(&mut seq, 2)?;
        let encoding: String = field(&mut seq, 3)?;
        let is_bigendian: u8 = field(&mut seq, 4)?;
        let step: u32 = field(&mut seq, 5)?;
        let data = seq
            .next_element_seed(PixelSeed { buf: self.buf })?
            .ok_or_else(|| de::Error::invalid_length(6, &"a sensor_msgs/Image of 7 fields"))?;
        Ok(Image {
            header,
            height,
            width,
            encoding,
            is_bigendian,
            step,
            data,
        })
    }
}

/// The `data` field: a byte sequence copied into `buf` (emptied first, capacity kept).
struct PixelSeed {
    buf: Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for PixelSeed {
    type Value = Vec<u8>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<u8>, D::Error> {
        deserializer.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for PixelSeed {
    type Value = Vec<u8>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the pixel bytes of an image")
    }
    fn visit_bytes<E: de::Error>(mut self, v: &[u8]) -> Result<Vec<u8>, E> {
        self.buf.clear();
        self.buf.extend_from_slice(v);
        Ok(self.buf)
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        self.buf.clear();
        while let Some(b) = seq.next_element::<u8>()? {
            self.buf.push(b);
        }
        Ok(self.buf)
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
}
