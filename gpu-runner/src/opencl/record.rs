//! The layout of a detector's result buffer, in one place for the host and the kernels.
//!
//! Every detector kernel set (surf.cl, harris.cl) writes its frame's results into one `u32`
//! buffer: a header of [`HEADER_WORDS`] words, then per kept keypoint a record of [`KP_WORDS`]
//! keypoint words followed by its `DESCRIPTOR_LEN` descriptor floats (as bits). The kernels get
//! the constants of this module as `-D` build options ([`kernel_defines`]), so a layout change
//! is made here and nowhere else; the host reads the buffer through [`Header`] and [`Record`].

use std::fmt::Write as _;

use surfcl_core::surf::MAX_OCTAVES as CORE_MAX_OCTAVES;
use surfcl_core::{DESCRIPTOR_LEN, Descriptor, Keypoint};

/// Words of the result header.
pub(crate) const HEADER_WORDS: usize = 16;
/// Words of one keypoint record (before its descriptor).
pub(crate) const KP_WORDS: usize = 8;
/// Words of a keypoint record plus its descriptor.
pub(crate) const RECORD_WORDS: usize = KP_WORDS + DESCRIPTOR_LEN;
/// Octaves the SURF kernels support (the core's limit).
pub(crate) const MAX_OCTAVES: usize = CORE_MAX_OCTAVES as usize;

/// Header word: candidates found (every append counts, also those that did not fit).
const H_CANDIDATES: usize = 0;
/// Header word: non-zero when candidates did not fit the candidate buffer.
const H_OVERFLOW: usize = 1;
/// Header word (Harris): the frame's largest response as an order-preserving `u32`.
const H_MAX: usize = 2;

/// Keypoint record words: `f32` bits of x, y, scale, orientation and response, the meta word
/// (octave, interval and Laplacian sign, one byte each from the low end), then the sampling-grid
/// position x and y.
const KP_X: usize = 0;
const KP_Y: usize = 1;
const KP_SCALE: usize = 2;
const KP_ORIENTATION: usize = 3;
const KP_RESPONSE: usize = 4;
const KP_META: usize = 5;
const KP_SAMPLE_X: usize = 6;
const KP_SAMPLE_Y: usize = 7;
/// Bit offsets of the meta word's bytes.
const META_OCTAVE_SHIFT: u32 = 0;
const META_INTERVAL_SHIFT: u32 = 8;
const META_LAPLACIAN_SHIFT: u32 = 16;

/// The layout as `-D` options for the OpenCL compiler (the kernels do not define these names).
pub(crate) fn kernel_defines() -> String {
    let words: [(&str, usize); 16] = [
        ("HEADER_WORDS", HEADER_WORDS),
        ("KP_WORDS", KP_WORDS),
        ("DESC_LEN", DESCRIPTOR_LEN),
        ("RECORD_WORDS", RECORD_WORDS),
        ("MAX_OCTAVES", MAX_OCTAVES),
        ("H_CANDIDATES", H_CANDIDATES),
        ("H_OVERFLOW", H_OVERFLOW),
        ("H_MAX", H_MAX),
        ("KP_X", KP_X),
        ("KP_Y", KP_Y),
        ("KP_SCALE", KP_SCALE),
        ("KP_ORIENTATION", KP_ORIENTATION),
        ("KP_RESPONSE", KP_RESPONSE),
        ("KP_META", KP_META),
        ("KP_SAMPLE_X", KP_SAMPLE_X),
        ("KP_SAMPLE_Y", KP_SAMPLE_Y),
    ];
    let shifts = [
        ("META_OCTAVE_SHIFT", META_OCTAVE_SHIFT),
        ("META_INTERVAL_SHIFT", META_INTERVAL_SHIFT),
        ("META_LAPLACIAN_SHIFT", META_LAPLACIAN_SHIFT),
    ];
    let mut out = String::new();
    for (name, value) in words {
        let _ = write!(out, " -D {name}={value}");
    }
    for (name, value) in shifts {
        let _ = write!(out, " -D {name}={value}");
    }
    out
}

/// Words of a readback of the header and `records` records.
pub(crate) fn readback_words(records: usize) -> usize {
    HEADER_WORDS + records * RECORD_WORDS
}

/// The header of a result buffer readback.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header<'a>(&'a [u32; HEADER_WORDS]);

impl<'a> Header<'a> {
    /// The header at the start of `words` (`None` when the readback is shorter than a header).
    pub(crate) fn of(words: &'a [u32]) -> Option<Self> {
        words.first_chunk::<HEADER_WORDS>().map(Header)
    }

    /// Candidates the frame found (before the strongest-N selection).
    pub(crate) fn candidates(self) -> usize {
        self.0[H_CANDIDATES] as usize
    }

    /// Whether candidates did not fit the candidate buffer.
    pub(crate) fn overflowed(self) -> bool {
        self.0[H_OVERFLOW] != 0
    }

    /// The largest Harris response of the frame (`harris.cl`'s order-preserving encoding of
    /// `f32::total_cmp` undone).
    pub(crate) fn max_response(self) -> f32 {
        let bits = self.0[H_MAX];
        f32::from_bits(if bits & 0x8000_0000 != 0 {
            bits & 0x7fff_ffff
        } else {
            !bits
        })
    }
}

/// One keypoint record and its descriptor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a>(&'a [u32; RECORD_WORDS]);

impl<'a> Record<'a> {
    /// The first `count` records after the header of `words` (fewer when the readback is
    /// shorter).
    pub(crate) fn all(words: &'a [u32], count: usize) -> impl ExactSizeIterator<Item = Record<'a>> {
        // Exact size, so that collecting the keypoints and descriptors allocates once.
        let (records, _) = words
            .get(HEADER_WORDS..)
            .unwrap_or_default()
            .as_chunks::<RECORD_WORDS>();
        records.iter().take(count).map(Record)
    }

    /// The keypoint.
    pub(crate) fn keypoint(self) -> Keypoint {
        let r = self.0;
        let byte = |shift: u32| ((r[KP_META] >> shift) & 0xff) as u8;
        Keypoint {
            x: f32::from_bits(r[KP_X]),
            y: f32::from_bits(r[KP_Y]),
            scale: f32::from_bits(r[KP_SCALE]),
            orientation: f32::from_bits(r[KP_ORIENTATION]),
            response: f32::from_bits(r[KP_RESPONSE]),
            laplacian: byte(META_LAPLACIAN_SHIFT) as i8,
            octave: byte(META_OCTAVE_SHIFT),
            interval: byte(META_INTERVAL_SHIFT),
            sample_x: r[KP_SAMPLE_X],
            sample_y: r[KP_SAMPLE_Y],
        }
    }

    /// The descriptor.
    pub(crate) fn descriptor(self) -> Descriptor {
        let mut d = [0.0f32; DESCRIPTOR_LEN];
        for (v, &bits) in d.iter_mut().zip(&self.0[KP_WORDS..]) {
            *v = f32::from_bits(bits);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_the_fields_the_kernels_write() {
        let mut words = vec![0u32; readback_words(2)];
        words[H_CANDIDATES] = 7;
        words[H_OVERFLOW] = 1;
        let rec = &mut words[HEADER_WORDS + RECORD_WORDS..];
        rec[KP_X] = 12.5f32.to_bits();
        rec[KP_Y] = 3.25f32.to_bits();
        rec[KP_SCALE] = 2.0f32.to_bits();
        rec[KP_ORIENTATION] = (-1.5f32).to_bits();
        rec[KP_RESPONSE] = 0.01f32.to_bits();
        // As surf.cl packs it: octave 2, interval 3, Laplacian -1 as a byte.
        rec[KP_META] = 2 | (3 << 8) | (0xff << 16);
        rec[KP_SAMPLE_X] = 40;
        rec[KP_SAMPLE_Y] = 9;
        rec[KP_WORDS + 63] = 0.5f32.to_bits();
        let header = Header::of(&words).unwrap();
        assert_eq!(header.candidates(), 7);
        assert!(header.overflowed());
        let records: Vec<Record<'_>> = Record::all(&words, 5).collect();
        assert_eq!(records.len(), 2, "only whole records are read");
        let kp = records[1].keypoint();
        assert_eq!((kp.x, kp.y, kp.scale), (12.5, 3.25, 2.0));
        assert_eq!((kp.orientation, kp.response), (-1.5, 0.01));
        assert_eq!((kp.octave, kp.interval, kp.laplacian), (2, 3, -1));
        assert_eq!((kp.sample_x, kp.sample_y), (40, 9));
        assert_eq!(records[1].descriptor()[63], 0.5);
        assert!(Header::of(&words[..HEADER_WORDS - 1]).is_none());
    }

    #[test]
    fn the_harris_max_undoes_the_order_preserving_encoding() {
        // harris.cl: non-negative floats get the sign bit set, negative ones are inverted.
        let encode = |v: f32| {
            let b = v.to_bits();
            if b & 0x8000_0000 == 0 {
                b | 0x8000_0000
            } else {
                !b
            }
        };
        for v in [0.0f32, 1e-9, 3.5, -2.0, f32::MAX] {
            let mut words = [0u32; HEADER_WORDS];
            words[H_MAX] = encode(v);
            assert_eq!(Header::of(&words).unwrap().max_response(), v);
        }
    }

    #[test]
    fn every_layout_name_is_defined_once_for_the_kernels() {
        let defines = kernel_defines();
        for name in [
            "HEADER_WORDS",
            "KP_WORDS",
            "RECORD_WORDS",
            "KP_META",
            "H_MAX",
        ] {
            assert_eq!(defines.matches(&format!("-D {name}=")).count(), 1, "{name}");
        }
        assert!(defines.contains(&format!("-D RECORD_WORDS={RECORD_WORDS}")));
    }
}
