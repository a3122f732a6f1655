//! Opening a backend: OpenCL when there is a device, else the CPU reference.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{Backend, BackendChoice};
use crate::error::Error;
use crate::opencl::OpenClError;

/// Whether the "falling back to the CPU" note was printed already (once per process).
static FALLBACK_NOTED: AtomicBool = AtomicBool::new(false);

/// Opens the backend chosen by `choice`. `device_spec` (an index or a name substring, see
/// [`crate::opencl::open`]) only applies to OpenCL.
///
/// With [`BackendChoice::Auto`], a machine without any OpenCL platform or device falls back to
/// the CPU and says so on stderr once; any other OpenCL failure (a kernel that does not build, a
/// `--device` that matches nothing) is an error, because silently hiding it would make timings
/// and results misleading.
///
/// When the `SURFCL_FAULT` environment variable is set, the backend is wrapped in a
/// [`crate::fault::FaultyBackend`] that fails the planned call (robustness tests of the CLI).
pub fn open_backend(
    choice: BackendChoice,
    device_spec: Option<&str>,
) -> Result<Box<dyn Backend>, Error> {
    crate::fault::wrap_from_env(open_unwrapped(choice, device_spec)?)
}

/// [`open_backend`] without the fault-injection hook.
fn open_unwrapped(
    choice: BackendChoice,
    device_spec: Option<&str>,
) -> Result<Box<dyn Backend>, Error> {
    match choice {
        BackendChoice::Cpu => Ok(Box::new(crate::cpu::CpuBackend::new())),
        BackendChoice::OpenCl => Ok(crate::opencl::open(device_spec)?),
        BackendChoice::Auto => match crate::opencl::open(device_spec) {
            Ok(backend) => Ok(backend),
            Err(e) if is_unavailable(&e, device_spec) => {
                if !FALLBACK_NOTED.swap(true, Ordering::Relaxed) {
                    // Not `eprintln!`: it panics when stderr is a closed pipe (`2>&1 | head`).
                    let _ = writeln!(std::io::stderr(), "note: {e}; using the CPU backend");
                }
                Ok(Box::new(crate::cpu::CpuBackend::new()))
            }
            Err(e) => Err(e.into()),
        },
    }
}

/// Whether an OpenCL error only means "there is no OpenCL here" (the case `auto` falls back on):
/// no platform at all, or no device while the user did not ask for a particular one. A `--device`
/// that matches nothing stays an error: the user asked for something that is not there.
fn is_unavailable(e: &OpenClError, device_spec: Option<&str>) -> bool {
    let any_device =
        device_spec.is_none_or(|s| s.trim().is_empty() || s.trim().eq_ignore_ascii_case("auto"));
    match e {
        OpenClError::NoPlatform => true,
        OpenClError::NoDevice { .. } => any_device,
        _ => false,
    }
}
