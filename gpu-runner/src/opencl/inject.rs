//! Fault injection inside the OpenCL backend: make the `n`-th device operation of one kind fail
//! as the runtime would report it.
//!
//! [`crate::fault`] wraps a whole [`crate::backend::Backend`] and fails *instead of* calling it;
//! this module fails *inside* the pipelines, at the points where the OpenCL runtime can fail:
//! a buffer allocation, a program build, a kernel enqueue, an upload, a readback. Tests use it to
//! show that each failure surfaces as the typed [`OpenClError`] of that operation, that
//! nothing partial is returned, and that the pipeline stays usable for the next frame (or, for a
//! failure while it is being made, that it can be made again).
//!
//! Plans are per thread (a test's plan cannot hit a pipeline of another test running in
//! parallel) and one-shot: the planned operation fails once and the plan is spent. The CLI's
//! thread takes its plan from `SURFCL_CL_FAULT` the first time it reaches an injection point:
//!
//! ```text
//! SURFCL_CL_FAULT=readback:1     the first readback fails
//! SURFCL_CL_FAULT=enqueue:7      the seventh kernel enqueue fails
//! SURFCL_CL_FAULT=alloc:3        the third buffer allocation fails
//! SURFCL_CL_FAULT=build:1        the first program build fails
//! SURFCL_CL_FAULT=upload:2       the second frame upload fails
//! ```
//!
//! With no plan an injection point costs one thread-local read. Built without the
//! `fault-injection` feature, the injection points are empty functions the compiler removes,
//! and `SURFCL_CL_FAULT` is never read.

#[cfg(feature = "fault-injection")]
use std::cell::Cell;
#[cfg(feature = "fault-injection")]
use std::fmt;
#[cfg(feature = "fault-injection")]
use std::str::FromStr;

use super::error::OpenClError;

/// The environment variable read once per thread (see the module docs).
#[cfg(feature = "fault-injection")]
pub const CL_FAULT_ENV: &str = "SURFCL_CL_FAULT";

/// The message of every injected failure (tests and users can tell it from a real one).
#[cfg(feature = "fault-injection")]
pub const INJECTED: &str = "injected fault";

/// A kind of device operation that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// A device buffer allocation (`OpenClError::Allocation`).
    Allocate,
    /// A program build (`OpenClError::Build`).
    Build,
    /// A kernel enqueue (`OpenClError::Runtime`, "enqueue kernel").
    Enqueue,
    /// A frame upload to the device (`OpenClError::Runtime`).
    Upload,
    /// A readback of results to the host (`OpenClError::Runtime`).
    Readback,
}

#[cfg(feature = "fault-injection")]
impl FaultPoint {
    /// Every point, in the order of a frame's life.
    pub const ALL: [FaultPoint; 5] = [
        FaultPoint::Allocate,
        FaultPoint::Build,
        FaultPoint::Upload,
        FaultPoint::Enqueue,
        FaultPoint::Readback,
    ];

    /// The name used by `SURFCL_CL_FAULT`.
    pub fn name(self) -> &'static str {
        match self {
            FaultPoint::Allocate => "alloc",
            FaultPoint::Build => "build",
            FaultPoint::Enqueue => "enqueue",
            FaultPoint::Upload => "upload",
            FaultPoint::Readback => "readback",
        }
    }
}

#[cfg(feature = "fault-injection")]
impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// "The `nth` (1-based) operation of kind `point` on this thread fails."
#[cfg(feature = "fault-injection")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClFaultPlan {
    /// The kind of operation.
    pub point: FaultPoint,
    /// Which one fails, counting from 1 when the plan is set.
    pub nth: u32,
}

#[cfg(feature = "fault-injection")]
impl FromStr for ClFaultPlan {
    type Err = String;

    /// Parses `POINT:N` (see the module docs).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (point, nth) = s
            .split_once(':')
            .ok_or_else(|| format!("{CL_FAULT_ENV}={s:?}: expected POINT:N"))?;
        let point = FaultPoint::ALL
            .into_iter()
            .find(|p| p.name() == point)
            .ok_or_else(|| {
                format!(
                    "{CL_FAULT_ENV}: unknown point {point:?} (alloc, build, upload, enqueue, readback)"
                )
            })?;
        let nth: u32 = nth
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("{CL_FAULT_ENV}: {nth:?} is not a count from 1"))?;
        Ok(Self { point, nth })
    }
}

/// Per-thread state: whether the environment was read, and the plan with the operations of its
/// kind still to pass before the failure.
#[cfg(feature = "fault-injection")]
#[derive(Clone, Copy)]
struct State {
    env_read: bool,
    plan: Option<(FaultPoint, u32)>,
}

#[cfg(feature = "fault-injection")]
thread_local! {
    static STATE: Cell<State> = const { Cell::new(State { env_read: false, plan: None }) };
}

/// Sets this thread's plan (replacing any other; the environment is then ignored).
#[cfg(feature = "fault-injection")]
pub fn set_plan(plan: ClFaultPlan) {
    STATE.with(|s| {
        s.set(State {
            env_read: true,
            plan: Some((plan.point, plan.nth)),
        })
    });
}

/// Removes this thread's plan; returns whether one was still pending (not yet fired).
#[cfg(feature = "fault-injection")]
pub fn clear_plan() -> bool {
    STATE.with(|s| {
        let pending = s.get().plan.is_some();
        s.set(State {
            env_read: true,
            plan: None,
        });
        pending
    })
}

/// An injection point: `Some(message)` when this operation is the planned failure.
#[cfg(feature = "fault-injection")]
pub(crate) fn check(point: FaultPoint) -> Option<String> {
    STATE.with(|cell| {
        let mut state = cell.get();
        if !state.env_read {
            state.env_read = true;
            // A malformed variable is ignored here; the CLI validates it at start-up.
            state.plan = std::env::var(CL_FAULT_ENV)
                .ok()
                .and_then(|v| v.parse::<ClFaultPlan>().ok())
                .map(|p| (p.point, p.nth));
        }
        let fired = match state.plan {
            Some((p, n)) if p == point => {
                if n <= 1 {
                    state.plan = None;
                    true
                } else {
                    state.plan = Some((p, n - 1));
                    false
                }
            }
            _ => false,
        };
        cell.set(state);
        fired.then(|| format!("{INJECTED} ({point}, {CL_FAULT_ENV})"))
    })
}

/// An injection point for an operation whose failure is an `OpenClError::Runtime` with
/// `context`.
#[inline]
pub(crate) fn runtime(point: FaultPoint, context: &'static str) -> Result<(), OpenClError> {
    match check(point) {
        Some(message) => Err(OpenClError::Runtime { context, message }),
        None => Ok(()),
    }
}

/// An injection point of a build without fault injection: never fails.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn check(_point: FaultPoint) -> Option<String> {
    None
}

/// Validates `SURFCL_CL_FAULT` (for the CLI: a typo should not silently test nothing).
#[cfg(feature = "fault-injection")]
pub fn plan_from_env() -> Result<Option<ClFaultPlan>, String> {
    match std::env::var(CL_FAULT_ENV) {
        Ok(v) if !v.is_empty() => v.parse().map(Some),
        _ => Ok(None),
    }
}

#[cfg(all(test, feature = "fault-injection"))]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_fire_once_on_the_nth_operation() {
        assert_eq!(
            "enqueue:3".parse::<ClFaultPlan>(),
            Ok(ClFaultPlan {
                point: FaultPoint::Enqueue,
                nth: 3
            })
        );
        assert!("enqueue:0".parse::<ClFaultPlan>().is_err());
        assert!("launch:1".parse::<ClFaultPlan>().is_err());
        assert!("readback".parse::<ClFaultPlan>().is_err());

        set_plan(ClFaultPlan {
            point: FaultPoint::Readback,
            nth: 2,
        });
        assert_eq!(check(FaultPoint::Enqueue), None);
        assert_eq!(check(FaultPoint::Readback), None);
        let msg = check(FaultPoint::Readback);
        assert!(msg.is_some_and(|m| m.contains(INJECTED)));
        assert_eq!(check(FaultPoint::Readback), None, "one-shot");
        assert!(!clear_plan());
    }
}
