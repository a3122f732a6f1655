//! Fault injection: a [`Backend`] wrapper that makes a chosen call fail with a chosen error.
//!
//! Robustness tests (and the `SURFCL_FAULT` environment variable of the CLI, see
//! [`FaultPlan::from_env`]) use it to check that a failure in the middle of a stream gives the
//! caller a typed error, no partial result, and leaves the pipeline usable for the next frame.
//! The wrapper fails *instead of* calling the inner backend, so the inner state is exactly what
//! an early error return (before any work) leaves behind; failures inside a backend (a kernel
//! enqueue that fails after buffers were written) need hooks inside that backend.
//!
//! A plan names the operation (`detect` or `match`), which call of it fails (1-based), whether
//! it keeps failing afterwards, and the error:
//!
//! ```text
//! SURFCL_FAULT=detect:1            first detect fails (internal error)
//! SURFCL_FAULT=match:2:alloc       second match fails with an OpenCL allocation error
//! SURFCL_FAULT=detect:3+:runtime   every detect from the third on fails
//! ```

use std::fmt;
use std::str::FromStr;

use surfcl_core::GrayImage;
use surfcl_core::matcher::{Match, MatchConfig};

use crate::backend::{Backend, DescriptorKind, DetectParams, Features};
use crate::error::Error;
use crate::opencl::error::OpenClError;

/// The environment variable read by [`FaultPlan::from_env`].
pub const FAULT_ENV: &str = "SURFCL_FAULT";

/// The backend operation a plan targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// [`Backend::detect`].
    Detect,
    /// [`Backend::match_features`].
    Match,
}

impl Operation {
    /// `"detect"` or `"match"`.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Detect => "detect",
            Operation::Match => "match",
        }
    }
}

/// Which error the failing call returns (built fresh each time: [`Error`] is not `Clone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FaultKind {
    /// [`Error::Internal`] (the default).
    #[default]
    Internal,
    /// [`OpenClError::Allocation`], as a device out of memory would report it.
    Allocation,
    /// [`OpenClError::Runtime`], as a failed enqueue or read-back would report it.
    Runtime,
    /// [`Error::Io`] with [`std::io::ErrorKind::Other`].
    Io,
}

impl FaultKind {
    /// The error a failing call returns.
    pub fn error(self, op: Operation, call: u64) -> Error {
        let what = format!("injected fault: {} call {call}", op.name());
        match self {
            FaultKind::Internal => Error::Internal(what),
            FaultKind::Allocation => Error::OpenCl(OpenClError::Allocation {
                what: "injected fault",
                bytes: 0,
                message: what,
            }),
            FaultKind::Runtime => Error::OpenCl(OpenClError::Runtime {
                context: "injected fault",
                message: what,
            }),
            FaultKind::Io => Error::io(FAULT_ENV, std::io::Error::other(what)),
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "internal" => FaultKind::Internal,
            "alloc" | "allocation" => FaultKind::Allocation,
            "runtime" => FaultKind::Runtime,
            "io" => FaultKind::Io,
            _ => return None,
        })
    }
}

/// Which call fails, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// The operation that fails.
    pub operation: Operation,
    /// The 1-based index of the first failing call of `operation`.
    pub nth: u64,
    /// Whether every later call of `operation` fails too (else only call `nth`).
    pub sticky: bool,
    /// The error returned.
    pub kind: FaultKind,
}

impl FaultPlan {
    /// A plan where only call `nth` (1-based) of `operation` fails, with `kind`.
    pub fn once(operation: Operation, nth: u64, kind: FaultKind) -> Self {
        Self {
            operation,
            nth,
            sticky: false,
            kind,
        }
    }

    /// Whether call `call` (1-based) of `op` fails under this plan.
    pub fn fails(&self, op: Operation, call: u64) -> bool {
        op == self.operation && (call == self.nth || (self.sticky && call > self.nth))
    }

    /// Reads [`FAULT_ENV`]: `Ok(None)` when unset or empty, an error naming the variable when
    /// the value does not parse (a typo must not silently disable the fault).
    pub fn from_env() -> Result<Option<Self>, Error> {
        match std::env::var(FAULT_ENV) {
            Ok(v) if v.trim().is_empty() => Ok(None),
            Ok(v) => v.parse().map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::InvalidArgument(format!(
                "{FAULT_ENV} is not valid UTF-8"
            ))),
        }
    }
}

impl FromStr for FaultPlan {
    type Err = Error;

    /// `OP:N[+][:KIND]` with `OP` = `detect`|`match`, `N >= 1`, `+` = sticky, and `KIND` =
    /// `internal` (default) | `alloc` | `runtime` | `io`.
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::InvalidArgument(format!(
                "{FAULT_ENV}={s:?}: expected OP:N[+][:KIND], OP = detect|match, N >= 1, \
                 KIND = internal|alloc|runtime|io"
            ))
        };
        let mut parts = s.trim().split(':');
        let operation = match parts.next() {
            Some("detect") => Operation::Detect,
            Some("match") => Operation::Match,
            _ => return Err(bad()),
        };
        let count = parts.next().ok_or_else(bad)?;
        let (count, sticky) = match count.strip_suffix('+') {
            Some(c) => (c, true),
            None => (count, false),
        };
        let nth: u64 = count.parse().map_err(|_| bad())?;
        if nth == 0 {
            return Err(bad());
        }
        let kind = match parts.next() {
            None => FaultKind::Internal,
            Some(k) => FaultKind::parse(k).ok_or_else(bad)?,
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Self {
            operation,
            nth,
            sticky,
            kind,
        })
    }
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FaultKind::Internal => "internal",
            FaultKind::Allocation => "alloc",
            FaultKind::Runtime => "runtime",
            FaultKind::Io => "io",
        };
        let plus = if self.sticky { "+" } else { "" };
        write!(f, "{}:{}{plus}:{kind}", self.operation.name(), self.nth)
    }
}

/// A backend that runs `B` except for the calls its [`FaultPlan`] makes fail.
#[derive(Debug)]
pub struct FaultyBackend<B> {
    inner: B,
    plan: FaultPlan,
    detect_calls: u64,
    match_calls: u64,
    injected: u64,
}

impl<B: Backend> FaultyBackend<B> {
    /// Wraps `inner`; call counting starts at zero.
    pub fn new(inner: B, plan: FaultPlan) -> Self {
        Self {
            inner,
            plan,
            detect_calls: 0,
            match_calls: 0,
            injected: 0,
        }
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.injected
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Unwraps the backend.
    pub fn into_inner(self) -> B {
        self.inner
    }

    /// Counts one call of `op` and returns the injected error if this call fails.
    fn check(&mut self, op: Operation) -> Result<(), Error> {
        let counter = match op {
            Operation::Detect => &mut self.detect_calls,
            Operation::Match => &mut self.match_calls,
        };
        *counter = counter.saturating_add(1);
        let call = *counter;
        if self.plan.fails(op, call) {
            self.injected = self.injected.saturating_add(1);
            return Err(self.plan.kind.error(op, call));
        }
        Ok(())
    }
}

impl<B: Backend> Backend for FaultyBackend<B> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn device(&self) -> String {
        format!("{} (fault injection: {})", self.inner.device(), self.plan)
    }

    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error> {
        self.check(Operation::Detect)?;
        self.inner.detect(image, params)
    }

    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error> {
        self.check(Operation::Match)?;
        self.inner.match_features(query, train, config, descriptor)
    }
}

/// Wraps `backend` in a [`FaultyBackend`] when [`FAULT_ENV`] is set (the CLI's hook); returns it
/// unchanged otherwise.
pub fn wrap_from_env(backend: Box<dyn Backend>) -> Result<Box<dyn Backend>, Error> {
    Ok(match FaultPlan::from_env()? {
        Some(plan) => Box::new(FaultyBackend::new(backend, plan)),
        None => backend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_round_trip() {
        let p: FaultPlan = "detect:1".parse().unwrap();
        assert_eq!(
            p,
            FaultPlan::once(Operation::Detect, 1, FaultKind::Internal)
        );
        let p: FaultPlan = "match:3+:alloc".parse().unwrap();
        assert!(p.sticky && p.nth == 3 && p.kind == FaultKind::Allocation);
        assert_eq!(p.to_string().parse::<FaultPlan>().unwrap(), p);
        for bad in [
            "",
            "detect",
            "detect:0",
            "detect:x",
            "fetch:1",
            "match:1:oom",
            "detect:1:io:x",
        ] {
            assert!(bad.parse::<FaultPlan>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn fails_only_the_planned_calls() {
        let once = FaultPlan::once(Operation::Match, 2, FaultKind::Runtime);
        let fails: Vec<bool> = (1..=4).map(|c| once.fails(Operation::Match, c)).collect();
        assert_eq!(fails, [false, true, false, false]);
        assert!(!once.fails(Operation::Detect, 2));
        let sticky = FaultPlan {
            sticky: true,
            ..once
        };
        let fails: Vec<bool> = (1..=4).map(|c| sticky.fails(Operation::Match, c)).collect();
        assert_eq!(fails, [false, true, true, true]);
    }
}
