//! The node's outputs encoded as CDR directly, in bulk.
//!
//! ros2-client serialises every message through serde and `cdr-encoding`, one call per value:
//! for a `KeypointArray` of thousands of keypoints with f32 descriptors that costs more than the
//! detection itself. The layouts of `KeypointArray` and `MatchArray` are fixed, so the encoders
//! of [`encode`](encode_detection) write the same bytes (classic CDR, little endian, the exact
//! output of the serde path: a test compares them) with one pass over contiguous arrays, into
//! buffers of a [`BufferPool`] that come back when DDS drops them. The node's writers for
//! `keypoints` and `matches` use [`BulkCdr`] as their serializer adapter; readers see ordinary
//! CDR.

mod encode;
mod pool;

use std::convert::Infallible;

use ros2_client::dds::rustdds::RepresentationIdentifier;
use ros2_client::dds::rustdds::bytes::Bytes;
use ros2_client::dds::rustdds::no_key::SerializerAdapter;

pub use encode::{encode_detection, encode_keypoint_array, encode_match_array};
pub use pool::BufferPool;

use crate::msg::{KeypointArray, MatchArray};

/// Serializer adapter writing [`KeypointArray`] and [`MatchArray`] as classic little-endian CDR
/// without per-value serde calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkCdr;

/// A message already encoded as classic little-endian CDR (by [`encode_detection`] or
/// [`encode_keypoint_array`]): written as is, so that the node times and does the encoding
/// itself, and the writer only hands the bytes to DDS.
#[derive(Debug, Clone)]
pub struct Encoded(pub Bytes);

impl SerializerAdapter<Encoded> for BulkCdr {
    type Error = Infallible;
    fn output_encoding() -> RepresentationIdentifier {
        RepresentationIdentifier::CDR_LE
    }
    fn to_bytes(value: &Encoded) -> Result<Bytes, Infallible> {
        // A reference count, not a copy.
        Ok(value.0.clone())
    }
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

/// Messages the unit tests of the encoders and the pool share.
#[cfg(test)]
mod test_messages {
    use byteorder::LittleEndian;
    use ros2_client::builtin_interfaces::Time;

    use crate::msg::{Header, KeypointArray, KeypointMsg};

    pub(super) fn serde_cdr<T: serde::Serialize>(v: &T) -> Vec<u8> {
        ros2_client::dds::rustdds::cdr_encoding::to_vec::<T, LittleEndian>(v).unwrap()
    }

    pub(super) fn keypoints(n: usize, frame: &str, q7: bool) -> KeypointArray {
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
}
