//! How far the node looks for peers, chosen as ROS 2 chooses it: `ROS_AUTOMATIC_DISCOVERY_RANGE`
//! (`SUBNET` by default, `LOCALHOST`, `OFF`, `SYSTEM_DEFAULT`), `ROS_STATIC_PEERS`, and Humble's
//! `ROS_LOCALHOST_ONLY=1`; the command line's `--localhost-only` (and `--all-interfaces`)
//! override them. [`Discovery::networks`] maps the range onto what the DDS participant is told.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs, UdpSocket};

/// `ROS_AUTOMATIC_DISCOVERY_RANGE`: which peers are found without being named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiscoveryRange {
    /// No automatic discovery: only the named static peers (`OFF`).
    Off,
    /// Peers on this host only (`LOCALHOST`): nothing is sent off the machine.
    Localhost,
    /// Peers on every network this host is on (`SUBNET`, the ROS 2 default).
    #[default]
    Subnet,
    /// Whatever the DDS implementation does by default (`SYSTEM_DEFAULT`): for RustDDS, every
    /// interface, as `SUBNET`.
    SystemDefault,
}

impl DiscoveryRange {
    /// Parses a `ROS_AUTOMATIC_DISCOVERY_RANGE` value (case-insensitive, as the names rcl uses).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_uppercase().as_str() {
            "OFF" => Some(Self::Off),
            "LOCALHOST" => Some(Self::Localhost),
            "SUBNET" => Some(Self::Subnet),
            "SYSTEM_DEFAULT" => Some(Self::SystemDefault),
            _ => None,
        }
    }
    /// The name as ROS writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "OFF",
            Self::Localhost => "LOCALHOST",
            Self::Subnet => "SUBNET",
            Self::SystemDefault => "SYSTEM_DEFAULT",
        }
    }
}

/// What the DDS participant is told about networks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Networks {
    /// Every interface: multicast discovery on each, locators of each announced.
    All,
    /// Loopback only (127.0.0.1), with RustDDS's unicast discovery to the local ports.
    Loopback,
    /// No interface: no multicast, no locators announced, no unicast discovery to the local
    /// ports; nothing finds the node and it finds nothing.
    None,
}

/// The environment variables discovery is read from (their values, `None` when unset).
#[derive(Debug, Clone, Copy, Default)]
pub struct DiscoveryEnv<'a> {
    /// `ROS_AUTOMATIC_DISCOVERY_RANGE`.
    pub range: Option<&'a str>,
    /// `ROS_STATIC_PEERS`.
    pub static_peers: Option<&'a str>,
    /// `ROS_LOCALHOST_ONLY` (Humble; deprecated since Jazzy).
    pub localhost_only: Option<&'a str>,
}

/// Longest static peer name rcl accepts (`RMW_DISCOVERY_OPTIONS_STATIC_PEERS_MAX_LENGTH`).
pub const MAX_STATIC_PEER_LEN: usize = 256;

/// How the node discovers peers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Discovery {
    /// The automatic discovery range.
    pub range: DiscoveryRange,
    /// Hosts named in `ROS_STATIC_PEERS` (IP addresses or host names).
    pub static_peers: Vec<String>,
    /// Where the range came from, for the start-up log (`ROS_AUTOMATIC_DISCOVERY_RANGE`,
    /// `ROS_LOCALHOST_ONLY`, `--localhost-only`, ...; empty: the default).
    pub source: String,
}

impl Discovery {
    /// This host only (what `--localhost-only` asks for).
    pub fn localhost(source: &str) -> Self {
        Self {
            range: DiscoveryRange::Localhost,
            static_peers: Vec::new(),
            source: source.to_string(),
        }
    }

    /// Discovery as rcl derives it from the environment. `ROS_LOCALHOST_ONLY=1` means
    /// `LOCALHOST` and wins over `ROS_AUTOMATIC_DISCOVERY_RANGE` (as in Jazzy, where it is
    /// deprecated but still honoured); an unset or empty range is `SUBNET`. Invalid values are
    /// errors naming the variable.
    pub fn from_env(env: &DiscoveryEnv<'_>) -> Result<Self, String> {
        let localhost_only = match env.localhost_only.map(str::trim) {
            None | Some("") | Some("0") => false,
            Some("1") => true,
            Some(other) => {
                return Err(format!("ROS_LOCALHOST_ONLY must be 0 or 1, got {other:?}"));
            }
        };
        let static_peers = parse_static_peers(env.static_peers.unwrap_or(""))?;
        if localhost_only {
            return Ok(Self {
                range: DiscoveryRange::Localhost,
                static_peers,
                source: "ROS_LOCALHOST_ONLY=1".into(),
            });
        }
        let (range, source) = match env.range.map(str::trim) {
            None | Some("") => (DiscoveryRange::default(), String::new()),
            Some(v) => match DiscoveryRange::parse(v) {
                Some(r) => (r, "ROS_AUTOMATIC_DISCOVERY_RANGE".to_string()),
                None => {
                    return Err(format!(
                        "ROS_AUTOMATIC_DISCOVERY_RANGE must be SUBNET, LOCALHOST, OFF or \
                         SYSTEM_DEFAULT, got {v:?}"
                    ));
                }
            },
        };
        Ok(Self {
            range,
            static_peers,
            source,
        })
    }

    /// The networks the participant uses for this range.
    pub fn networks(&self) -> Networks {
        match self.range {
            DiscoveryRange::Off => Networks::None,
            DiscoveryRange::Localhost => Networks::Loopback,
            DiscoveryRange::Subnet | DiscoveryRange::SystemDefault => Networks::All,
        }
    }
}

impl fmt::Display for Discovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let networks = match self.networks() {
            Networks::All => "all interfaces",
            Networks::Loopback => "loopback only",
            Networks::None => "no automatic discovery",
        };
        write!(f, "discovery {} ({networks}", self.range.name())?;
        if !self.source.is_empty() {
            write!(f, ", from {}", self.source)?;
        }
        write!(f, ")")
    }
}

/// `ROS_STATIC_PEERS`: addresses separated by `;`, blanks around them ignored.
pub fn parse_static_peers(value: &str) -> Result<Vec<String>, String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            if p.len() > MAX_STATIC_PEER_LEN {
                Err(format!(
                    "ROS_STATIC_PEERS: a peer is longer than {MAX_STATIC_PEER_LEN} characters: \
                     {:?}...",
                    p.chars().take(40).collect::<String>()
                ))
            } else if p.contains(char::is_whitespace) {
                Err(format!(
                    "ROS_STATIC_PEERS: {p:?} is not an address or host name"
                ))
            } else {
                Ok(p.to_string())
            }
        })
        .collect()
}

/// `ROS_STATIC_PEERS` as addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StaticPeers {
    /// The peers' addresses: IP literals as given, host names as resolved (their first IPv4
    /// address).
    pub addresses: Vec<IpAddr>,
    /// Peers that name no address (a host name that does not resolve).
    pub unresolved: Vec<String>,
}

/// Resolves `peers` (IP addresses or host names; names through the system's resolver).
pub fn resolve_static_peers(peers: &[String]) -> StaticPeers {
    let mut resolved = StaticPeers::default();
    for peer in peers {
        let address = peer.parse::<IpAddr>().ok().or_else(|| {
            (peer.as_str(), 0)
                .to_socket_addrs()
                .ok()?
                .map(|a| a.ip())
                .find(IpAddr::is_ipv4)
        });
        match address {
            Some(a) => resolved.addresses.push(a),
            None => resolved.unresolved.push(peer.clone()),
        }
    }
    resolved
}

/// The local address the system would send from to reach `peer` (a routing lookup: no packet
/// is sent). With discovery on loopback, the node also announces itself on this address, so
/// that a static peer elsewhere can answer.
pub fn local_address_towards(peer: IpAddr) -> Option<IpAddr> {
    let socket = UdpSocket::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))).ok()?;
    socket.connect(SocketAddr::new(peer, 7400)).ok()?;
    let local = socket.local_addr().ok()?.ip();
    (!local.is_unspecified()).then_some(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(
        range: Option<&'a str>,
        peers: Option<&'a str>,
        localhost_only: Option<&'a str>,
    ) -> DiscoveryEnv<'a> {
        DiscoveryEnv {
            range,
            static_peers: peers,
            localhost_only,
        }
    }

    #[test]
    fn default_is_subnet_on_every_interface() {
        let d = Discovery::from_env(&env(None, None, None)).unwrap();
        assert_eq!(d.range, DiscoveryRange::Subnet);
        assert_eq!(d.networks(), Networks::All);
        assert!(d.static_peers.is_empty());
        let d = Discovery::from_env(&env(Some(""), Some(""), Some(""))).unwrap();
        assert_eq!(d.networks(), Networks::All);
    }

    #[test]
    fn each_range_gives_its_networks() {
        for (value, range, networks) in [
            ("SUBNET", DiscoveryRange::Subnet, Networks::All),
            ("LOCALHOST", DiscoveryRange::Localhost, Networks::Loopback),
            ("localhost", DiscoveryRange::Localhost, Networks::Loopback),
            ("OFF", DiscoveryRange::Off, Networks::None),
            (
                "SYSTEM_DEFAULT",
                DiscoveryRange::SystemDefault,
                Networks::All,
            ),
        ] {
            let d = Discovery::from_env(&env(Some(value), None, None)).unwrap();
            assert_eq!((d.range, d.networks()), (range, networks), "{value}");
            assert_eq!(d.source, "ROS_AUTOMATIC_DISCOVERY_RANGE");
        }
        let err = Discovery::from_env(&env(Some("LAN"), None, None)).unwrap_err();
        assert!(err.contains("ROS_AUTOMATIC_DISCOVERY_RANGE") && err.contains("LAN"));
    }

    #[test]
    fn humble_localhost_only_wins_over_the_range() {
        let d = Discovery::from_env(&env(Some("SUBNET"), None, Some("1"))).unwrap();
        assert_eq!(d.networks(), Networks::Loopback);
        assert_eq!(d.source, "ROS_LOCALHOST_ONLY=1");
        let d = Discovery::from_env(&env(Some("OFF"), None, Some("0"))).unwrap();
        assert_eq!(d.networks(), Networks::None, "0 leaves the range alone");
        assert!(Discovery::from_env(&env(None, None, Some("yes"))).is_err());
    }

    #[test]
    fn static_peers_are_split_on_semicolons() {
        let d = Discovery::from_env(&env(
            Some("LOCALHOST"),
            Some(" 192.168.0.7; robot.local;;10.0.0.1 "),
            None,
        ))
        .unwrap();
        assert_eq!(d.static_peers, ["192.168.0.7", "robot.local", "10.0.0.1"]);
        assert!(parse_static_peers(&"a".repeat(MAX_STATIC_PEER_LEN + 1)).is_err());
        assert!(parse_static_peers("a b").is_err());
        assert_eq!(parse_static_peers("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn static_peers_resolve_to_addresses() {
        let peers = ["10.0.0.2", "localhost", "no-such-host.invalid"].map(String::from);
        let resolved = resolve_static_peers(&peers);
        assert_eq!(
            resolved.addresses,
            [
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            ]
        );
        assert_eq!(resolved.unresolved, ["no-such-host.invalid"]);
        assert_eq!(
            local_address_towards(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        );
    }

    #[test]
    fn log_line_names_range_networks_and_source() {
        let d = Discovery::from_env(&env(None, None, Some("1"))).unwrap();
        assert_eq!(
            d.to_string(),
            "discovery LOCALHOST (loopback only, from ROS_LOCALHOST_ONLY=1)"
        );
        assert_eq!(
            Discovery::default().to_string(),
            "discovery SUBNET (all interfaces)"
        );
    }
}
