//! The ROS 2 messages the node sends and receives, as serde structs.
//!
//! ros2-client serialises messages with classic CDR in field declaration order, so each struct
//! mirrors its `.msg` file field by field (same order, same widths). The DDS type names follow
//! the ROS 2 convention `pkg::msg::dds_::Type_`, produced by [`MessageTypeName`].
//! `surfcl_msgs` is defined in `ros-node/msg/` (an ament interface package).

use ros2_client::builtin_interfaces::Time;
use ros2_client::{Message, MessageTypeName};
use serde::{Deserialize, Serialize};

/// `std_msgs/Header`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Acquisition time.
    pub stamp: Time,
    /// Coordinate frame.
    pub frame_id: String,
}
impl Message for Header {}

impl Default for Header {
    fn default() -> Self {
        Self {
            stamp: Time::ZERO,
            frame_id: String::new(),
        }
    }
}

/// `sensor_msgs/Image`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Image {
    /// Stamp and frame of the image.
    pub header: Header,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// Pixel encoding (`mono8`, `rgb8`, ...).
    pub encoding: String,
    /// Non-zero when multi-byte pixels are big-endian (irrelevant for 8-bit encodings).
    pub is_bigendian: u8,
    /// Bytes per row, including any padding.
    pub step: u32,
    /// `step * height` bytes. `serde_bytes` makes (de)serialisation a block copy instead of one
    /// call per byte, which matters for megabyte images.
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}
impl Message for Image {}

/// `surfcl_msgs/Keypoint`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct KeypointMsg {
    /// Sub-pixel column.
    pub x: f32,
    /// Sub-pixel row.
    pub y: f32,
    /// Scale (SURF sigma, or the fixed Harris descriptor scale).
    pub scale: f32,
    /// Orientation in radians, 0 when upright.
    pub orientation: f32,
    /// Detector response.
    pub response: f32,
    /// Sign of the Laplacian (1, -1, or 0 for Harris).
    pub laplacian: i8,
}
impl Message for KeypointMsg {}

impl From<&surfcl_core::Keypoint> for KeypointMsg {
    fn from(k: &surfcl_core::Keypoint) -> Self {
        Self {
            x: k.x,
            y: k.y,
            scale: k.scale,
            orientation: k.orientation,
            response: k.response,
            laplacian: k.laplacian,
        }
    }
}

/// `surfcl_msgs/KeypointArray`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KeypointArray {
    /// The input image's header.
    pub header: Header,
    /// Keypoints, strongest first.
    pub keypoints: Vec<KeypointMsg>,
    /// `keypoints.len() * descriptor_length` floats (empty when Q7 descriptors are sent).
    pub descriptors: Vec<f32>,
    /// `keypoints.len() * descriptor_length` Q7 values (empty when f32 descriptors are sent).
    /// Serialised as one block (a CDR `sequence<int8>` is laid out like `sequence<uint8>`).
    #[serde(with = "q7_bytes")]
    pub descriptors_q7: Vec<i8>,
    /// Values per descriptor (64).
    pub descriptor_length: u32,
    /// Candidates dropped because `max_keypoints` was reached.
    pub dropped: u32,
}
impl Message for KeypointArray {}

/// (De)serialises a `Vec<i8>` as a byte block: the same CDR bytes as element by element
/// (`u32` count, then one octet per value), without one serde call per value.
mod q7_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[i8], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = v.iter().map(|&x| x as u8).collect();
        s.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i8>, D::Error> {
        let bytes = serde_bytes::ByteBuf::deserialize(d)?;
        Ok(bytes.iter().map(|&x| x as i8).collect())
    }
}

/// `surfcl_msgs/Match`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct MatchMsg {
    /// Index into the current frame's keypoints.
    pub query: u32,
    /// Index into the previous frame's keypoints.
    pub train: u32,
    /// Descriptor distance.
    pub distance: f32,
}
impl Message for MatchMsg {}

/// `surfcl_msgs/MatchArray`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MatchArray {
    /// Header of the current frame.
    pub header: Header,
    /// Header of the previous frame the matches refer to.
    pub previous_header: Header,
    /// The matches.
    pub matches: Vec<MatchMsg>,
}
impl Message for MatchArray {}

/// `diagnostic_msgs/KeyValue`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KeyValue {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
}
impl Message for KeyValue {}

/// `diagnostic_msgs/DiagnosticStatus`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DiagnosticStatus {
    /// [`DiagnosticStatus::OK`], `WARN`, `ERROR` or `STALE` (IDL `octet`).
    pub level: u8,
    /// Name of the component.
    pub name: String,
    /// Human summary.
    pub message: String,
    /// Hardware identifier (the backend's device).
    pub hardware_id: String,
    /// Values.
    pub values: Vec<KeyValue>,
}
impl Message for DiagnosticStatus {}

impl DiagnosticStatus {
    /// Level OK.
    pub const OK: u8 = 0;
    /// Level WARN.
    pub const WARN: u8 = 1;
    /// Level ERROR.
    pub const ERROR: u8 = 2;
}

/// `diagnostic_msgs/DiagnosticArray`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DiagnosticArray {
    /// Time of the report.
    pub header: Header,
    /// One status per component.
    pub status: Vec<DiagnosticStatus>,
}
impl Message for DiagnosticArray {}

/// `sensor_msgs/msg/Image`.
pub fn image_type() -> MessageTypeName {
    MessageTypeName::new("sensor_msgs", "Image").with_type_hash(type_hashes::IMAGE)
}
/// `surfcl_msgs/msg/KeypointArray`.
pub fn keypoint_array_type() -> MessageTypeName {
    MessageTypeName::new("surfcl_msgs", "KeypointArray").with_type_hash(type_hashes::KEYPOINT_ARRAY)
}
/// `surfcl_msgs/msg/MatchArray`.
pub fn match_array_type() -> MessageTypeName {
    MessageTypeName::new("surfcl_msgs", "MatchArray").with_type_hash(type_hashes::MATCH_ARRAY)
}
/// `diagnostic_msgs/msg/DiagnosticArray`.
pub fn diagnostic_array_type() -> MessageTypeName {
    MessageTypeName::new("diagnostic_msgs", "DiagnosticArray")
        .with_type_hash(type_hashes::DIAGNOSTIC_ARRAY)
}

/// The REP-2016 hashes of the node's message types. Its endpoints announce them in discovery
/// when built for Jazzy or Kilted (Humble has none), so that ROS tools report each topic's type
/// hash (`ros2 topic info -v`). They are the hashes rosidl generates
/// (`share/<package>/msg/<Type>.json`), equal in Jazzy and Kilted; those of `surfcl_msgs`
/// follow `ros-node/msg/`, so a change to a message there changes its hash here
/// (`tests/ros2_interop.rs` checks each against the installed descriptions).
pub mod type_hashes {
    use ros2_client::{TypeHash, type_hash};

    /// `surfcl_msgs/msg/KeypointArray`.
    pub const KEYPOINT_ARRAY: TypeHash =
        type_hash!("RIHS01_c6566e46f9b5b2e1b1ef0596dcbdff8acb4191bb898865b026025cb5fcbadaea");
    /// `surfcl_msgs/msg/MatchArray`.
    pub const MATCH_ARRAY: TypeHash =
        type_hash!("RIHS01_de414a427179c278229c7d8105748b54c52cb82fdaaea7cce660b5945d6ad692");
    /// `sensor_msgs/msg/Image`.
    pub const IMAGE: TypeHash =
        type_hash!("RIHS01_d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47");
    /// `sensor_msgs/msg/CompressedImage`.
    pub const COMPRESSED_IMAGE: TypeHash =
        type_hash!("RIHS01_15640771531571185e2efc8a100baf923961a4d15d5569652e6cb6691e8e371a");
    /// `diagnostic_msgs/msg/DiagnosticArray`.
    pub const DIAGNOSTIC_ARRAY: TypeHash =
        type_hash!("RIHS01_5a8a36efb05fb25070fa0fb3810290c0e6cd4862b54a8fb975a1ee8dc55a333e");

    /// Each hash above with its type's ROS name.
    pub const ALL: &[(&str, TypeHash)] = &[
        ("surfcl_msgs/msg/KeypointArray", KEYPOINT_ARRAY),
        ("surfcl_msgs/msg/MatchArray", MATCH_ARRAY),
        ("sensor_msgs/msg/Image", IMAGE),
        ("sensor_msgs/msg/CompressedImage", COMPRESSED_IMAGE),
        ("diagnostic_msgs/msg/DiagnosticArray", DIAGNOSTIC_ARRAY),
    ];
}

#[cfg(test)]
mod tests {
    use ros2_client::type_hash::announce_qos;

    use super::*;

    /// What ROS 2's RMWs announce for the type, from Iron on.
    const KEYPOINT_ARRAY_USER_DATA: &[u8] =
        b"typehash=RIHS01_c6566e46f9b5b2e1b1ef0596dcbdff8acb4191bb898865b026025cb5fcbadaea;";

    #[test]
    fn type_hashes_are_announced_for_jazzy_and_kilted_and_not_for_humble() {
        let announced = announce_qos(keypoint_array_type().type_hash())
            .user_data()
            .map(|u| u.value);
        if cfg!(any(feature = "jazzy", feature = "kilted")) {
            assert_eq!(announced.as_deref(), Some(KEYPOINT_ARRAY_USER_DATA));
        } else {
            assert_eq!(announced, None);
        }
    }

    /// (`compressed_image_type` has its own test in `compressed`.)
    #[test]
    fn each_message_type_carries_its_hash() {
        let types = [
            (keypoint_array_type(), type_hashes::KEYPOINT_ARRAY),
            (match_array_type(), type_hashes::MATCH_ARRAY),
            (image_type(), type_hashes::IMAGE),
            (diagnostic_array_type(), type_hashes::DIAGNOSTIC_ARRAY),
        ];
        for (ty, hash) in types {
            let ros_name = format!("{}/msg/{}", ty.package_name(), ty.type_name());
            assert_eq!(ty.type_hash(), Some(hash), "{ros_name}");
            assert!(
                type_hashes::ALL.contains(&(ros_name.as_str(), hash)),
                "{ros_name} is not in type_hashes::ALL"
            );
        }
    }
}
