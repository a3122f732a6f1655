//! Opening a backend, and the rule `auto` follows: an OpenCL GPU or accelerator when there is
//! one, else the native CPU backend. An OpenCL CPU device (PoCL) compiles the kernels for the
//! cores the CPU backend already uses with its own threads and SIMD, and is slower than it
//! (docs/BENCHMARKS.md), so `auto` leaves it to an explicit
//! `--backend opencl` or `--device`.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{Backend, BackendChoice};
use crate::cpu::CpuBackend;
use crate::error::Error;
use crate::opencl::{self, DeviceInfo, preferred_device};

/// Whether the "using the CPU backend" note was printed already (once per process).
static CPU_NOTED: AtomicBool = AtomicBool::new(false);

/// What [`BackendChoice::Auto`] runs on this machine, and why ([`explain_auto`]).
#[derive(Debug, Clone)]
pub struct AutoChoice {
    /// The OpenCL device `auto` opens (a GPU or an accelerator), or `None` for the native CPU
    /// backend.
    pub device: Option<DeviceInfo>,
    /// Why this backend, in one clause (for `surfcl devices` and the note of a CPU run).
    pub reason: String,
}

impl AutoChoice {
    /// The backend `auto` opens: [`BackendChoice::OpenCl`] or [`BackendChoice::Cpu`].
    pub fn backend(&self) -> BackendChoice {
        if self.device.is_some() {
            BackendChoice::OpenCl
        } else {
            BackendChoice::Cpu
        }
    }
}

/// Which backend [`BackendChoice::Auto`] takes on this machine (without `--device`), and why:
/// the first OpenCL GPU, else the first accelerator, else the native CPU backend, whose reason
/// then says what OpenCL there is (nothing, or only CPU devices that run with
/// `--backend opencl`). An OpenCL failure other than "no platform" is the reason too: `auto`
/// runs the CPU backend then, and says why.
pub fn explain_auto() -> AutoChoice {
    let devices = match opencl::list_devices() {
        Ok(devices) => devices,
        Err(e) => {
            return AutoChoice {
                device: None,
                reason: e.to_string(),
            };
        }
    };
    if let Some(device) = preferred_device(&devices) {
        return AutoChoice {
            reason: format!(
                "the first OpenCL {} of this machine: {} / {} (device {})",
                device.kind, device.platform, device.name, device.index
            ),
            device: Some(device.clone()),
        };
    }
    let reason = if devices.is_empty() {
        "no OpenCL device".to_string()
    } else {
        let names: Vec<String> = devices
            .iter()
            .map(|d| format!("{} / {} ({})", d.platform, d.name, d.kind))
            .collect();
        let (is, runs) = if devices.len() == 1 {
            ("is", "runs")
        } else {
            ("are", "run")
        };
        format!(
            "no OpenCL GPU or accelerator; the OpenCL {} {is} slower than the CPU backend and \
             {runs} with --backend opencl",
            names.join(", ")
        )
    };
    AutoChoice {
        device: None,
        reason,
    }
}

/// Whether `device_spec` names a device (an index or a name substring), rather than leaving
/// the choice to `auto`.
fn names_a_device(device_spec: Option<&str>) -> bool {
    device_spec.is_some_and(|s| !s.trim().is_empty() && !s.trim().eq_ignore_ascii_case("auto"))
}

/// Opens the backend chosen by `choice`. `device_spec` (an index or a name substring, see
/// [`crate::opencl::open`]) only applies to OpenCL.
///
/// [`BackendChoice::Auto`] follows [`explain_auto`]: an OpenCL GPU or accelerator when there is
/// one, else the CPU backend (with a note on stderr, once per process, in a build with OpenCL). A `device_spec` that
/// names a device asks for OpenCL on it, whatever its kind; a device that fails to open (a
/// kernel that does not build, a `--device` that matches nothing) is an error, because silently
/// hiding it would make timings and results misleading.
///
/// Built with the `fault-injection` feature, a set `SURFCL_FAULT` environment variable wraps the
/// backend in a `fault::FaultyBackend` that fails the planned call (robustness tests of the CLI).
pub fn open_backend(
    choice: BackendChoice,
    device_spec: Option<&str>,
) -> Result<Box<dyn Backend>, Error> {
    let backend = open_unwrapped(choice, device_spec)?;
    #[cfg(feature = "fault-injection")]
    let backend = crate::fault::wrap_from_env(backend)?;
    Ok(backend)
}

/// [`open_backend`] without the fault-injection hook.
fn open_unwrapped(
    choice: BackendChoice,
    device_spec: Option<&str>,
) -> Result<Box<dyn Backend>, Error> {
    match choice {
        BackendChoice::Cpu => Ok(Box::new(CpuBackend::new())),
        BackendChoice::OpenCl => Ok(opencl::open(device_spec)?),
        BackendChoice::Auto if names_a_device(device_spec) => Ok(opencl::open(device_spec)?),
        BackendChoice::Auto => {
            let auto = explain_auto();
            match auto.device {
                Some(device) => Ok(opencl::open(Some(&device.index.to_string()))?),
                None => {
                    // A build without OpenCL has nothing else to offer: no note then.
                    if cfg!(feature = "opencl") && !CPU_NOTED.swap(true, Ordering::Relaxed) {
                        // Not `eprintln!`: it panics when stderr is a closed pipe (`2>&1 | head`).
                        let _ = writeln!(
                            std::io::stderr(),
                            "note: {}; using the CPU backend",
                            auto.reason
                        );
                    }
                    Ok(Box::new(CpuBackend::new()))
                }
            }
        }
    }
}
