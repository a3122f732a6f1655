//! Publishing a frame's outputs: keypoints (as soon as they exist), matches, and the debug
//! picture. A failed write is logged; the frame still counts as processed.

use std::time::Instant;

use ros2_client::dds::rustdds::Timestamp;
use ros2_client::ros2::LogLevel;
use surfcl_core::Keypoint;

use super::entities::Outputs;
use super::logger::Logger;
use super::stats::StageTimes;
use crate::msg::{Header, Image, MatchArray, MatchMsg};
use crate::params::NodeParams;
use crate::processor::Detection;
use crate::wire::{Encoded, encode_detection};

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Encodes and writes the keypoints of `detection`, timing both into `stages`. Returns the
/// capacity of the buffer used, so that the next one can be prepared to fit.
pub(super) fn keypoints(
    out: &Outputs,
    log: &Logger,
    header: &Header,
    detection: &Detection,
    params: &NodeParams,
    stages: &mut StageTimes,
) -> usize {
    let t = Instant::now();
    let encoded = encode_detection(
        out.buffers.take(),
        header,
        &detection.keypoints,
        &detection.descriptors,
        params.descriptor,
        detection.dropped,
    );
    let capacity = encoded.capacity();
    let message = Encoded(out.buffers.bytes(encoded));
    stages.build_ms = ms_since(t);
    let t = Instant::now();
    if let Err(e) = out.keypoints.write(message, Some(Timestamp::now())) {
        log.log(
            LogLevel::Warn,
            &format!("publishing keypoints failed: {e:?}"),
        );
    }
    stages.publish_ms = ms_since(t);
    capacity
}

/// Builds and writes the `MatchArray` of `header` against `previous_header`, timing both into
/// `stages` (added to the keypoints' times).
pub(super) fn matches(
    out: &Outputs,
    log: &Logger,
    header: &Header,
    previous_header: Header,
    matches: Vec<MatchMsg>,
    stages: &mut StageTimes,
) {
    let t = Instant::now();
    let message = MatchArray {
        header: header.clone(),
        previous_header,
        matches,
    };
    stages.build_ms += ms_since(t);
    let t = Instant::now();
    if let Err(e) = out.matches.write(message, Some(Timestamp::now())) {
        log.log(LogLevel::Warn, &format!("publishing matches failed: {e:?}"));
    }
    stages.publish_ms += ms_since(t);
}

/// What the debug picture shows.
pub(super) struct DebugPicture<'a> {
    /// The frame's gray pixels.
    pub(super) pixels: &'a [u8],
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) keypoints: &'a [Keypoint],
    /// The previous frame's keypoints, which `matches` index as `train`.
    pub(super) previous: &'a [Keypoint],
    pub(super) matches: &'a [MatchMsg],
}

/// Draws `picture` into `rgb` (reused between frames) and publishes it as `debug_image`.
pub(super) fn debug_image(
    out: &Outputs,
    log: &Logger,
    header: &Header,
    picture: &DebugPicture<'_>,
    rgb: &mut Vec<u8>,
) {
    crate::debug::render(
        picture.pixels,
        picture.width,
        picture.height,
        picture.keypoints,
        picture.previous,
        picture.matches,
        rgb,
    );
    let message = Image {
        header: header.clone(),
        height: picture.height as u32,
        width: picture.width as u32,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: (picture.width * 3) as u32,
        data: rgb.clone(),
    };
    if let Err(e) = out.debug.publish(message) {
        log.log(
            LogLevel::Warn,
            &format!("publishing debug_image failed: {e:?}"),
        );
    }
}
