//! Log levels the ROS way (`--ros-args --log-level LEVEL`, or `--log-level NAME:=LEVEL` for one
//! logger) and a `log` backend on stderr, so that warnings of RustDDS and ros2-client (which log
//! through the `log` crate) are seen instead of vanishing.
//!
//! No crate of the field could be fetched for this build (the environment is offline), so the
//! backend is the few lines below: one line per record, `[LEVEL] [target]: message`, as the
//! node's own lines.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use log::{LevelFilter, Log, Metadata, Record};
use ros2_client::ros2::LogLevel;

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

/// The `log` backend: records at or above their target's level go to stderr, each call site
/// at most once per [`REPEAT_INTERVAL`] (with how many were left out since).
struct StderrLog {
    levels: LogLevels,
    /// Per call site (target, file, line): when it last printed, and what was left out since.
    last: Mutex<HashMap<CallSite, (Instant, u64)>>,
}

impl StderrLog {
    fn new(levels: LogLevels) -> Self {
        Self {
            levels,
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

impl Log for StderrLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= level_filter(self.levels.library_level(metadata.target()))
    }
    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let Some(left_out) = self.admit(record, Instant::now()) else {
            return;
        };
        let repeats = if left_out > 0 {
            format!(" ({left_out} more like it left out)")
        } else {
            String::new()
        };
        eprintln!(
            "[{}] [{}]: {}{repeats}",
            record.level(),
            record.target(),
            record.args()
        );
    }
    fn flush(&self) {}
}

static BACKEND: OnceLock<StderrLog> = OnceLock::new();

/// Installs the stderr backend for the `log` crate with `levels` (once per process; later
/// calls keep the first levels). Returns whether this call installed it.
pub fn install(levels: &LogLevels) -> bool {
    let mut installed = false;
    let backend = BACKEND.get_or_init(|| {
        installed = true;
        StderrLog::new(levels.clone())
    });
    if installed && log::set_logger(backend).is_ok() {
        let most = std::iter::once(levels.default)
            .chain(levels.named.iter().map(|(_, l)| *l))
            .map(level_filter)
            .max()
            .unwrap_or(LevelFilter::Info);
        log::set_max_level(most);
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
        let b = StderrLog::new(l);
        let meta = |level, target| Metadata::builder().level(level).target(target).build();
        assert!(!b.enabled(&meta(log::Level::Warn, "rustdds::rtps")));
        assert!(b.enabled(&meta(log::Level::Error, "rustdds::rtps")));
        assert!(b.enabled(&meta(log::Level::Warn, "ros2_client")));
        assert!(
            !b.enabled(&meta(log::Level::Info, "ros2_client")),
            "libraries: warn at least"
        );
        let mut l = LogLevels::default();
        l.apply("debug").unwrap();
        let b = StderrLog::new(l);
        assert!(!b.enabled(&meta(log::Level::Info, "rustdds::rtps")));
        let mut l = LogLevels::default();
        l.apply("rustdds:=debug").unwrap();
        let b = StderrLog::new(l);
        assert!(
            b.enabled(&meta(log::Level::Debug, "rustdds::rtps")),
            "named: as asked"
        );
    }

    #[test]
    fn a_call_site_prints_once_per_interval() {
        let b = StderrLog::new(LogLevels::default());
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
