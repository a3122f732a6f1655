//! The command line of `surfcl-node`: plain flags (clap) and the ROS-style `--ros-args` section
//! (`-r from:=to`, `-r __ns:=/robot`, `-r __node:=name`, `-p name:=value`), so that the node can
//! be started by `ros2 run`/launch files as well as by hand.

use clap::Parser;

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
    /// Use every network interface instead of loopback only.
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

/// Parses `args` (including the program name), with `ros_domain_id` the value of
/// `$ROS_DOMAIN_ID`.
pub fn parse(args: &[String], ros_domain_id: Option<&str>) -> Parsed {
    let mut plain = Vec::new();
    let mut remaps = Vec::new();
    let mut params = Vec::new();
    let mut params_files = Vec::new();
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
            // Accepted for compatibility with launch files; the node logs at info level.
            (true, "--log-level") => {
                it.next();
            }
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
    // Parameters files first, so that -p on the command line wins (as in rcl).
    let mut all_params = Vec::new();
    for text in &params_files {
        match params_from_yaml(text) {
            Ok(p) => all_params.extend(p),
            Err(m) => return fail(m),
        }
    }
    all_params.extend(params);
    match build_config(cli, &remaps, &all_params, ros_domain_id) {
        Ok(c) => Parsed::Run(Box::new(c)),
        Err(m) => fail(m),
    }
}

/// The `NAME:=VALUE` pairs of a ROS 2 parameters file, as `ros2 launch` writes them:
///
/// ```yaml
/// /**:                 # or the node's name
///   ros__parameters:
///     max_keypoints: 1000
///     backend: 'opencl'
/// ```
/// Only flat scalar values are understood (all the node's parameters are scalars); quotes are
/// removed. Every `ros__parameters` section of the file applies.
pub fn params_from_yaml(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    // Indentation of the current `ros__parameters:` line while inside its section.
    let mut section: Option<usize> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split(" #").next().unwrap_or("").trim_end();
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') || body == "---" {
            continue;
        }
        let indent = line.len() - body.len();
        if let Some(level) = section
            && indent <= level
        {
            section = None;
        }
        if body == "ros__parameters:" {
            section = Some(indent);
            continue;
        }
        if section.is_none() {
            continue;
        }
        let (key, value) = body
            .split_once(':')
            .ok_or_else(|| format!("parameters file line {}: expected `name: value`", n + 1))?;
        let value = value.trim();
        if value.is_empty() {
            return Err(format!(
                "parameters file line {}: nested parameter {key:?} is not supported",
                n + 1
            ));
        }
        let unquoted = value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(value);
        out.push(format!("{}:={unquoted}", key.trim()));
    }
    Ok(out)
}

fn build_config(
    cli: Cli,
    ros_remaps: &[String],
    ros_params: &[String],
    ros_domain_id: Option<&str>,
) -> Result<NodeConfig, String> {
    let mut config = NodeConfig {
        node_name: cli.name,
        namespace: cli.namespace,
        domain_id: match cli.domain_id {
            Some(d) => d,
            None => domain_from_env(ros_domain_id)?,
        },
        image_qos_depth: cli.image_qos_depth as usize,
        image_reliability: cli.image_reliability,
        image_transport: cli.image_transport,
        output_reliability: cli.output_reliability,
        output_buffers_bytes: (cli.output_buffers_mb as usize) << 20,
        socket_receive_buffer: cli.socket_receive_buffer,
        all_interfaces: cli.all_interfaces,
        log_to_stderr: !cli.quiet,
        ..NodeConfig::default()
    };
    for r in cli.remaps.iter().chain(ros_remaps) {
        let (from, to) = split_assign(r)?;
        match from {
            "__ns" => config.namespace = to.to_string(),
            "__node" | "__name" => config.node_name = to.to_string(),
            _ => config.remaps.push((from.to_string(), to.to_string())),
        }
    }
    let mut params = NodeParams::default();
    for p in cli.params.iter().chain(ros_params) {
        let (name, value) = split_assign(p)?;
        // Start-up only settings (QoS cannot change on a live subscription), accepted as ROS
        // parameters so that launch files can set them like the others.
        match name {
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
            _ => params.apply_str(name, value).map_err(|e| e.to_string())?,
        }
    }
    config.params = params;
    if !config.namespace.starts_with('/') {
        config.namespace.insert(0, '/');
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn ros_args_section() {
        let Parsed::Run(c) = parse(
            &args(
                "surfcl-node --image-qos-depth 3 --ros-args -r image:=/camera/image_raw \
                 -r __ns:=/robot -r __node:=feat -p threshold:=0.002 -p upright:=true -- --quiet",
            ),
            Some("7"),
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
        assert_eq!(
            params_from_yaml(yaml).unwrap(),
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
        let Parsed::Run(c) = parse(&args(&argv), None) else {
            panic!("did not parse")
        };
        let _ = std::fs::remove_dir_all(&dir);
        // The command line wins over the file.
        assert_eq!(c.params.max_keypoints, 7);
        assert!(c.params.upright);
        assert_eq!(c.params.threshold, 0.0008);
        assert_eq!(c.image_reliability, TopicReliability::Reliable);
        assert!(params_from_yaml("/**:\n  ros__parameters:\n    a:\n      b: 1\n").is_err());
        assert!(matches!(
            parse(
                &args("n --ros-args --params-file /nonexistent/x.yaml --"),
                None
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
        let Parsed::Run(c) = parse(&args(&argv), None) else {
            panic!("{config} is not accepted")
        };
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
            let Parsed::Run(c) = parse(&args(argv), None) else {
                panic!("{argv} did not parse")
            };
            assert_eq!(c.image_transport, transport, "{argv}");
        }
        for bad in [
            "n --image-transport theora",
            "n --ros-args -p image_transport:=jpeg --",
        ] {
            assert!(
                matches!(parse(&args(bad), None), Parsed::Exit { code: 2, .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn start_up_qos_settings() {
        let Parsed::Run(c) = parse(
            &args(
                "n --socket-receive-buffer 1000 --ros-args -p image_reliability:=reliable                  -p image_qos_depth:=4 --",
            ),
            None,
        ) else {
            panic!("did not parse")
        };
        assert_eq!(c.image_reliability, TopicReliability::Reliable);
        assert_eq!(
            c.output_reliability,
            TopicReliability::Reliable,
            "the default"
        );
        assert_eq!((c.image_qos_depth, c.socket_receive_buffer), (4, 1000));
        let Parsed::Run(c) = parse(
            &args("n --image-reliability reliable --output-reliability best_effort"),
            None,
        ) else {
            panic!("did not parse")
        };
        assert_eq!(c.image_reliability, TopicReliability::Reliable);
        assert_eq!(c.output_reliability, TopicReliability::BestEffort);
        let Parsed::Run(c) = parse(
            &args("n --ros-args -p output_reliability:=best_effort --"),
            None,
        ) else {
            panic!("did not parse")
        };
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
            let Parsed::Run(c) = parse(&args(argv), None) else {
                panic!("{argv} did not parse")
            };
            assert_eq!(c.output_buffers_bytes, mb << 20, "{argv}");
        }
        for bad in [
            "n --image-reliability sometimes",
            "n --output-reliability sometimes",
            "n --ros-args -p output_reliability:=x --",
            "n --ros-args -p image_reliability:=x --",
            "n --ros-args -p image_qos_depth:=0 --",
            "n --output-buffers-mb -1",
            "n --output-buffers-mb 70000",
            "n --ros-args -p output_buffers_mb:=lots --",
        ] {
            assert!(
                matches!(parse(&args(bad), None), Parsed::Exit { code: 2, .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn flags_and_errors() {
        let Parsed::Run(c) = parse(
            &args("n --domain-id 3 --param octaves:=2 --remap a:=b"),
            Some("9"),
        ) else {
            panic!("did not parse")
        };
        assert_eq!((c.domain_id, c.params.octaves), (3, 2));
        assert_eq!(c.remaps, vec![("a".to_string(), "b".to_string())]);
        assert!(matches!(
            parse(&args("n --param octaves:=9"), None),
            Parsed::Exit { code: 2, .. }
        ));
        assert!(matches!(
            parse(&args("n --ros-args -x"), None),
            Parsed::Exit { code: 2, .. }
        ));
        assert!(matches!(
            parse(&args("n"), Some("abc")),
            Parsed::Exit { code: 2, .. }
        ));
        let Parsed::Run(c) = parse(&args("n"), Some("")) else {
            panic!()
        };
        assert_eq!(c.domain_id, 0);
    }
}
