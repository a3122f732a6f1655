//! Classic little-endian CDR of `KeypointArray` and `MatchArray`, written in one pass over
//! contiguous arrays: byte for byte what ros2-client's serde path writes (the tests compare).

use byteorder::LittleEndian;

use surfcl_core::config::DescriptorKind;
use surfcl_core::describe::to_q7;
use surfcl_core::{DESCRIPTOR_LEN, Descriptor, Keypoint};

use crate::msg::{Header, KeypointArray, MatchArray};

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
pub(super) enum Q7Source<'a> {
    /// Already quantised.
    Values(&'a [i8]),
    /// Quantised while encoding (the core's `to_q7`).
    Quantise(&'a [Descriptor]),
}

/// Classic CDR of a `KeypointArray` made of these parts; `fields` gives a keypoint's five
/// floats (x, y, scale, orientation, response) and its Laplacian sign.
#[allow(clippy::too_many_arguments)] // The message's fields, one by one.
pub(super) fn encode_keypoint_parts<K>(
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
    encode_keypoint_array_into(Vec::new(), m)
}

/// [`encode_keypoint_array`] into `buf` (emptied first, its capacity kept).
pub(super) fn encode_keypoint_array_into(buf: Vec<u8>, m: &KeypointArray) -> Vec<u8> {
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
}

/// Classic CDR of the `KeypointArray` of one frame's detection, straight from the backend's
/// arrays (no message built first): its keypoints, and its descriptors as `repr` asks (f32 in
/// `descriptors`, or quantised to Q7 in `descriptors_q7`). The same bytes as
/// [`encode_keypoint_array`] of that message. Written into `buf` (emptied first): a buffer
/// from a [`BufferPool`](super::BufferPool) has its memory in place already, where a fresh megabyte costs a page
/// fault per 4 KiB (several times the encoding itself).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::{KeypointMsg, MatchMsg};
    use crate::wire::test_messages::{keypoints, serde_cdr};
    use ros2_client::builtin_interfaces::Time;

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
}
