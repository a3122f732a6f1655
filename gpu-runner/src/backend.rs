//! The backend seam: the CLI (and the tests) run detection and matching through [`Backend`],
//! without knowing whether the work happens on the CPU reference ([`crate::cpu::CpuBackend`]) or
//! on an OpenCL device ([`crate::opencl::open`]).
//!
//! Both backends take the same validated [`DetectParams`] (the front-end configuration of
//! `surfcl_core::config`, re-exported here) and return the same [`Features`], so a test can run
//! one image through both and compare the outputs field by field.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

pub use surfcl_core::config::{
    BackendChoice, DEFAULT_MAX_KEYPOINTS, DescriptorKind, DetectParams, DetectorKind,
    MAX_KEYPOINTS_LIMIT, Named,
};
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use crate::error::Error;
use crate::opencl::OpenClError;

/// Time spent in one stage of a backend, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct StageTiming {
    /// Stage name (for example "integral", "detect", "describe"; OpenCL: kernel names).
    pub name: String,
    /// Duration in milliseconds.
    pub ms: f64,
}

/// The result of detection on one image.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Features {
    /// Image width in pixels.
    pub width: usize,
    /// Image height in pixels.
    pub height: usize,
    /// Keypoints, strongest first (the core's canonical order, `Keypoint::rank_cmp`).
    pub keypoints: Vec<Keypoint>,
    /// One unit-length descriptor per keypoint, same order.
    pub descriptors: Vec<Descriptor>,
    /// Candidates not kept because `max_keypoints` was reached.
    pub dropped: usize,
    /// Time per stage, in execution order.
    pub timings: Vec<StageTiming>,
}

/// A detector + describer + matcher implementation (CPU reference or OpenCL).
///
/// Implementations keep their buffers between calls: after the first frame of a given size,
/// `detect` should not allocate device or scratch memory again.
pub trait Backend: Send {
    /// `"cpu"` or `"opencl"`.
    fn name(&self) -> &'static str;
    /// A human description of the device (CPU model/threads, or OpenCL platform and device).
    fn device(&self) -> String;
    /// Detects and describes the interest points of `image`. `params` must have been validated.
    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error>;
    /// Matches `query` against `train` (2-NN with the tests of `config`), comparing descriptors
    /// in the `descriptor` representation.
    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error>;
}

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
