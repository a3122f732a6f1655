//! Messages the unit tests of the encoders and the pool share, and `tests/wire_decode.rs` (by
//! `#[path]`, so the names stay `crate::msg::...`).

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
