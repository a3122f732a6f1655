//! Fuzz entry of the ROS node's image message checks (`ros-node/src/convert.rs`, compiled into
//! this crate as [`crate::convert`]).

use crate::convert::{Encoding, to_gray, validate};
use crate::msg::Image;

use crate::entry::Reader;

/// Encodings tried: the five accepted ones, near misses, and arbitrary bytes.
const ENCODINGS: [&str; 8] = [
    "mono8", "rgb8", "bgr8", "rgba8", "bgra8", "8UC1", "mono16", "RGB8",
];

/// `validate` then `to_gray` on a message whose declared fields (height, width, step, data
/// length) are arbitrary and inconsistent with each other.
pub fn ros_image(data: &[u8]) {
    let mut r = Reader::new(data);
    let height = r.u32();
    let width = r.u32();
    let sel = r.u8();
    let step_delta = r.u16() as i16;
    let len_delta = r.u16() as i16;
    let encoding = match ENCODINGS.get(usize::from(sel % 9)) {
        Some(e) => (*e).to_string(),
        None => String::from_utf8_lossy(&[r.u8(), r.u8()]).into_owned(),
    };
    let bpp = Encoding::parse(&encoding).map_or(1, Encoding::bytes_per_pixel);
    let step = (u64::from(width) * bpp as u64).saturating_add_signed(i64::from(step_delta));
    let step = u32::try_from(step).unwrap_or(u32::MAX);
    let pixels = r.rest();
    // The body: the pixels given, stretched (cycled) to `step * height + len_delta` bytes, but
    // never beyond 4 MiB, so that huge declared sizes come with a small body.
    let want = (u64::from(step) * u64::from(height)).saturating_add_signed(i64::from(len_delta));
    let len = usize::try_from(want.min(4 << 20)).unwrap_or(0);
    let body = cycle_to(pixels, len);
    let msg = Image {
        height,
        width,
        encoding,
        // The selector's top bit: saved inputs keep the meaning of every other byte.
        is_bigendian: sel >> 7,
        step,
        data: body,
        ..Image::default()
    };
    if let Ok(layout) = validate(&msg) {
        assert_eq!(layout.step * layout.height, msg.data.len());
        let mut out = Vec::new();
        to_gray(&msg.data, &layout, &mut out);
        assert_eq!(out.len(), layout.width * layout.height);
    }
}

/// `pixels` repeated to `len` bytes (zeros when empty), by doubling copies: a byte-by-byte
/// cycle made multi-MiB bodies cost tens of ms each under ASan and held the target at ~17
/// executions/s.
fn cycle_to(pixels: &[u8], len: usize) -> Vec<u8> {
    if pixels.is_empty() {
        return vec![0; len];
    }
    let mut body = Vec::with_capacity(len);
    body.extend_from_slice(&pixels[..pixels.len().min(len)]);
    // `body` is a whole number of repetitions here, so any prefix of it continues the cycle.
    while body.len() < len {
        let n = body.len().min(len - body.len());
        body.extend_from_within(..n);
    }
    body
}
