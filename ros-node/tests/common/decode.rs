//! A block decoder of the node's `KeypointArray` and `MatchArray` (classic CDR, either byte
//! order) for the tests' subscribers: one pass and no per-value serde call, as rclcpp's
//! generated code reads them, so that a test's own decoding does not weigh on the latencies it
//! measures. A RustDDS reader uses it through [`BulkDecode`], its deserializer adapter.
//! Malformed input is an error ([`WireError`]), never a panic.

use ros2_client::dds::rustdds::RepresentationIdentifier;
use ros2_client::dds::rustdds::no_key::{Decode, DefaultDecoder, DeserializerAdapter};
use surfcl_ros::msg::{Header, KeypointArray, KeypointMsg, MatchArray, MatchMsg};

/// Why a CDR payload is not a well-formed message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The payload ends inside the named field.
    #[error("message truncated: {field} needs {needed} bytes at offset {offset}, {len} in all")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs.
        needed: usize,
        /// Length of the payload.
        len: usize,
    },
    /// A string is not NUL-terminated UTF-8.
    #[error("field {0}: not a NUL-terminated UTF-8 string")]
    BadString(&'static str),
    /// The payload's representation is not classic CDR.
    #[error("unsupported representation {0:?} (classic CDR, either byte order, is supported)")]
    Representation([u8; 2]),
}

/// A CDR reader over one payload: alignment is relative to its start, values in `little` or big
/// endian. Every read checks the length first.
struct CdrReader<'a> {
    buf: &'a [u8],
    pos: usize,
    little: bool,
}

impl<'a> CdrReader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let bytes = &self.buf[self.pos..end];
                self.pos = end;
                Ok(bytes)
            }
            None => Err(WireError::Truncated {
                field,
                offset: self.pos,
                needed: n,
                len: self.buf.len(),
            }),
        }
    }
    fn align(&mut self, n: usize, field: &'static str) -> Result<(), WireError> {
        let pad = (n - self.pos % n) % n;
        self.take(pad, field).map(|_| ())
    }
    fn word(&mut self, field: &'static str) -> Result<[u8; 4], WireError> {
        self.align(4, field)?;
        let b = self.take(4, field)?;
        Ok([b[0], b[1], b[2], b[3]])
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, WireError> {
        let w = self.word(field)?;
        Ok(if self.little {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        })
    }
    fn f32_of(&self, w: [u8; 4]) -> f32 {
        if self.little {
            f32::from_le_bytes(w)
        } else {
            f32::from_be_bytes(w)
        }
    }
    /// A sequence length, checked against the bytes left (`element` bytes each) before anything
    /// is allocated for it.
    fn count(&mut self, element: usize, field: &'static str) -> Result<usize, WireError> {
        let n = self.u32(field)? as usize;
        let left = self.buf.len() - self.pos;
        if n.saturating_mul(element) > left {
            return Err(WireError::Truncated {
                field,
                offset: self.pos,
                needed: n.saturating_mul(element),
                len: self.buf.len(),
            });
        }
        Ok(n)
    }
    /// A sequence of `element`-byte values (its count checked first), each read by `read`.
    fn sequence<T>(
        &mut self,
        element: usize,
        field: &'static str,
        mut read: impl FnMut(&mut Self) -> Result<T, WireError>,
    ) -> Result<Vec<T>, WireError> {
        let n = self.count(element, field)?;
        let mut values = Vec::with_capacity(n);
        for _ in 0..n {
            values.push(read(self)?);
        }
        Ok(values)
    }
    fn string(&mut self, field: &'static str) -> Result<String, WireError> {
        let n = self.count(1, field)?;
        let bytes = self.take(n, field)?;
        match bytes.split_last() {
            None => Ok(String::new()),
            Some((0, text)) => std::str::from_utf8(text)
                .map(str::to_owned)
                .map_err(|_| WireError::BadString(field)),
            Some(_) => Err(WireError::BadString(field)),
        }
    }
    fn header(&mut self, field: &'static str) -> Result<Header, WireError> {
        let sec = self.u32(field)? as i32;
        let nanosec = self.u32(field)?;
        let frame_id = self.string(field)?;
        Ok(Header {
            stamp: ros2_client::builtin_interfaces::Time::new(sec, nanosec),
            frame_id,
        })
    }
    fn f32(&mut self, field: &'static str) -> Result<f32, WireError> {
        let w = self.word(field)?;
        Ok(self.f32_of(w))
    }
    /// `N` consecutive f32 (no alignment, no allocation).
    fn f32_array<const N: usize>(&mut self, field: &'static str) -> Result<[f32; N], WireError> {
        let b = self.take(N * 4, field)?;
        Ok(std::array::from_fn(|i| {
            self.f32_of([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
        }))
    }
    /// `n` consecutive f32 (no alignment). The byte order is chosen once, outside the loop, so
    /// that the loop compiles to vector loads and stores (on a host of the payload's order, a
    /// copy): 4096 SURF-64 descriptors are a megabyte.
    fn f32s(&mut self, n: usize, field: &'static str) -> Result<Vec<f32>, WireError> {
        let bytes = self.take(n * 4, field)?;
        let words = bytes.as_chunks::<4>().0.iter().copied();
        Ok(if self.little {
            words.map(f32::from_le_bytes).collect()
        } else {
            words.map(f32::from_be_bytes).collect()
        })
    }
}

fn reader(bytes: &[u8], encoding: RepresentationIdentifier) -> Result<CdrReader<'_>, WireError> {
    let little = if encoding == RepresentationIdentifier::CDR_LE {
        true
    } else if encoding == RepresentationIdentifier::CDR_BE {
        false
    } else {
        return Err(WireError::Representation(encoding.to_bytes()));
    };
    Ok(CdrReader {
        buf: bytes,
        pos: 0,
        little,
    })
}

/// Reads a [`KeypointArray`] from its classic CDR payload (`encoding`: `CDR_LE` or `CDR_BE`), the
/// same value ros2-client's serde path gives for a well-formed one.
pub fn decode_keypoint_array(
    bytes: &[u8],
    encoding: RepresentationIdentifier,
) -> Result<KeypointArray, WireError> {
    let mut r = reader(bytes, encoding)?;
    let header = r.header("header")?;
    // A keypoint is 21 bytes of data (24 with the padding between two of them).
    let keypoints = r.sequence(21, "keypoints", |r| {
        r.align(4, "keypoints")?;
        let f: [f32; 5] = r.f32_array("keypoints")?;
        Ok(KeypointMsg {
            x: f[0],
            y: f[1],
            scale: f[2],
            orientation: f[3],
            response: f[4],
            laplacian: r.take(1, "keypoints")?[0] as i8,
        })
    })?;
    let n = r.count(4, "descriptors")?;
    let descriptors = r.f32s(n, "descriptors")?;
    let n = r.count(1, "descriptors_q7")?;
    let descriptors_q7 = r
        .take(n, "descriptors_q7")?
        .iter()
        .map(|&b| b as i8)
        .collect();
    let descriptor_length = r.u32("descriptor_length")?;
    let dropped = r.u32("dropped")?;
    Ok(KeypointArray {
        header,
        keypoints,
        descriptors,
        descriptors_q7,
        descriptor_length,
        dropped,
    })
}

/// Reads a [`MatchArray`] from its classic CDR payload (`CDR_LE` or `CDR_BE`).
pub fn decode_match_array(
    bytes: &[u8],
    encoding: RepresentationIdentifier,
) -> Result<MatchArray, WireError> {
    let mut r = reader(bytes, encoding)?;
    let header = r.header("header")?;
    let previous_header = r.header("previous_header")?;
    let matches = r.sequence(12, "matches", |r| {
        Ok(MatchMsg {
            query: r.u32("matches")?,
            train: r.u32("matches")?,
            distance: r.f32("matches")?,
        })
    })?;
    Ok(MatchArray {
        header,
        previous_header,
        matches,
    })
}

/// Deserializer adapter for RustDDS readers of `KeypointArray` and `MatchArray`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkDecode;

/// Its decoder (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkDecoder;

const CDR_ENCODINGS: [RepresentationIdentifier; 2] = [
    RepresentationIdentifier::CDR_LE,
    RepresentationIdentifier::CDR_BE,
];

macro_rules! bulk_decoding {
    ($ty:ty, $decode:path) => {
        impl DeserializerAdapter<$ty> for BulkDecode {
            type Error = WireError;
            type Decoded = $ty;
            fn supported_encodings() -> &'static [RepresentationIdentifier] {
                &CDR_ENCODINGS
            }
            fn transform_decoded(decoded: $ty) -> $ty {
                decoded
            }
        }
        impl DefaultDecoder<$ty> for BulkDecode {
            type Decoder = BulkDecoder;
            const DECODER: BulkDecoder = BulkDecoder;
        }
        impl Decode<'_, $ty> for BulkDecoder {
            type Error = WireError;
            fn decode_bytes(
                self,
                bytes: &[u8],
                encoding: RepresentationIdentifier,
            ) -> Result<$ty, WireError> {
                $decode(bytes, encoding)
            }
        }
    };
}

bulk_decoding!(KeypointArray, decode_keypoint_array);
bulk_decoding!(MatchArray, decode_match_array);
