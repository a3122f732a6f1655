//! The command line of `surfcl-node`: plain flags (clap) and the ROS-style `--ros-args` section
//! (`-r from:=to`, `-r __ns:=/robot`, `-r __node:=name`, `-p name:=value`), so that the node can
//! be started by `ros2 run`/launch files as well as by hand.

use clap::Parser;

use crate::discovery::{Discovery, DiscoveryEnv, DiscoveryRange};
use crate::logging::LogLevels;
use crate::node::resolve_topic;
use crate::node::{DEFAULT_SOCKET_RECEIVE_BUFFER, ImageTransport, NodeConfig, TopicReliability};
use crate::params::NodeParams;
use crate::wire::BufferPool;

/// `surfcl-node` flags.
#[derive(Debug, Parser)]
#[command(
    name = "surfcl-node",
    version,
    about = "ROS 2 node: SURF/Harris keypoints and frame-to-frame matches of sensor_msgs/Image",
    after_help = "ROS arguments are accepted after --ros-args: -r image:=/camera/image_raw \
                  -r __ns:=/robot -r __node:=name -p threshold:=0.001 (end them with --).\n\
                  Parameters: detector, threshold, octaves, upright, max_keypoints, precision, \
                  descriptor, ratio, cross_check, backend, device, debug_image, profile; at start-up \
                  only: image_transport (raw|compressed), image_reliability \
                  (best_effort|reliable), image_qos_depth, \
                  output_reliability (reliable|best_effort), output_buffers_mb."
)]
pub struct Cli {
    /// Node name.
    #[arg(long, default_value = "surfcl_node")]
    pub name: String,
    /// Node namespace (absolute).
    #[arg(long, default_value = "/")]
    pub namespace: String,
    /// DDS domain id; default: $ROS_DOMAIN_ID, else 0.
    #[arg(long)]
    pub domain_id: Option<u16>,
    /// History depth of the (best-effort) image subscription.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub image_qos_depth: u32,
    /// Reliability of the image subscription: best_effort (matches every camera driver) or
    /// reliable (lost fragments of large frames are repaired; only matches reliable publishers).
    /// Also `-p image_reliability:=reliable`.
    #[arg(long, default_value = "best_effort", value_parser = parse_reliability)]
    pub image_reliability: TopicReliability,
    /// image_transport's transport of the image subscription: raw (sensor_msgs/Image on the
    /// image topic) or compressed (sensor_msgs/CompressedImage, JPEG or PNG, on
    /// `<image>/compressed`, decoded on receipt). Also `-p image_transport:=compressed`.
    #[arg(long, default_value = "raw", value_parser = parse_transport)]
    pub image_transport: ImageTransport,
    /// Reliability of the keypoints, matches and debug_image publishers: reliable (every
    /// subscriber matches, lost fragments are repaired) or best_effort (the sensor-data profile:
    /// lower latency for large outputs, only best-effort subscribers match). Also
    /// `-p output_reliability:=best_effort`.
    #[arg(long, default_value = "reliable", value_parser = parse_reliability)]
    pub output_reliability: TopicReliability,
    /// MiB of encoded keypoints buffers kept for reuse at most. With reliable outputs RustDDS
    /// hands back 6 s of messages at once (about 200 MB at 30 Hz and 4096 keypoints); kept, the
    /// next 6 s are encoded into memory already mapped. Also `-p output_buffers_mb:=N`.
    #[arg(long, default_value_t = DEFAULT_OUTPUT_BUFFERS_MB, value_parser = clap::value_parser!(u32).range(0..=MAX_OUTPUT_BUFFERS_MB as i64))]
    pub output_buffers_mb: u32,
    /// SO_RCVBUF requested for the DDS sockets, bytes (0: RustDDS's default of 8 MiB). Linux
    /// grants at most net.core.rmem_max (x2); large best-effort frames need room for a whole frame.
    #[arg(long, default_value_t = DEFAULT_SOCKET_RECEIVE_BUFFER)]
    pub socket_receive_buffer: usize,
    /// Discover peers on this host only (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST), whatever the
    /// environment says.
    #[arg(long, conflicts_with = "all_interfaces")]
    pub localhost_only: bool,
    /// Discover peers on every network interface (ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET),
    /// whatever the environment says.
    #[arg(long)]
    pub all_interfaces: bool,
    /// Topic remapping FROM:=TO (repeatable).
    #[arg(long = "remap", value_name = "FROM:=TO")]
    pub remaps: Vec<String>,
    /// Parameter NAME:=VALUE (repeatable).
    #[arg(long = "param", value_name = "NAME:=VALUE")]
    pub params: Vec<String>,
    /// Do not echo log lines on stderr (they still go to /rosout).
    #[arg(long)]
    pub quiet: bool,
}

/// `--output-buffers-mb` default: `wire::BufferPool::DEFAULT_MAX_BYTES` in MiB.
const DEFAULT_OUTPUT_BUFFERS_MB: u32 = (BufferPool::DEFAULT_MAX_BYTES >> 20) as u32;
/// `--output-buffers-mb` at most (64 GiB).
const MAX_OUTPUT_BUFFERS_MB: u32 = 65536;

fn parse_output_buffers_mb(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|mb| *mb <= MAX_OUTPUT_BUFFERS_MB)
        .map(|mb| (mb as usize) << 20)
        .ok_or_else(|| {
            format!("output_buffers_mb must be in 0..={MAX_OUTPUT_BUFFERS_MB}, got {s:?}")
        })
}

fn parse_reliability(s: &str) -> Result<TopicReliability, String> {
    TopicReliability::parse(s).ok_or_else(|| format!("expected best_effort or reliable, got {s:?}"))
}

fn parse_transport(s: &str) -> Result<ImageTransport, String> {
    ImageTransport::parse(s).ok_or_else(|| format!("expected raw or compressed, got {s:?}"))
}

fn split_assign(s: &str) -> Result<(&str, &str), String> {
    s.split_once(":=")
        .filter(|(a, _)| !a.is_empty())
        .ok_or_else(|| format!("expected NAME:=VALUE, got {s:?}"))
}

/// Parameters that only apply at start-up (QoS cannot change on a live reader or writer):
/// declared read-only, so that a parameter dump reproduces the run.
pub const START_UP_PARAMETERS: [&str; 5] = [
    "image_transport",
    "image_reliability",
    "image_qos_depth",
    "output_reliability",
    "output_buffers_mb",
];

/// Applies parameter `name` = `value` (as text) to the config; `Ok(false)` when the node has no
/// such parameter.
fn apply_param(
    config: &mut NodeConfig,
    params: &mut NodeParams,
    name: &str,
    value: &str,
) -> Result<bool, String> {
    match name {
        "use_sim_time" => {
            config.use_sim_time = match value.trim() {
                "true" | "True" => true,
                "false" | "False" => false,
                other => return Err(format!("use_sim_time must be true or false, got {other:?}")),
            }
        }
        "image_reliability" => config.image_reliability = parse_reliability(value)?,
        "image_transport" => config.image_transport = parse_transport(value)?,
        "output_reliability" => config.output_reliability = parse_reliability(value)?,
        "output_buffers_mb" => config.output_buffers_bytes = parse_output_buffers_mb(value)?,
        "image_qos_depth" => {
            config.image_qos_depth = value
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|d| (1..=100).contains(d))
                .ok_or_else(|| format!("image_qos_depth must be in 1..=100, got {value:?}"))?
        }
        _ if params.get(name).is_some() => {
            params.apply_str(name, value).map_err(|e| e.to_string())?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The ROS environment variables the node reads (their values; `None` when unset).
#[derive(Debug, Clone, Default)]
pub struct RosEnv {
    /// `ROS_DOMAIN_ID`.
    pub domain_id: Option<String>,
    /// `ROS_AUTOMATIC_DISCOVERY_RANGE`.
    pub automatic_discovery_range: Option<String>,
    /// `ROS_STATIC_PEERS`.
    pub static_peers: Option<String>,
    /// `ROS_LOCALHOST_ONLY`.
    pub localhost_only: Option<String>,
}

impl RosEnv {
    /// The variables of this process.
    pub fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok();
        Self {
            domain_id: var("ROS_DOMAIN_ID"),
            automatic_discovery_range: var("ROS_AUTOMATIC_DISCOVERY_RANGE"),
            static_peers: var("ROS_STATIC_PEERS"),
            localhost_only: var("ROS_LOCALHOST_ONLY"),
        }
    }

    /// Discovery as the environment sets it.
    fn discovery(&self) -> Result<Discovery, String> {
        Discovery::from_env(&DiscoveryEnv {
            range: self.automatic_discovery_range.as_deref(),
            static_peers: self.static_peers.as_deref(),
            localhost_only: self.localhost_only.as_deref(),
        })
    }
}

/// Reads `ROS_DOMAIN_ID` as ROS does: unset or empty means 0.
pub fn domain_from_env(value: Option<&str>) -> Result<u16, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(0),
        Some(v) => v
            .parse::<u16>()
            .ok()
            .filter(|d| *d <= 232)
            .ok_or_else(|| format!("ROS_DOMAIN_ID must be an integer in 0..=232, got {v:?}")),
    }
}

/// Outcome of parsing: run with a config, or print and exit (help, version).
#[derive(Debug)]
pub enum Parsed {
    /// Start the node.
    Run(Box<NodeConfig>),
    /// clap's help/version/usage error: print it and exit with `code`.
    Exit {
        /// The text.
        message: String,
        /// Exit status.
        code: i32,
    },
}

/// Parses `args` (including the program name) in the environment `env`.
pub fn parse(args: &[String], env: &RosEnv) -> Parsed {
    let mut plain = Vec::new();
    let mut remaps = Vec::new();
    let mut params = Vec::new();
    let mut params_files = Vec::new();
    let mut log_levels = LogLevels::default();
    let mut in_ros = false;
    let mut it = args.iter();
    let fail = |message: String| Parsed::Exit {
        message: format!("error: {message}"),
        code: 2,
    };
    while let Some(a) = it.next() {
        match (in_ros, a.as_str()) {
            (false, "--ros-args") => in_ros = true,
            (true, "--") => in_ros = false,
            (true, "--ros-args") => {}
            (true, "-r" | "--remap") => match it.next() {
                Some(v) => remaps.push(v.clone()),
                None => return fail(format!("{a} needs FROM:=TO")),
            },
            (true, "-p" | "--param") => match it.next() {
                Some(v) => params.push(v.clone()),
                None => return fail(format!("{a} needs NAME:=VALUE")),
            },
            // What `ros2 launch` passes for a node's `parameters=[{...}]`.
            (true, "--params-file") => match it.next() {
                Some(path) => match std::fs::read_to_string(path) {
                    Ok(text) => params_files.push(text),
                    Err(e) => return fail(format!("cannot read --params-file {path:?}: {e}")),
                },
                None => return fail(format!("{a} needs a file")),
            },
            (true, "--log-level") => match it.next().map(|v| log_levels.apply(v)) {
                Some(Ok(())) => {}
                Some(Err(m)) => return fail(m),
                None => return fail(format!("{a} needs LEVEL or NAME:=LEVEL")),
            },
            (true, other) => return fail(format!("unsupported ROS argument {other:?}")),
            (false, _) => plain.push(a.clone()),
        }
    }
    let cli = match Cli::try_parse_from(plain) {
        Ok(c) => c,
        Err(e) => {
            return Parsed::Exit {
                message: e.to_string(),
                code: e.exit_code(),
            };
        }
    };
    let mut from_files = Vec::new();
    for text in &params_files {
        match parse_params_yaml(text) {
            Ok(p) => from_files.extend(p),
            Err(m) => return fail(m),
        }
    }
    let ros = RosArgs {
        remaps,
        from_files,
        params,
        log_levels,
    };
    match build_config(cli, ros, env) {
        Ok(c) => Parsed::Run(Box::new(c)),
        Err(m) => fail(m),
    }
}

/// What `--ros-args` gave, besides the plain flags.
struct RosArgs {
    /// `-r FROM:=TO`.
    remaps: Vec<String>,
    /// The parameters files' entries, in file order.
    from_files: Vec<YamlParam>,
    /// `-p NAME:=VALUE`.
    params: Vec<String>,
    log_levels: LogLevels,
}

/// One parameter of a parameters file: for the nodes `node` matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlParam {
    /// The node key (`/**`, `/robot/surfcl_node`, `surfcl_node`, `/*/surfcl_node`, ...),
    /// nested keys joined with `/`.
    pub node: String,
    /// The parameter name (nested keys joined with `.`).
    pub name: String,
    /// The value as written, quotes removed.
    pub value: String,
}

/// Whether the node key `pattern` of a parameters file applies to the node `fqn` (`/ns/name`),
/// with rcl's wildcards: `*` is one name token, `**` any number of them (none included). A key
/// without a leading `/` is taken from the root.
pub fn node_key_matches(pattern: &str, fqn: &str) -> bool {
    fn tokens(s: &str) -> Vec<&str> {
        s.split('/').filter(|t| !t.is_empty()).collect()
    }
    fn matches(p: &[&str], n: &[&str]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((&"**", rest)) => (0..=n.len()).any(|skip| matches(rest, &n[skip..])),
            Some((&t, rest)) => n
                .split_first()
                .is_some_and(|(&first, tail)| (t == "*" || t == first) && matches(rest, tail)),
        }
    }
    matches(&tokens(pattern), &tokens(fqn))
}

/// The parameters of a ROS 2 parameters file, as `ros2 launch` writes them and as users do:
///
/// ```yaml
/// /**:                 # every node; or /robot/surfcl_node, surfcl_node, /*/surfcl_node ...
///   ros__parameters:
///     max_keypoints: 1000
///     backend: 'opencl'
/// ```
/// Node keys may be nested (`robot:` then `surfcl_node:`), and so may parameter names (`a:` then
/// `b: 1` is `a.b`). Values are scalars (all the node's parameters are); quotes are removed.
/// Which entries apply is the caller's choice ([`node_key_matches`]).
pub fn parse_params_yaml(text: &str) -> Result<Vec<YamlParam>, String> {
    let mut out = Vec::new();
    // The keys above the current line with their indentation.
    let mut path: Vec<(usize, String)> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split(" #").next().unwrap_or("").trim_end();
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') || body == "---" {
            continue;
        }
        let indent = line.len() - body.len();
        path.retain(|(level, _)| *level < indent);
        let (key, value) = body
            .split_once(':')
            .ok_or_else(|| format!("parameters file line {}: expected `name: value`", n + 1))?;
        let key = key.trim().trim_matches(|c| c == '\'' || c == '"');
        let value = value.trim();
        if value.is_empty() {
            path.push((indent, key.to_string()));
            continue;
        }
        let keys: Vec<&str> = path.iter().map(|(_, k)| k.as_str()).collect();
        let Some(at) = keys.iter().position(|k| *k == "ros__parameters") else {
            return Err(format!(
                "parameters file line {}: {key:?} is not under a node's ros__parameters",
                n + 1
            ));
        };
        let name = keys[at + 1..]
            .iter()
            .copied()
            .chain([key])
            .collect::<Vec<_>>()
            .join(".");
        let unquoted = value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(value);
        out.push(YamlParam {
            node: keys[..at].join("/"),
            name,
            value: unquoted.to_string(),
        });
    }
    Ok(out)
}

fn build_config(cli: Cli, ros: RosArgs, env: &RosEnv) -> Result<NodeConfig, String> {
    let discovery = if cli.localhost_only {
        Discovery::localhost("--localhost-only")
    } else if cli.all_interfaces {
        Discovery {
            range: DiscoveryRange::Subnet,
            source: "--all-interfaces".into(),
            ..env.discovery()?
        }
    } else {
        env.discovery()?
    };
    let mut config = NodeConfig {
        node_name: cli.name,
        namespace: cli.namespace,
        domain_id: match cli.domain_id {
            Some(d) => d,
            None => domain_from_env(env.domain_id.as_deref())?,
        },
        image_qos_depth: cli.image_qos_depth as usize,
        image_reliability: cli.image_reliability,
        image_transport: cli.image_transport,
        output_reliability: cli.output_reliability,
        output_buffers_bytes: (cli.output_buffers_mb as usize) << 20,
        socket_receive_buffer: cli.socket_receive_buffer,
        discovery,
        log_to_stderr: !cli.quiet,
        ..NodeConfig::default()
    };
    config.log_levels = ros.log_levels;
    for r in cli.remaps.iter().chain(&ros.remaps) {
        let (from, to) = split_assign(r)?;
        match from {
            "__ns" => config.namespace = to.to_string(),
            "__node" | "__name" => config.node_name = to.to_string(),
            _ => config.remaps.push((from.to_string(), to.to_string())),
        }
    }
    if !config.namespace.starts_with('/') {
        config.namespace.insert(0, '/');
    }
    let fqn = resolve_topic(&config.node_name, &config.namespace, &[]);
    // Files first, in order, then -p (as in rcl: the command line wins).
    let mut assignments: Vec<(String, String, &str)> = Vec::new();
    for p in ros
        .from_files
        .iter()
        .filter(|p| node_key_matches(&p.node, &fqn))
    {
        assignments.push((p.name.clone(), p.value.clone(), "parameters file"));
    }
    for p in cli.params.iter().chain(&ros.params) {
        let (name, value) = split_assign(p)?;
        assignments.push((name.to_string(), value.to_string(), "command line"));
    }
    let mut params = NodeParams::default();
    for (name, value, source) in &assignments {
        if !apply_param(&mut config, &mut params, name, value)? {
            config.warnings.push(format!(
                "unknown parameter {name:?} ({source}) ignored; the node's parameters: {}, \
                 use_sim_time, {}",
                crate::params::NAMES.join(", "),
                START_UP_PARAMETERS.join(", ")
            ));
        }
    }
    config.params = params;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(id: &str) -> RosEnv {
        RosEnv {
            domain_id: Some(id.into()),
            ..RosEnv::default()
        }
    }

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// The configuration `argv` runs with (no ROS environment); panics unless it parses.
    fn run(argv: &str) -> NodeConfig {
        match parse(&args(argv), &RosEnv::default()) {
            Parsed::Run(c) => *c,
            Parsed::Exit { message, .. } => panic!("{argv} did not parse: {message}"),
        }
    }

    /// Asserts that each command line is refused as a usage error (exit status 2).
    fn assert_usage_errors(argvs: &[&str]) {
        for bad in argvs {
            assert!(
                matches!(
                    parse(&args(bad), &RosEnv::default()),
                    Parsed::Exit { code: 2, .. }
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn ros_args_section() {
        let Parsed::Run(c) = parse(
            &args(
                "surfcl-node --image-qos-depth 3 --ros-args -r image:=/camera/image_raw \
                 -r __ns:=/robot -r __node:=feat -p threshold:=0.002 -p upright:=true -- --quiet",
            ),
            &domain("7"),
        ) else {
            panic!("did not parse")
        };
        assert_eq!(c.node_name, "feat");
        assert_eq!(c.namespace, "/robot");
        assert_eq!(
            c.remaps,
            vec![("image".to_string(), "/camera/image_raw".to_string())]
        );
        assert_eq!(c.domain_id, 7);
        assert_eq!(c.image_qos_depth, 3);
        assert!(!c.log_to_stderr);
        assert_eq!(c.params.threshold, 0.002);
        assert!(c.params.upright);
        assert_eq!(c.image_reliability, TopicReliability::BestEffort);
    }

    #[test]
    fn params_file_as_ros2_launch_writes_it() {
        let yaml = "/**:\n  ros__parameters:\n    max_keypoints: 1000\n    backend: 'cpu'\n    \
                    upright: true\n    threshold: 0.0008\n    image_reliability: reliable\n";
        let assignments: Vec<String> = parse_params_yaml(yaml)
            .unwrap()
            .into_iter()
            .map(|p| {
                assert_eq!(p.node, "/**");
                format!("{}:={}", p.name, p.value)
            })
            .collect();
        assert_eq!(
            assignments,
            vec![
                "max_keypoints:=1000",
                "backend:=cpu",
                "upright:=true",
                "threshold:=0.0008",
                "image_reliability:=reliable"
            ]
        );
        let dir = std::env::temp_dir().join(format!("surfcl-params-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.yaml");
        std::fs::write(&path, yaml).unwrap();
        let argv = format!(
            "n --ros-args --params-file {} -p max_keypoints:=7 --",
            path.display()
        );
        let c = run(&argv);
        let _ = std::fs::remove_dir_all(&dir);
        // The command line wins over the file.
        assert_eq!(c.params.max_keypoints, 7);
        assert!(c.params.upright);
        assert_eq!(c.params.threshold, 0.0008);
        assert_eq!(c.image_reliability, TopicReliability::Reliable);
        // Nested names are dotted; a value outside any ros__parameters is an error.
        let nested = parse_params_yaml("/**:\n  ros__parameters:\n    a:\n      b: 1\n").unwrap();
        assert_eq!(nested[0].name, "a.b");
        assert!(parse_params_yaml("/**:\n  max_keypoints: 3\n").is_err());
        assert!(matches!(
            parse(
                &args("n --ros-args --params-file /nonexistent/x.yaml --"),
                &RosEnv::default()
            ),
            Parsed::Exit { code: 2, .. }
        ));
    }

    /// The ament package's parameters file is one the node accepts, and its launch file starts
    /// the binary this crate builds.
    #[test]
    fn ament_package_config_and_launch_file() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/ament/surfcl_node");
        let config = format!("{root}/config/surfcl.yaml");
        let argv = format!("n --ros-args --params-file {config} --");
        let c = run(&argv);
        assert_eq!(
            c.params,
            NodeParams::default(),
            "config/surfcl.yaml drifted from the defaults"
        );
        assert_eq!(c.image_reliability, TopicReliability::BestEffort);
        assert_eq!(c.output_reliability, TopicReliability::Reliable);
        assert_eq!(c.output_buffers_bytes, BufferPool::DEFAULT_MAX_BYTES);
        let launch = std::fs::read_to_string(format!("{root}/launch/surfcl.launch.py")).unwrap();
        assert!(launch.contains("executable=\"surfcl-node\""));
        assert!(launch.contains("(\"image\", LaunchConfiguration(\"camera_topic\"))"));
        let cmake = std::fs::read_to_string(format!("{root}/CMakeLists.txt")).unwrap();
        assert!(cmake.contains("-p surfcl-ros --bin surfcl-node"));
    }

    #[test]
    fn image_transport_flag_and_parameter() {
        for (argv, transport) in [
            ("n", ImageTransport::Raw),
            ("n --image-transport compressed", ImageTransport::Compressed),
            (
                "n --ros-args -p image_transport:=compressed --",
                ImageTransport::Compressed,
            ),
            (
                "n --image-transport compressed --ros-args -p image_transport:=raw --",
                ImageTransport::Raw,
            ),
        ] {
            let c = run(argv);
            assert_eq!(c.image_transport, transport, "{argv}");
        }
        assert_usage_errors(&[
            "n --image-transport theora",
            "n --ros-args -p image_transport:=jpeg --",
        ]);
    }

    #[test]
    fn start_up_qos_settings() {
        let c = run(
            "n --socket-receive-buffer 1000 --ros-args -p image_reliability:=reliable                  -p image_qos_depth:=4 --",
        );
        assert_eq!(c.image_reliability, TopicReliability::Reliable);
        assert_eq!(
            c.output_reliability,
            TopicReliability::Reliable,
            "the default"
        );
        assert_eq!((c.image_qos_depth, c.socket_receive_buffer), (4, 1000));
        let c = run("n --image-reliability reliable --output-reliability best_effort");
        assert_eq!(c.image_reliability, TopicReliability::Reliable);
        assert_eq!(c.output_reliability, TopicReliability::BestEffort);
        let c = run("n --ros-args -p output_reliability:=best_effort --");
        assert_eq!(c.output_reliability, TopicReliability::BestEffort);
        assert_eq!(c.image_reliability, TopicReliability::BestEffort);
        assert_eq!(c.output_buffers_bytes, BufferPool::DEFAULT_MAX_BYTES);
        for (argv, mb) in [
            ("n --output-buffers-mb 64", 64),
            ("n --ros-args -p output_buffers_mb:=0 --", 0),
            (
                "n --output-buffers-mb 64 --ros-args -p output_buffers_mb:=512 --",
                512,
            ),
        ] {
            let c = run(argv);
            assert_eq!(c.output_buffers_bytes, mb << 20, "{argv}");
        }
        assert_usage_errors(&[
            "n --image-reliability sometimes",
            "n --output-reliability sometimes",
            "n --ros-args -p output_reliability:=x --",
            "n --ros-args -p image_reliability:=x --",
            "n --ros-args -p image_qos_depth:=0 --",
            "n --output-buffers-mb -1",
            "n --output-buffers-mb 70000",
            "n --ros-args -p output_buffers_mb:=lots --",
        ]);
    }

    #[test]
    fn flags_and_errors() {
        let Parsed::Run(c) = parse(
            &args("n --domain-id 3 --param octaves:=2 --remap a:=b"),
            &domain("9"),
        ) else {
            panic!("did not parse")
        };
        assert_eq!((c.domain_id, c.params.octaves), (3, 2));
        assert_eq!(c.remaps, vec![("a".to_string(), "b".to_string())]);
        assert!(matches!(
            parse(&args("n --param octaves:=9"), &RosEnv::default()),
            Parsed::Exit { code: 2, .. }
        ));
        assert!(matches!(
            parse(&args("n --ros-args -x"), &RosEnv::default()),
            Parsed::Exit { code: 2, .. }
        ));
        assert!(matches!(
            parse(&args("n"), &domain("abc")),
            Parsed::Exit { code: 2, .. }
        ));
        let Parsed::Run(c) = parse(&args("n"), &domain("")) else {
            panic!()
        };
        assert_eq!(c.domain_id, 0);
    }

    #[test]
    fn discovery_from_the_environment_and_the_switches() {
        use crate::discovery::Networks;
        let env = RosEnv {
            automatic_discovery_range: Some("OFF".into()),
            static_peers: Some("10.0.0.2;10.0.0.3".into()),
            ..RosEnv::default()
        };
        let run = |argv: &str, env: &RosEnv| match parse(&args(argv), env) {
            Parsed::Run(c) => c.discovery,
            Parsed::Exit { message, .. } => panic!("{argv}: {message}"),
        };
        let d = run("n", &env);
        assert_eq!((d.networks(), d.static_peers.len()), (Networks::None, 2));
        assert_eq!(run("n", &RosEnv::default()).networks(), Networks::All);
        let d = run("n --localhost-only", &env);
        assert_eq!(
            (d.networks(), d.source.as_str()),
            (Networks::Loopback, "--localhost-only")
        );
        let d = run("n --all-interfaces", &env);
        assert_eq!((d.networks(), d.static_peers.len()), (Networks::All, 2));
        let humble = RosEnv {
            localhost_only: Some("1".into()),
            ..RosEnv::default()
        };
        assert_eq!(run("n", &humble).networks(), Networks::Loopback);
        let bad = RosEnv {
            automatic_discovery_range: Some("everywhere".into()),
            ..RosEnv::default()
        };
        assert!(matches!(
            parse(&args("n"), &bad),
            Parsed::Exit { code: 2, .. }
        ));
        assert!(matches!(
            parse(
                &args("n --localhost-only --all-interfaces"),
                &RosEnv::default()
            ),
            Parsed::Exit { code: 2, .. }
        ));
    }

    #[test]
    fn node_keys_follow_rcl_wildcards() {
        for (pattern, fqn, expected) in [
            ("/**", "/surfcl_node", true),
            ("/**", "/robot/arm/surfcl_node", true),
            ("/**/surfcl_node", "/surfcl_node", true),
            ("/**/surfcl_node", "/robot/surfcl_node", true),
            ("/**/surfcl_node", "/robot/other", false),
            ("/*", "/surfcl_node", true),
            ("/*", "/robot/surfcl_node", false),
            ("/*/surfcl_node", "/robot/surfcl_node", true),
            ("/*/surfcl_node", "/surfcl_node", false),
            ("surfcl_node", "/surfcl_node", true),
            ("surfcl_node", "/robot/surfcl_node", false),
            ("/robot/surfcl_node", "/robot/surfcl_node", true),
            ("robot/surfcl_node", "/robot/surfcl_node", true),
            ("/robot/camera_driver", "/robot/surfcl_node", false),
        ] {
            assert_eq!(
                node_key_matches(pattern, fqn),
                expected,
                "{pattern} vs {fqn}"
            );
        }
    }

    /// A file shared by several nodes: only `/**` and this node's sections apply, in file
    /// order, and the command line wins; unknown keys are warnings; use_sim_time is accepted.
    #[test]
    fn shared_params_file_applies_this_node_s_sections_only() {
        let yaml = "/**:\n  ros__parameters:\n    use_sim_time: true\n    max_keypoints: 100\n\
                    camera_driver:\n  ros__parameters:\n    max_keypoints: 7\n    fps: 30\n\
                    /robot:\n  feat:\n    ros__parameters:\n      octaves: 2\n      \
                    exposure: 3\n\
                    /robot/other:\n  ros__parameters:\n    octaves: 1\n";
        let dir = std::env::temp_dir().join(format!("surfcl-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.yaml");
        std::fs::write(&path, yaml).unwrap();
        let file = path.display();
        let c = run(&format!(
            "n --ros-args -r __ns:=/robot -r __node:=feat --params-file {file} --"
        ));
        assert!(c.use_sim_time);
        assert_eq!((c.params.max_keypoints, c.params.octaves), (100, 2));
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("exposure"), "{:?}", c.warnings);
        let c = run(&format!(
            "n --ros-args --params-file {file} -p use_sim_time:=false --"
        ));
        assert!(!c.use_sim_time, "the command line wins");
        assert_eq!(
            c.params.octaves,
            NodeParams::default().octaves,
            "not this node's section"
        );
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let c = run("n --ros-args -p frobnicate:=1 --");
        assert!(c.warnings[0].contains("frobnicate"));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(
            parse(
                &args("n --ros-args -p use_sim_time:=maybe --"),
                &RosEnv::default()
            ),
            Parsed::Exit { code: 2, .. }
        ));
    }

    #[test]
    fn log_level_arguments() {
        use ros2_client::ros2::LogLevel;
        let c = run("n --ros-args --log-level warn --log-level rustdds:=error --");
        assert_eq!(c.log_levels.default, LogLevel::Warn);
        assert_eq!(c.log_levels.level_of("rustdds::x"), LogLevel::Error);
        assert!(matches!(
            parse(
                &args("n --ros-args --log-level chatty --"),
                &RosEnv::default()
            ),
            Parsed::Exit { code: 2, .. }
        ));
    }
}
