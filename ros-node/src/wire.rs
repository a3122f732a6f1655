//! The node's outputs encoded as CDR directly, in bulk.
//!
//! ros2-client serialises every message through serde and `cdr-encoding`, one call per value:
//! about 1.7 ms for a `KeypointArray` of 4096 keypoints with f32 descriptors (262144 floats) on
//! an H100 host, more than the detection itself. The layouts of `KeypointArray` and
//! `MatchArray` are fixed, so [`BulkCdr`] writes the same bytes (classic CDR, little endian, the
//! exact output of the serde path: a test compares them) with one pass over contiguous arrays.
//! The node's writers for `keypoints` and `matches` use it (a RustDDS `DataWriter` with this
//! serializer adapter); readers see ordinary CDR.
//!
//! The other way, [`decode_keypoint_array`] and [`decode_match_array`] read those messages (from
//! any DDS, either byte order) with one pass and no per-value serde call: a Rust subscriber
//! creates its RustDDS reader with `BulkCdr` as the deserializer adapter. Decoding 4096 keypoints
//! with f32 descriptors this way is a block copy where serde takes about a millisecond. Malformed
//! input is an error ([`WireError`]), never a panic.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use byteorder::LittleEndian;
use ros2_client::dds::rustdds::RepresentationIdentifier;
use ros2_client::dds::rustdds::bytes::Bytes;
use ros2_client::dds::rustdds::no_key::{
    Decode, DefaultDecoder, DeserializerAdapter, SerializerAdapter,
};

use surfcl_core::config::DescriptorKind;
use surfcl_core::describe::to_q7;
use surfcl_core::{DESCRIPTOR_LEN, Descriptor, Keypoint};

use crate::msg::{Header, KeypointArray, KeypointMsg, MatchArray, MatchMsg};
use crate::recycle::Recycler;

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
        Self::reusing(Vec::new(), n)
    }
    /// A writer into `buf`, emptied first (its capacity is kept), with room for `n` bytes.
    fn reusing(mut buf: Vec<u8>, n: usize) -> Self {
        buf.clear();
        // Exact: a reused buffer a little short of a larger message grows to that message, not
        // to twice its size (pooled memory stays the size of the messages).
        buf.reserve_exact(n);
        Self { buf }
    }
    fn align(&mut self, n: usize) {
        let pad = (n - self.buf.len() % n) % n;
        self.buf.extend(std::iter::repeat_n(0u8, pad));
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `values` as little-endian `f32`s (the caller aligned the buffer). On a little-endian
    /// host their bytes already are that: one block copy, where zero-filling the megabyte of
    /// 4096 descriptors and then writing each value was two passes over it.
    fn f32s(&mut self, values: &[f32]) {
        if cfg!(target_endian = "little") {
            self.buf.extend_from_slice(bytemuck::cast_slice(values));
        } else {
            let start = self.buf.len();
            self.buf.resize(start + values.len() * 4, 0);
            for (dst, v) in self.buf[start..].chunks_exact_mut(4).zip(values) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
        }
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

/// Where the `descriptors_q7` bytes of a message come from.
enum Q7Source<'a> {
    /// Already quantised.
    Values(&'a [i8]),
    /// Quantised while encoding (the core's `to_q7`).
    Quantise(&'a [Descriptor]),
}

/// Classic CDR of a `KeypointArray` made of these parts; `fields` gives a keypoint's five
/// floats (x, y, scale, orientation, response) and its Laplacian sign.
#[allow(clippy::too_many_arguments)] // The message's fields, one by one.
fn encode_keypoint_parts<K>(
    buf: Vec<u8>,
    header: &Header,
    keypoints: &[K],
    fields: impl Fn(&K) -> ([f32; 5], i8),
    descriptors: &[f32],
    q7: Q7Source<'_>,
    descriptor_length: u32,
    dropped: u32,
) -> Vec<u8> {
    let n = keypoints.len();
    let q7_len = match q7 {
        Q7Source::Values(v) => v.len(),
        Q7Source::Quantise(d) => d.len() * DESCRIPTOR_LEN,
    };
    let mut w = Cdr::reusing(
        buf,
        64 + header.frame_id.len() + n * 24 + descriptors.len() * 4 + q7_len,
    );
    w.header(header);
    w.len(n);
    // Each keypoint: five f32 and an i8, then 3 bytes of padding before the next one's first
    // f32 (24 bytes, since the array starts 4-aligned); the last one has no padding.
    let start = w.buf.len();
    w.buf.resize(start + n * 24, 0);
    for (dst, k) in w.buf[start..].chunks_exact_mut(24).zip(keypoints) {
        let (f, laplacian) = fields(k);
        for (d, v) in dst[..20].chunks_exact_mut(4).zip(f) {
            d.copy_from_slice(&v.to_le_bytes());
        }
        dst[20] = laplacian as u8;
    }
    if n > 0 {
        w.buf.truncate(start + n * 24 - 3);
    }
    w.len(descriptors.len());
    w.f32s(descriptors);
    w.len(q7_len);
    match q7 {
        Q7Source::Values(v) => w.buf.extend(v.iter().map(|&v| v as u8)),
        Q7Source::Quantise(d) => {
            for desc in d {
                w.buf.extend(to_q7(desc).iter().map(|&v| v as u8));
            }
        }
    }
    w.u32(descriptor_length);
    w.u32(dropped);
    w.buf
}

/// Classic CDR of a [`KeypointArray`], byte for byte what the serde path writes.
pub fn encode_keypoint_array(m: &KeypointArray) -> Vec<u8> {
    encode_keypoint_parts(
        Vec::new(),
        &m.header,
        &m.keypoints,
        |k| ([k.x, k.y, k.scale, k.orientation, k.response], k.laplacian),
        &m.descriptors,
        Q7Source::Values(&m.descriptors_q7),
        m.descriptor_length,
        m.dropped,
    )
}

/// Classic CDR of the `KeypointArray` of one frame's detection, straight from the backend's
/// arrays (no message built first): its keypoints, and its descriptors as `repr` asks (f32 in
/// `descriptors`, or quantised to Q7 in `descriptors_q7`). The same bytes as
/// [`encode_keypoint_array`] of that message. Written into `buf` (emptied first): a buffer
/// from a [`BufferPool`] has its memory in place already, where a fresh megabyte costs a page
/// fault per 4 KiB (0.6 ms for 4096 keypoints on the development VM, ten times the encoding).
pub fn encode_detection(
    buf: Vec<u8>,
    header: &Header,
    keypoints: &[Keypoint],
    descriptors: &[Descriptor],
    repr: DescriptorKind,
    dropped: usize,
) -> Vec<u8> {
    let (f32s, q7): (&[f32], _) = match repr {
        DescriptorKind::F32 => (descriptors.as_flattened(), Q7Source::Values(&[])),
        DescriptorKind::Q7 => (&[], Q7Source::Quantise(descriptors)),
    };
    encode_keypoint_parts(
        buf,
        header,
        keypoints,
        |k| ([k.x, k.y, k.scale, k.orientation, k.response], k.laplacian),
        f32s,
        q7,
        DESCRIPTOR_LEN as u32,
        u32::try_from(dropped).unwrap_or(u32::MAX),
    )
}

/// Output buffers reused from frame to frame. An encoded message goes to DDS as [`Bytes`] that
/// the writer keeps (its history) and drops later on another thread; made with
/// [`BufferPool::bytes`], the buffer then comes back here instead of being freed, so the next
/// frame encodes into memory that is already mapped.
///
/// How many come back at once depends on the writer. A best-effort writer drops each message
/// when the fifth after it is written (keep last 5): a few buffers go round. A reliable RustDDS
/// (0.15) writer keeps every acknowledged message until its cache cleaning, every 6 s, and then
/// drops them together: at 30 Hz about 180 buffers (200 MB at 1.1 MB, 4096 keypoints with f32
/// descriptors) come back at once and are used up over the next 6 s. The pool keeps them all,
/// up to its byte limit ([`BufferPool::new`], [`BufferPool::DEFAULT_MAX_BYTES`]) and
/// [`BufferPool::MAX_KEPT`] buffers; beyond, they are freed. A buffer is only made when none
/// waits, so the pool never holds more than what DDS held at once before: it keeps the memory
/// at that peak instead of giving it back and faulting it in again. What is not kept (before
/// the first cleaning, or past the limit) [`BufferPool::prepare`] makes and maps ahead, off the
/// frame's path.
#[derive(Debug, Clone)]
pub struct BufferPool {
    buffers: Recycler<POOL_MAX_KEPT>,
    counts: Arc<PoolCounts>,
}

/// [`BufferPool::MAX_KEPT`]: 6 s at 120 Hz and some.
const POOL_MAX_KEPT: usize = 1024;

/// Buffers a pool made.
#[derive(Debug, Default)]
struct PoolCounts {
    /// Handed out new by `take` (the message was encoded into fresh memory).
    new: AtomicU64,
    /// Made and mapped ahead by `prepare`.
    prepared: AtomicU64,
}

/// A pooled buffer while DDS holds it: goes back to its pool when dropped.
struct Pooled {
    buf: Vec<u8>,
    home: Recycler<POOL_MAX_KEPT>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.home.give(std::mem::take(&mut self.buf));
    }
}

impl Default for BufferPool {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_BYTES)
    }
}

impl BufferPool {
    /// Buffers kept for reuse at most.
    pub const MAX_KEPT: usize = POOL_MAX_KEPT;

    /// Bytes kept for reuse at most by default (256 MiB): what a reliable writer lets go at its
    /// 6 s cleaning at 30 Hz for messages up to 1.4 MB (4096 keypoints with f32 descriptors
    /// are 1.1 MB).
    pub const DEFAULT_MAX_BYTES: usize = 256 << 20;

    /// A pool that keeps at most `max_bytes` bytes (buffer capacities) for reuse.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            buffers: Recycler::with_max_bytes(max_bytes),
            counts: Arc::default(),
        }
    }

    /// A buffer to encode into: a returned one when there is one (the one returned last),
    /// else a new empty one.
    pub fn take(&self) -> Vec<u8> {
        let buf = self.buffers.take();
        if buf.capacity() == 0 {
            self.counts.new.fetch_add(1, Ordering::Relaxed);
        }
        buf
    }

    /// `buf` as [`Bytes`] that return it to this pool when the last reference is dropped.
    pub fn bytes(&self, buf: Vec<u8>) -> Bytes {
        Bytes::from_owner(Pooled {
            buf,
            home: self.buffers.clone(),
        })
    }

    /// Makes sure that the next [`BufferPool::take`] hands out a buffer of at least `capacity`
    /// bytes (pass the capacity of the buffer the last message was encoded into: the encoder
    /// reserves a little more than it writes) whose memory is mapped: when the one it would
    /// hand out is smaller (or none waits), allocates one and writes a byte of each 4 KiB page,
    /// so that the page faults happen here (between frames) instead of while the next message
    /// is encoded. Not when the pool would not keep it (its limits). Returns whether it made
    /// one.
    pub fn prepare(&self, capacity: usize) -> bool {
        if capacity == 0
            || self.buffers.next_capacity() >= capacity
            || !self.buffers.would_keep(capacity)
        {
            return false;
        }
        let mut buf = Vec::<u8>::with_capacity(capacity);
        for b in buf.spare_capacity_mut().iter_mut().step_by(4096) {
            b.write(0);
        }
        // The writes are what this is for: keep them.
        std::hint::black_box(buf.spare_capacity_mut().as_mut_ptr());
        self.buffers.give(buf);
        self.counts.prepared.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Buffers waiting for reuse.
    pub fn available(&self) -> usize {
        self.buffers.available()
    }

    /// Bytes (capacities) of the buffers waiting for reuse.
    pub fn kept_bytes(&self) -> usize {
        self.buffers.kept_bytes()
    }

    /// Buffers [`BufferPool::take`] handed out new (a message encoded into fresh memory).
    pub fn new_buffers(&self) -> u64 {
        self.counts.new.load(Ordering::Relaxed)
    }

    /// Buffers [`BufferPool::prepare`] made.
    pub fn prepared_buffers(&self) -> u64 {
        self.counts.prepared.load(Ordering::Relaxed)
    }
}

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

/// The decoder half of [`BulkCdr`] (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkCdrDecoder;

const CDR_ENCODINGS: [RepresentationIdentifier; 2] = [
    RepresentationIdentifier::CDR_LE,
    RepresentationIdentifier::CDR_BE,
];

macro_rules! bulk_decoding {
    ($ty:ty, $decode:path) => {
        impl DeserializerAdapter<$ty> for BulkCdr {
            type Error = WireError;
            type Decoded = $ty;
            fn supported_encodings() -> &'static [RepresentationIdentifier] {
                &CDR_ENCODINGS
            }
            fn transform_decoded(decoded: $ty) -> $ty {
                decoded
            }
        }
        impl DefaultDecoder<$ty> for BulkCdr {
            type Decoder = BulkCdrDecoder;
            const DECODER: BulkCdrDecoder = BulkCdrDecoder;
        }
        impl Decode<'_, $ty> for BulkCdrDecoder {
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

#[cfg(test)]
mod tests {
    use super::*;
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

    fn serde_cdr_be<T: serde::Serialize>(v: &T) -> Vec<u8> {
        ros2_client::dds::rustdds::cdr_encoding::to_vec::<T, byteorder::BigEndian>(v).unwrap()
    }

    fn matches(n: u32, f1: &str, f2: &str) -> MatchArray {
        MatchArray {
            header: Header {
                stamp: Time::new(5, 6),
                frame_id: f1.into(),
            },
            previous_header: Header {
                stamp: Time::new(-4, 7),
                frame_id: f2.into(),
            },
            matches: (0..n)
                .map(|i| MatchMsg {
                    query: i,
                    train: 2 * i + 1,
                    distance: 0.25 * i as f32,
                })
                .collect(),
        }
    }

    const LE: RepresentationIdentifier = RepresentationIdentifier::CDR_LE;
    const BE: RepresentationIdentifier = RepresentationIdentifier::CDR_BE;

    #[test]
    fn a_detection_encodes_as_its_keypoint_array() {
        for n in [0usize, 1, 2, 7] {
            let kps: Vec<Keypoint> = (0..n)
                .map(|i| Keypoint {
                    x: 3.5 * i as f32,
                    y: 1.25 + i as f32,
                    scale: 1.6 + 0.1 * i as f32,
                    orientation: -0.5 * i as f32,
                    response: 2e-4 * (i + 1) as f32,
                    laplacian: if i % 3 == 0 { -1 } else { 1 },
                    ..Keypoint::default()
                })
                .collect();
            let descs: Vec<Descriptor> = (0..n)
                .map(|i| core::array::from_fn(|j| ((i * 64 + j) as f32 * 0.37).sin() * 1.01))
                .collect();
            for (repr, dropped) in [(DescriptorKind::F32, 0usize), (DescriptorKind::Q7, 12)] {
                let msg = KeypointArray {
                    header: Header {
                        stamp: Time::new(7, 8),
                        frame_id: "cam".into(),
                    },
                    keypoints: kps.iter().map(KeypointMsg::from).collect(),
                    descriptors: match repr {
                        DescriptorKind::F32 => descs.as_flattened().to_vec(),
                        DescriptorKind::Q7 => Vec::new(),
                    },
                    descriptors_q7: match repr {
                        DescriptorKind::F32 => Vec::new(),
                        DescriptorKind::Q7 => descs.iter().flat_map(to_q7).collect(),
                    },
                    descriptor_length: 64,
                    dropped: dropped as u32,
                };
                assert_eq!(
                    encode_detection(Vec::new(), &msg.header, &kps, &descs, repr, dropped),
                    serde_cdr(&msg),
                    "n={n} {repr:?}"
                );
            }
        }
    }

    #[test]
    fn pooled_buffers_come_back_and_are_reused() {
        let pool = BufferPool::default();
        let m = keypoints(50, "cam", false);
        let expected = serde_cdr(&m);
        let mut buf = pool.take();
        assert_eq!(buf.capacity(), 0, "an empty pool gives a new buffer");
        buf.extend_from_slice(&[9; 100]);
        let b = pool.bytes(buf);
        let b2 = b.clone();
        drop(b);
        assert_eq!(pool.available(), 0, "a clone still holds the buffer");
        drop(b2);
        assert_eq!(pool.available(), 1);
        // Reused: old contents gone, capacity kept, same bytes as a fresh encoding.
        let reused = pool.take();
        assert!(reused.capacity() >= 100);
        let parts = |buf| {
            encode_keypoint_parts(
                buf,
                &m.header,
                &m.keypoints,
                |k| ([k.x, k.y, k.scale, k.orientation, k.response], k.laplacian),
                &m.descriptors,
                Q7Source::Values(&m.descriptors_q7),
                m.descriptor_length,
                m.dropped,
            )
        };
        assert_eq!(parts(reused), expected);
        // Bounded: beyond MAX_KEPT, returned buffers are freed.
        let held: Vec<Bytes> = (0..BufferPool::MAX_KEPT + 3)
            .map(|_| pool.bytes(vec![1; 10]))
            .collect();
        drop(held);
        assert_eq!(pool.available(), BufferPool::MAX_KEPT);
    }

    /// A reliable RustDDS writer keeps every message until its cleaning (6 s) and then drops
    /// them all at once: the pool keeps all of them (within its byte limit), so that the next
    /// 6 s of messages are encoded into memory that is already mapped, and none is new.
    #[test]
    fn a_cleaning_s_worth_of_buffers_comes_back_whole() {
        const SIZE: usize = 10_000;
        const AT_ONCE: usize = 180; // 6 s at 30 Hz
        let pool = BufferPool::new(200 * SIZE);
        let cycle = |pool: &BufferPool| -> Vec<Bytes> {
            (0..AT_ONCE)
                .map(|i| {
                    let mut buf = pool.take();
                    buf.clear();
                    buf.resize(SIZE, i as u8);
                    pool.bytes(buf)
                })
                .collect()
        };
        let held = cycle(&pool);
        assert_eq!(
            pool.new_buffers(),
            AT_ONCE as u64,
            "the first period is new memory"
        );
        drop(held); // the cleaning
        assert_eq!(pool.available(), AT_ONCE);
        assert_eq!(pool.kept_bytes(), AT_ONCE * SIZE);
        for _ in 0..3 {
            drop(cycle(&pool));
        }
        assert_eq!(
            pool.new_buffers(),
            AT_ONCE as u64,
            "steady state: nothing new"
        );
        // The byte limit holds: a pool of 100 buffers' worth keeps 100 and frees the rest.
        let small = BufferPool::new(100 * SIZE);
        drop(cycle(&small));
        assert_eq!(small.available(), 100);
        assert_eq!(small.kept_bytes(), 100 * SIZE);
        drop(cycle(&small));
        assert_eq!(small.new_buffers(), (AT_ONCE + AT_ONCE - 100) as u64);
    }

    #[test]
    fn prepare_maps_one_buffer_ahead_within_the_limit() {
        let pool = BufferPool::new(3 << 20);
        assert!(!pool.prepare(0));
        assert!(pool.prepare(1 << 20), "empty: one is made");
        assert!(!pool.prepare(1 << 20), "one of the size waits already");
        assert!(pool.prepare(2 << 20), "the waiting one is too small");
        assert_eq!((pool.available(), pool.prepared_buffers()), (2, 2));
        assert!(!pool.prepare(3 << 20), "past the byte limit: not made");
        let buf = pool.take();
        assert!(buf.capacity() >= 2 << 20 && buf.is_empty());
        assert_eq!(pool.new_buffers(), 0, "a prepared buffer is not new");
        // Encoding into it gives the same bytes as into a fresh one.
        let m = keypoints(20, "cam", false);
        let kps: Vec<Keypoint> = m
            .keypoints
            .iter()
            .map(|k| Keypoint {
                x: k.x,
                y: k.y,
                scale: k.scale,
                orientation: k.orientation,
                response: k.response,
                laplacian: k.laplacian,
                ..Keypoint::default()
            })
            .collect();
        let descs: Vec<Descriptor> = m
            .descriptors
            .chunks_exact(DESCRIPTOR_LEN)
            .map(|c| core::array::from_fn(|j| c[j]))
            .collect();
        let fresh = encode_detection(Vec::new(), &m.header, &kps, &descs, DescriptorKind::F32, 0);
        let capacity = buf.capacity();
        let reused = encode_detection(buf, &m.header, &kps, &descs, DescriptorKind::F32, 0);
        assert_eq!(reused, fresh);
        assert_eq!(
            reused.capacity(),
            capacity,
            "encoded in place, not reallocated"
        );
        // A prepared buffer of a message's capacity takes the next one of that size as it is.
        let pool = BufferPool::new(16 << 20);
        assert!(pool.prepare(fresh.capacity()));
        let buf = pool.take();
        let capacity = buf.capacity();
        let again = encode_detection(buf, &m.header, &kps, &descs, DescriptorKind::F32, 0);
        assert_eq!((again.capacity(), &again), (capacity, &fresh));
        // A buffer a little short grows to the message, not to twice its size.
        let short = Vec::with_capacity(fresh.len() - 10);
        let grown = encode_detection(short, &m.header, &kps, &descs, DescriptorKind::F32, 0);
        assert!(grown.capacity() < fresh.len() + 100, "{}", grown.capacity());
    }

    #[test]
    fn keypoint_arrays_decode_to_what_was_encoded_in_either_byte_order() {
        for n in [0, 1, 2, 3, 5, 100] {
            for frame in ["", "c", "cam", "camera_optical", "kamera_\u{f6}"] {
                for q7 in [false, true] {
                    let m = keypoints(n, frame, q7);
                    let what = format!("n={n} frame={frame:?} q7={q7}");
                    assert_eq!(
                        decode_keypoint_array(&encode_keypoint_array(&m), LE).as_ref(),
                        Ok(&m),
                        "{what}"
                    );
                    assert_eq!(
                        decode_keypoint_array(&serde_cdr_be(&m), BE).as_ref(),
                        Ok(&m),
                        "{what}"
                    );
                }
            }
        }
    }

    #[test]
    fn match_arrays_decode_to_what_was_encoded_in_either_byte_order() {
        for n in [0, 1, 7, 300] {
            for (f1, f2) in [("", ""), ("a", "bc"), ("cam", ""), ("", "left_camera")] {
                let m = matches(n, f1, f2);
                assert_eq!(
                    decode_match_array(&encode_match_array(&m), LE).as_ref(),
                    Ok(&m)
                );
                assert_eq!(decode_match_array(&serde_cdr_be(&m), BE).as_ref(), Ok(&m));
            }
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        let kp = encode_keypoint_array(&keypoints(3, "cam", false));
        let q7 = encode_keypoint_array(&keypoints(2, "c", true));
        let m = encode_match_array(&matches(3, "a", "bc"));
        for bytes in [&kp, &q7] {
            for len in 0..bytes.len() {
                assert!(
                    matches!(
                        decode_keypoint_array(&bytes[..len], LE),
                        Err(WireError::Truncated { .. })
                    ),
                    "prefix of {len} of {} bytes",
                    bytes.len()
                );
            }
        }
        for len in 0..m.len() {
            assert!(
                matches!(
                    decode_match_array(&m[..len], LE),
                    Err(WireError::Truncated { .. })
                ),
                "prefix of {len}"
            );
        }
    }

    #[test]
    fn malformed_payloads_are_errors_not_panics() {
        let m = keypoints(4, "cam", false);
        let good = encode_keypoint_array(&m);
        // A sequence count far beyond the payload: refused before anything is allocated.
        let mut huge = good.clone();
        let count_at = 4 + 4 + 4 + 4; // stamp, frame_id length, "cam\0"
        huge[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            decode_keypoint_array(&huge, LE),
            Err(WireError::Truncated {
                field: "keypoints",
                ..
            })
        ));
        // A string without its NUL, and one that is not UTF-8.
        let mut no_nul = good.clone();
        no_nul[8 + 4 + 3] = b'x';
        assert_eq!(
            decode_keypoint_array(&no_nul, LE),
            Err(WireError::BadString("header"))
        );
        let mut not_utf8 = good.clone();
        not_utf8[8 + 4] = 0xff;
        assert_eq!(
            decode_keypoint_array(&not_utf8, LE),
            Err(WireError::BadString("header"))
        );
        // Not classic CDR.
        assert!(matches!(
            decode_keypoint_array(&good, RepresentationIdentifier::CDR2_LE),
            Err(WireError::Representation(_))
        ));
        // Random damage (a fixed-seed generator): never a panic, and whenever both decoders
        // accept the bytes, they agree (compared re-encoded: damage can make NaNs).
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let m_bytes = encode_match_array(&matches(5, "a", "bc"));
        for _ in 0..4000 {
            for (bytes, is_kp) in [(&good, true), (&m_bytes, false)] {
                let mut b = bytes.clone();
                for _ in 0..1 + next() % 4 {
                    let i = (next() % b.len() as u64) as usize;
                    b[i] = next() as u8;
                }
                b.truncate(b.len() - (next() % 3) as usize);
                if is_kp {
                    let ours = decode_keypoint_array(&b, LE);
                    let theirs = ros2_client::dds::rustdds::cdr_encoding::from_bytes::<
                        KeypointArray,
                        LittleEndian,
                    >(&b);
                    if let (Ok(a), Ok((t, _))) = (&ours, &theirs) {
                        assert_eq!(encode_keypoint_array(a), encode_keypoint_array(t));
                    }
                } else {
                    let ours = decode_match_array(&b, LE);
                    let theirs = ros2_client::dds::rustdds::cdr_encoding::from_bytes::<
                        MatchArray,
                        LittleEndian,
                    >(&b);
                    if let (Ok(a), Ok((t, _))) = (&ours, &theirs) {
                        assert_eq!(encode_match_array(a), encode_match_array(t));
                    }
                }
            }
        }
    }

    /// `cargo test -p surfcl-ros --release --lib wire -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn decoding_speed_against_serde() {
        let bytes = encode_keypoint_array(&keypoints(4096, "camera", false));
        let t = std::time::Instant::now();
        for _ in 0..50 {
            std::hint::black_box(decode_keypoint_array(&bytes, LE).unwrap());
        }
        let bulk = t.elapsed().as_secs_f64() * 1e3 / 50.0;
        let t = std::time::Instant::now();
        for _ in 0..50 {
            std::hint::black_box(
                ros2_client::dds::rustdds::cdr_encoding::from_bytes::<KeypointArray, LittleEndian>(
                    &bytes,
                )
                .unwrap(),
            );
        }
        let serde = t.elapsed().as_secs_f64() * 1e3 / 50.0;
        println!("KeypointArray 4096 f32 decoding: bulk {bulk:.3} ms, serde {serde:.3} ms");
    }
}
