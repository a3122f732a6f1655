//! REP-2016 type hashes announced in DDS discovery (surfcl patch).
//!
//! From Iron on, every ROS 2 RMW announces the hash of a publisher's or
//! subscription's interface type in the endpoint's USER_DATA QoS, as
//! `typehash=RIHS01_<64 hex digits>;`. Tools read it back (`ros2 topic info -v`,
//! rclpy's `get_publishers_info_by_topic(...)` → `topic_type_hash`); without it
//! they report the type hash as invalid. Humble predates type hashes and
//! announces none.
//!
//! The hash is a constant of the type: rosidl generates it into
//! `share/<package>/<msg|srv>/<Type>.json` (`type_hashes`). A
//! [`MessageTypeName`](crate::MessageTypeName) or
//! [`ServiceTypeName`](crate::ServiceTypeName) carries it with
//! `with_type_hash`, and endpoints created from it announce it. [`builtin`]
//! holds the hashes of the types this crate's own endpoints use.

/// A REP-2016 type hash: `RIHS01_` and the 64 lower-case hex digits of the
/// SHA-256 of the type description, as rosidl writes it.
///
/// Made with [`TypeHash::from_rihs01`], or for a literal with the
/// [`type_hash!`](crate::type_hash) macro, which checks it at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TypeHash(&'static str);

/// The version prefix of the hashes defined so far (REP-2016 `RIHS01`).
const RIHS01_PREFIX: &str = "RIHS01_";
/// Hex digits of a SHA-256.
const RIHS01_DIGITS: usize = 64;

impl TypeHash {
  /// `rihs01` as a type hash, if it is one: `RIHS01_` and 64 lower-case hex
  /// digits (the only form rosidl writes).
  pub const fn from_rihs01(rihs01: &'static str) -> Option<Self> {
    let bytes = rihs01.as_bytes();
    let prefix = RIHS01_PREFIX.as_bytes();
    if bytes.len() != prefix.len() + RIHS01_DIGITS {
      return None;
    }
    let mut i = 0;
    while i < bytes.len() {
      let ok = if i < prefix.len() {
        bytes[i] == prefix[i]
      } else {
        matches!(bytes[i], b'0'..=b'9' | b'a'..=b'f')
      };
      if !ok {
        return None;
      }
      i += 1;
    }
    Some(TypeHash(rihs01))
  }

  /// The hash as rosidl writes it, `RIHS01_<hex>`.
  pub const fn as_str(&self) -> &'static str {
    self.0
  }

  /// The endpoint USER_DATA that ROS 2's RMWs announce for this type
  /// (`rmw_dds_common::encode_type_hash_for_user_data_qos`): `typehash=<hash>;`.
  pub fn user_data(&self) -> Vec<u8> {
    format!("typehash={};", self.0).into_bytes()
  }
}

impl std::fmt::Display for TypeHash {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str(self.0)
  }
}

/// A [`TypeHash`] from a string literal, checked when the program is compiled
/// (a malformed literal does not build).
///
/// ```
/// const HASH: ros2_client::TypeHash = ros2_client::type_hash!(
///   "RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac"
/// );
/// assert!(HASH.as_str().starts_with("RIHS01_"));
/// ```
#[macro_export]
macro_rules! type_hash {
  ($rihs01:literal) => {
    const {
      match $crate::TypeHash::from_rihs01($rihs01) {
        Some(hash) => hash,
        None => panic!(concat!("not a RIHS01 type hash: ", $rihs01)),
      }
    }
  };
}

/// Hashes of the interface types of this crate's own endpoints: `/rosout`,
/// `/parameter_events`, `ros_discovery_info`, the parameter services and
/// `/clock`.
/// Jazzy and Kilted generate the same values.
pub mod builtin {
  use super::TypeHash;

  /// `rcl_interfaces/msg/Log` (`/rosout`).
  pub const LOG: TypeHash =
    type_hash!("RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac");
  /// `rcl_interfaces/msg/ParameterEvent` (`/parameter_events`).
  pub const PARAMETER_EVENT: TypeHash =
    type_hash!("RIHS01_043e627780fcad87a22d225bc2a037361dba713fca6a6b9f4b869a5aa0393204");
  /// `rmw_dds_common/msg/ParticipantEntitiesInfo` (`ros_discovery_info`).
  pub const PARTICIPANT_ENTITIES_INFO: TypeHash =
    type_hash!("RIHS01_91a0593bacdcc50ea9bdcf849a938b128412cc1ea821245c663bcd26f83c295e");
  /// `rcl_interfaces/srv/GetParameters`.
  pub const GET_PARAMETERS: TypeHash =
    type_hash!("RIHS01_bf9803d5c74cf989a5de3e0c2e99444599a627c7ff75f97b8c05b01003675cbc");
  /// `rcl_interfaces/srv/GetParameterTypes`.
  pub const GET_PARAMETER_TYPES: TypeHash =
    type_hash!("RIHS01_da199c878688b3e530bdfe3ca8f74cb9fa0c303101e980a9e8f260e25e1c80ca");
  /// `rcl_interfaces/srv/SetParameters`.
  pub const SET_PARAMETERS: TypeHash =
    type_hash!("RIHS01_56eed9a67e169f9cb6c1f987bc88f868c14a8fc9f743a263bc734c154015d7e0");
  /// `rcl_interfaces/srv/SetParametersAtomically`.
  pub const SET_PARAMETERS_ATOMICALLY: TypeHash =
    type_hash!("RIHS01_0e192ef259c07fc3c07a13191d27002222e65e00ccec653ca05e856f79285fcd");
  /// `rcl_interfaces/srv/ListParameters`.
  pub const LIST_PARAMETERS: TypeHash =
    type_hash!("RIHS01_3e6062bfbb27bfb8730d4cef2558221f51a11646d78e7bb30a1e83afac3aad9d");
  /// `rcl_interfaces/srv/DescribeParameters`.
  pub const DESCRIBE_PARAMETERS: TypeHash =
    type_hash!("RIHS01_845b484d71eb0673dae682f2e3ba3c4851a65a3dcfb97bddd82c5b57e91e4cff");
  /// `rosgraph_msgs/msg/Clock` (`/clock`, read for simulated time).
  pub const CLOCK: TypeHash =
    type_hash!("RIHS01_692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564");

  /// Each hash above with its type's ROS name (`package/msg|srv/Type`), for
  /// checks against the `.json` type descriptions of an installation.
  pub const ALL: &[(&str, TypeHash)] = &[
    ("rcl_interfaces/msg/Log", LOG),
    ("rcl_interfaces/msg/ParameterEvent", PARAMETER_EVENT),
    (
      "rmw_dds_common/msg/ParticipantEntitiesInfo",
      PARTICIPANT_ENTITIES_INFO,
    ),
    ("rcl_interfaces/srv/GetParameters", GET_PARAMETERS),
    ("rcl_interfaces/srv/GetParameterTypes", GET_PARAMETER_TYPES),
    ("rcl_interfaces/srv/SetParameters", SET_PARAMETERS),
    (
      "rcl_interfaces/srv/SetParametersAtomically",
      SET_PARAMETERS_ATOMICALLY,
    ),
    ("rcl_interfaces/srv/ListParameters", LIST_PARAMETERS),
    ("rcl_interfaces/srv/DescribeParameters", DESCRIBE_PARAMETERS),
    ("rosgraph_msgs/msg/Clock", CLOCK),
  ];
}

/// The QoS that announces `hash` with an endpoint, where the compiled-for
/// distribution expects it (Iron and later); no policy for Humble or without a
/// hash. Endpoints take it from their topic's QoS: for a topic made on the
/// [`DomainParticipant`](rustdds::DomainParticipant) directly, merge it into
/// the topic's QoS (`QosPolicies::modify_by`).
#[cfg(feature = "dds")]
pub fn announce_qos(hash: Option<TypeHash>) -> rustdds::QosPolicies {
  let none = rustdds::QosPolicies::qos_none();
  match hash {
    Some(hash) if cfg!(feature = "iron") => none.with_user_data(rustdds::policy::UserData {
      value: hash.user_data(),
    }),
    _ => none,
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn only_rihs01_with_64_lower_case_hex_digits_is_a_type_hash() {
    let good = "RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac";
    assert_eq!(TypeHash::from_rihs01(good).map(|h| h.as_str()), Some(good));
    for bad in [
      "",
      "RIHS01_",
      "RIHS02_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac",
      "RIHS01_E28CE254CA8ABC06ABF92773B74602CDBF116ED34FBAF294FB9F81DA9F318EAC",
      "RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318ea",
      "RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac0",
      "RIHS01_g28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac",
    ] {
      assert_eq!(TypeHash::from_rihs01(bad), None, "{bad}");
    }
  }

  #[test]
  fn user_data_is_what_rmw_dds_common_encodes() {
    assert_eq!(
      builtin::LOG.user_data(),
      b"typehash=RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac;"
    );
  }

  #[cfg(feature = "dds")]
  #[test]
  fn announced_from_iron_on_and_not_for_humble() {
    let announced = announce_qos(Some(builtin::LOG)).user_data();
    if cfg!(feature = "iron") {
      assert_eq!(announced.map(|u| u.value), Some(builtin::LOG.user_data()));
    } else {
      assert_eq!(announced, None);
    }
    assert_eq!(announce_qos(None).user_data(), None);
  }
}
