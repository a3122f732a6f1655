//! The node's outputs encoded as CDR directly, in bulk.
//!
//! ros2-client serialises every message through serde and `cdr-encoding`, one call per value:
//! about 1.7 ms for a `KeypointArray` of 4096 keypoints with f32 descriptors (262144 floats) on
//! an H100 host, more than the detection itself. The layouts of `KeypointArray` and
//! `MatchArray` are fixed, so [`BulkCdr`] writes the same bytes (classic CDR, little endian, the
//! exact output of the serde path: a test compares them) with one pass over contiguous arrays.
//! The node's writers for `keypoints` and `matches` use it (a RustDDS `DataWriter` with this
//! serializer adapter); readers see ordinary CDR.

use std::convert::Infallible;

use byteorder::LittleEndian;
use ros2_client::dds::rustdds::RepresentationIdentifier;
use ros2_client::dds::rustdds::bytes::Bytes;
use ros2_client::dds::rustdds::no_key::SerializerAdapter;

use crate::msg::{Header, KeypointArray, MatchArray};

/// Serializer adapter writing [`KeypointArray`] and [`MatchArray`] as classic little-endian CDR
/// without per-value serde calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkCdr;

/// A CDR writer: alignment is relative to the start of the payload.
struct Cdr {
    buf: Vec<u8>,
}

impl Cdr {
    fn with_capacity(n: usize) -> Self {
        Self {
            buf: Vec::with_capacity(n),
        }
    }
    fn align(&mut self, n: usize) {
        let pad = (n - self.buf.len() % n) % n;
        self.buf.extend(std::iter::repeat_n(0u8, pad));
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A sequence length; sequences longer than `u32::MAX` cannot exist in CDR (and cannot be
    /// built from a frame within the core's limits).
    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    fn header(&mut self, h: &Header) {
        // Header: int32, uint32, string: 4-byte alignment at most, so encoding it on its own and
        // appending it at a 4-aligned offset gives the same bytes. Small: the serde path is fine.
        self.align(4);
        match ros2_client::dds::rustdds::cdr_encoding::to_vec::<Header, LittleEndian>(h) {
            Ok(bytes) => self.buf.extend_from_slice(&bytes),
            // Serialising a struct of integers and a string into a Vec cannot fail; if it did,
            // an empty header keeps the message well-formed.
            Err(_) => {
                self.u32(0);
                self.u32(0);
                self.u32(1);
                self.buf.push(0);
            }
        }
    }
}

/// Classic CDR of a [`KeypointArray`], byte for byte what the serde path writes.
pub fn encode_keypoint_array(m: &KeypointArray) -> Vec<u8> {
    let n = m.keypoints.len();
    let mut w = Cdr::with_capacity(
        64 + m.header.frame_id.len() + n * 24 + m.descriptors.len() * 4 + m.descriptors_q7.len(),
    );
    w.header(&m.header);
    w.len(n);
    // Each keypoint: five f32 and an i8, then 3 bytes of padding before the next one's first
    // f32 (24 bytes, since the array starts 4-aligned); the last one has no padding.
    let start = w.buf.len();
    w.buf.resize(start + n * 24, 0);
    for (dst, k) in w.buf[start..].chunks_exact_mut(24).zip(&m.keypoints) {
        dst[0..4].copy_from_slice(&k.x.to_le_bytes());
        dst[4..8].copy_from_slice(&k.y.to_le_bytes());
        dst[8..12].copy_from_slice(&k.scale.to_le_bytes());
        dst[12..16].copy_from_slice(&k.orientation.to_le_bytes());
        dst[16..20].copy_from_slice(&k.response.to_le_bytes());
        dst[20] = k.laplacian as u8;
    }
    if n > 0 {
        w.buf.truncate(start + n * 24 - 3);
    }
    w.len(m.descriptors.len());
    let start = w.buf.len();
    w.buf.resize(start + m.descriptors.len() * 4, 0);
    for (dst, v) in w.buf[start..].chunks_exact_mut(4).zip(&m.descriptors) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    w.len(m.descriptors_q7.len());
    w.buf.extend(m.descriptors_q7.iter().map(|&v| v as u8));
    w.u32(m.descriptor_length);
    w.u32(m.dropped);
    w.buf
}

/// Classic CDR of a [`MatchArray`], byte for byte what the serde path writes.
pub fn encode_match_array(m: &MatchArray) -> Vec<u8> {
    let mut w = Cdr::with_capacity(
        64 + m.header.frame_id.len() + m.previous_header.frame_id.len() + m.matches.len() * 12,
    );
    w.header(&m.header);
    w.header(&m.previous_header);
    w.len(m.matches.len());
    for x in &m.matches {
        w.buf.extend_from_slice(&x.query.to_le_bytes());
        w.buf.extend_from_slice(&x.train.to_le_bytes());
        w.buf.extend_from_slice(&x.distance.to_le_bytes());
    }
    w.buf
}

impl SerializerAdapter<KeypointArray> for BulkCdr {
    type Error = Infallible;
    fn output_encoding() -> RepresentationIdentifier {
        RepresentationIdentifier::CDR_LE
    }
    fn to_bytes(value: &KeypointArray) -> Result<Bytes, Infallible> {
        Ok(Bytes::from(encode_keypoint_array(value)))
    }
}

impl SerializerAdapter<MatchArray> for BulkCdr {
    type Error = Infallible;
    fn output_encoding() -> RepresentationIdentifier {
        RepresentationIdentifier::CDR_LE
    }
    fn to_bytes(value: &MatchArray) -> Result<Bytes, Infallible> {
        Ok(Bytes::from(encode_match_array(value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::{KeypointMsg, MatchMsg};
    use ros2_client::builtin_interfaces::Time;

    fn serde_cdr<T: serde::Serialize>(v: &T) -> Vec<u8> {
        ros2_client::dds::rustdds::cdr_encoding::to_vec::<T, LittleEndian>(v).unwrap()
    }

    fn keypoints(n: usize, frame: &str, q7: bool) -> KeypointArray {
        let kps: Vec<KeypointMsg> = (0..n)
            .map(|i| KeypointMsg {
                x: i as f32 * 1.5,
                y: -(i as f32),
                scale: 2.0 + i as f32,
                orientation: 0.25 * i as f32,
                response: 1e-4 * i as f32,
                laplacian: if i % 2 == 0 { 1 } else { -1 },
            })
            .collect();
        let d: Vec<f32> = (0..n * 64).map(|i| (i as f32).sin()).collect();
        KeypointArray {
            header: Header {
                stamp: Time::new(-3, 999_999_999),
                frame_id: frame.into(),
            },
            keypoints: kps,
            descriptors: if q7 { Vec::new() } else { d.clone() },
            descriptors_q7: if q7 {
                d.iter().map(|v| (v * 127.0) as i8).collect()
            } else {
                Vec::new()
            },
            descriptor_length: 64,
            dropped: 17,
        }
    }

    #[test]
    fn keypoint_array_bytes_equal_the_serde_path() {
        for n in [0, 1, 2, 3, 5, 100] {
            for frame in ["", "c", "cam", "camera_optical"] {
                for q7 in [false, true] {
                    let m = keypoints(n, frame, q7);
                    assert_eq!(
                        encode_keypoint_array(&m),
                        serde_cdr(&m),
                        "n={n} frame={frame:?} q7={q7}"
                    );
                }
            }
        }
    }

    /// `cargo test -p surfcl-ros --release --lib wire -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn encoding_speed_against_serde() {
        let m = keypoints(4096, "camera", false);
        let t = std::time::Instant::now();
        for _ in 0..50 {
            std::hint::black_box(encode_keypoint_array(&m));
        }
        let bulk = t.elapsed().as_secs_f64() * 1e3 / 50.0;
        let t = std::time::Instant::now();
        for _ in 0..50 {
            std::hint::black_box(serde_cdr(&m));
        }
        let serde = t.elapsed().as_secs_f64() * 1e3 / 50.0;
        println!("KeypointArray 4096 f32: bulk {bulk:.3} ms, serde {serde:.3} ms");
    }

    #[test]
    fn match_array_bytes_equal_the_serde_path() {
        for n in [0, 1, 7] {
            for (f1, f2) in [("", ""), ("a", "bc"), ("cam", "")] {
                let m = MatchArray {
                    header: Header {
                        stamp: Time::new(5, 6),
                        frame_id: f1.into(),
                    },
                    previous_header: Header {
                        stamp: Time::new(4, 7),
                        frame_id: f2.into(),
                    },
                    matches: (0..n)
                        .map(|i| MatchMsg {
                            query: i,
                            train: 2 * i,
                            distance: 0.5 * i as f32,
                        })
                        .collect(),
                };
                assert_eq!(encode_match_array(&m), serde_cdr(&m), "n={n} {f1:?} {f2:?}");
            }
        }
    }
}
