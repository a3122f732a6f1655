//! The node's outputs encoded as CDR directly, in bulk.
//!
//! ros2-client serialises every message through serde and `cdr-encoding`, one call per value:
//! for a `KeypointArray` of thousands of keypoints with f32 descriptors that costs more than the
//! detection itself. The layouts of `KeypointArray` and `MatchArray` are fixed, so the encoders
//! ([`encode_detection`], [`encode_keypoint_array`], [`encode_match_array`]) write the same
//! bytes (classic CDR, little endian, the exact output of the serde path: a test compares them)
//! with one pass over contiguous arrays, into buffers of a [`BufferPool`] that come back when DDS
//! drops them. The node's writers for
//! `keypoints` and `matches` use [`BulkCdr`] as their serializer adapter; readers see ordinary
//! CDR.

mod encode;
mod pool;
#[cfg(test)]
mod test_messages;

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
