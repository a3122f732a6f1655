//! The tests' block decoder (`common::decode`) against the node's encoders and the serde path.

mod common;

use byteorder::LittleEndian;
use common::decode::{WireError, decode_keypoint_array, decode_match_array};
use ros2_client::builtin_interfaces::Time;
use ros2_client::dds::rustdds::RepresentationIdentifier;
use surfcl_ros::msg::{Header, KeypointArray, MatchArray, MatchMsg};
use surfcl_ros::wire::{encode_keypoint_array, encode_match_array};
// `test_messages` names its types as `crate::msg::...`, as inside the library.
use surfcl_ros::msg;

/// The messages of the encoders' unit tests, so that this decoder is checked on the same ones.
#[path = "../src/wire/test_messages.rs"]
#[allow(
    dead_code,
    reason = "serde_cdr (little endian) serves the unit tests only"
)]
mod test_messages;
use test_messages::keypoints;

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

/// `cargo test -p surfcl-ros --release --test wire_decode -- --ignored --nocapture`
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
