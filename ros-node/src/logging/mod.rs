//! Log levels the ROS way (`--ros-args --log-level LEVEL`, or `--log-level NAME:=LEVEL` for one
//! logger) and a `log` backend (env_logger), so that warnings of RustDDS and ros2-client (which
//! log through the `log` crate) reach stderr and `/rosout`: without a backend `log` drops them.

mod forward;

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use log::{LevelFilter, Log, Metadata, Record};
use ros2_client::ros2::LogLevel;

pub use forward::RosoutForwarding;

/// Parses a ROS log level name (`debug`, `info`, `warn`, `error`, `fatal`; any case).
pub fn parse_level(s: &str) -> Option<LogLevel> {
    match s.trim().to_ascii_lowercase().as_str() {
        "debug" => Some(LogLevel::Debug),
        "info" => Some(LogLevel::Info),
        "warn" | "warning" => Some(LogLevel::Warn),
        "error" => Some(LogLevel::Error),
        "fatal" => Some(LogLevel::Fatal),
        _ => None,
    }
}

/// The `log` crate's filter for a ROS level (`fatal` is `log`'s `error`).
pub fn level_filter(level: LogLevel) -> LevelFilter {
    match level {
        LogLevel::Debug => LevelFilter::Debug,
        LogLevel::Info => LevelFilter::Info,
        LogLevel::Warn => LevelFilter::Warn,
        LogLevel::Error | LogLevel::Fatal => LevelFilter::Error,
    }
}

/// The levels `--log-level` set.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLevels {
    /// The level of every logger not named below (`--log-level LEVEL`; default `info`).
    pub default: LogLevel,
    /// Levels of named loggers (`--log-level NAME:=LEVEL`): the node's own name, or a Rust
    /// module path prefix such as `rustdds` or `ros2_client`.
    pub named: Vec<(String, LogLevel)>,
}

impl Default for LogLevels {
    fn default() -> Self {
        Self {
            default: LogLevel::Info,
            named: Vec::new(),
        }
    }
}

impl LogLevels {
    /// Applies one `--log-level` argument: `LEVEL` or `NAME:=LEVEL`.
    pub fn apply(&mut self, arg: &str) -> Result<(), String> {
        let (name, level) = match arg.split_once(":=") {
            Some((name, level)) => (Some(name.trim()), level),
            None => (None, arg),
        };
        let level = parse_level(level).ok_or_else(|| {
            format!("--log-level: expected debug, info, warn, error or fatal, got {level:?}")
        })?;
        match name {
            None => self.default = level,
            Some(name) => self.named.push((name.to_string(), level)),
        }
        Ok(())
    }

    /// The level of logger `name`: the last level given for it, else the default. A Rust
    /// target matches a name that is a prefix of it at a `::` boundary.
    pub fn level_of(&self, name: &str) -> LogLevel {
        self.named
            .iter()
            .rev()
            .find(|(n, _)| {
                name == n
                    || name
                        .strip_prefix(n.as_str())
                        .is_some_and(|r| r.starts_with("::"))
            })
            .map_or(self.default, |(_, level)| *level)
    }

    /// The level of a library's `log` target (RustDDS, ros2-client, ...): as [`Self::level_of`]
    /// when named, else the default but at least `warn`, since their `info` lines are about
    /// DDS internals.
    pub fn library_level(&self, target: &str) -> LogLevel {
        let named = self.named.iter().any(|(n, _)| {
            target == n
                || target
                    .strip_prefix(n.as_str())
                    .is_some_and(|r| r.starts_with("::"))
        });
        if named {
            self.level_of(target)
        } else {
            self.default.max(LogLevel::Warn)
        }
    }
}

/// How often one call site of a library may print: RustDDS repeats some warnings for every
/// message it sends, which would bury everything else (and block the process on a full stderr
/// pipe).
const REPEAT_INTERVAL: Duration = Duration::from_secs(10);

/// A log call site: target, file, line.
type CallSite = (String, &'static str, u32);

/// The crates that are the node itself: their records follow `--log-level`'s default, those of
/// libraries at least `warn`.
const NODE_CRATES: [&str; 2] = ["surfcl_ros", "surfcl_node"];

/// The `log` backend: env_logger's filter and stderr lines (`[LEVEL] [target]: message`, as the
/// node's own lines), each call site at most once per [`REPEAT_INTERVAL`] (with how many were
/// left out since), and what passes forwarded to `/rosout` while a [`RosoutForwarding`] is
/// active.
struct NodeLog {
    stderr: env_logger::Logger,
    /// Per call site (target, file, line): when it last printed, and what was left out since.
    last: Mutex<HashMap<CallSite, (Instant, u64)>>,
}

/// env_logger configured with `levels`: libraries at `--log-level`'s default but at least
/// `warn`, the node's crates at the default, named loggers as given; `RUST_LOG`, when set,
/// adds its directives on top.
fn stderr_logger(levels: &LogLevels) -> env_logger::Logger {
    let mut builder = env_logger::Builder::new();
    builder.filter_level(level_filter(levels.default.max(LogLevel::Warn)));
    for krate in NODE_CRATES {
        builder.filter_module(krate, level_filter(levels.default));
    }
    for (name, level) in &levels.named {
        builder.filter_module(name, level_filter(*level));
    }
    builder
        .parse_env(env_logger::Env::new().filter("RUST_LOG"))
        .format(|out, record| {
            writeln!(
                out,
                "[{}] [{}]: {}",
                record.level(),
                record.target(),
                record.args()
            )
        });
    builder.build()
}

impl NodeLog {
    fn new(levels: &LogLevels) -> Self {
        Self {
            stderr: stderr_logger(levels),
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Whether this record's call site may print now; `Some(left out since its last line)`.
    fn admit(&self, record: &Record<'_>, now: Instant) -> Option<u64> {
        let key = (
            record.target().to_string(),
            record.file_static().unwrap_or(""),
            record.line().unwrap_or(0),
        );
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.len() > 4096 {
            last.clear();
        }
        match last.get_mut(&key) {
            Some((at, left_out)) if now.duration_since(*at) < REPEAT_INTERVAL => {
                *left_out += 1;
                None
            }
            Some((at, left_out)) => {
                let skipped = *left_out;
                (*at, *left_out) = (now, 0);
                Some(skipped)
            }
            None => {
                last.insert(key, (now, 0));
                Some(0)
            }
        }
    }
}

impl Log for NodeLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.stderr.enabled(metadata)
    }
    fn log(&self, record: &Record<'_>) {
        if !self.stderr.matches(record) {
            return;
        }
        let Some(left_out) = self.admit(record, Instant::now()) else {
            return;
        };
        if left_out > 0 {
            let args = format_args!("{} ({left_out} more like it left out)", record.args());
            self.stderr.log(
                &Record::builder()
                    .metadata(record.metadata().clone())
                    .module_path(record.module_path())
                    .file(record.file())
                    .line(record.line())
                    .args(args)
                    .build(),
            );
        } else {
            self.stderr.log(record);
        }
        forward::forward(record);
    }
    fn flush(&self) {
        self.stderr.flush();
    }
}

static BACKEND: OnceLock<NodeLog> = OnceLock::new();

/// Installs the `log` backend with `levels` (once per process; later calls keep the first
/// levels): records go to stderr, and to `/rosout` while a [`RosoutForwarding`] is active.
/// Returns whether this call installed it.
pub fn install(levels: &LogLevels) -> bool {
    let mut installed = false;
    let backend = BACKEND.get_or_init(|| {
        installed = true;
        NodeLog::new(levels)
    });
    if installed && log::set_logger(backend).is_ok() {
        log::set_max_level(backend.stderr.filter());
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_by_name_and_default() {
        let mut l = LogLevels::default();
        assert_eq!(l.level_of("rustdds::rtps"), LogLevel::Info);
        l.apply("WARN").unwrap();
        l.apply("rustdds:=error").unwrap();
        l.apply("surfcl_node:=debug").unwrap();
        assert_eq!(l.level_of("rustdds::rtps::writer"), LogLevel::Error);
        assert_eq!(l.level_of("rustdds"), LogLevel::Error);
        assert_eq!(
            l.level_of("rustdds_other"),
            LogLevel::Warn,
            "not a module of it"
        );
        assert_eq!(l.level_of("surfcl_node"), LogLevel::Debug);
        assert_eq!(l.level_of("ros2_client::node"), LogLevel::Warn);
        assert!(l.apply("loud").is_err());
        assert!(l.apply("x:=loud").is_err());
    }

    #[test]
    fn backend_filters_by_target() {
        let mut l = LogLevels::default();
        l.apply("rustdds:=error").unwrap();
        let b = NodeLog::new(&l);
        let meta = |level, target| Metadata::builder().level(level).target(target).build();
        assert!(!b.enabled(&meta(log::Level::Warn, "rustdds::rtps")));
        assert!(b.enabled(&meta(log::Level::Error, "rustdds::rtps")));
        assert!(b.enabled(&meta(log::Level::Warn, "ros2_client")));
        assert!(
            !b.enabled(&meta(log::Level::Info, "ros2_client")),
            "libraries: warn at least"
        );
        assert!(
            b.enabled(&meta(log::Level::Info, "surfcl_ros::node::receive")),
            "the node's own modules: the default"
        );
        let mut l = LogLevels::default();
        l.apply("debug").unwrap();
        let b = NodeLog::new(&l);
        assert!(!b.enabled(&meta(log::Level::Info, "rustdds::rtps")));
        let mut l = LogLevels::default();
        l.apply("rustdds:=debug").unwrap();
        let b = NodeLog::new(&l);
        assert!(
            b.enabled(&meta(log::Level::Debug, "rustdds::rtps")),
            "named: as asked"
        );
    }

    #[test]
    fn a_call_site_prints_once_per_interval() {
        let b = NodeLog::new(&LogLevels::default());
        let args = format_args!("no locators");
        let record = |line| {
            Record::builder()
                .level(log::Level::Warn)
                .target("rustdds::rtps::writer")
                .file_static(Some("writer.rs"))
                .line(Some(line))
                .args(args)
                .build()
        };
        let t0 = Instant::now();
        assert_eq!(b.admit(&record(7), t0), Some(0));
        assert_eq!(b.admit(&record(7), t0 + Duration::from_secs(1)), None);
        assert_eq!(b.admit(&record(7), t0 + Duration::from_secs(2)), None);
        assert_eq!(b.admit(&record(8), t0), Some(0), "another call site");
        assert_eq!(b.admit(&record(7), t0 + REPEAT_INTERVAL), Some(2));
    }
}
