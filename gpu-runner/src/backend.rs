//! The backend seam: the CLI (and the tests) run detection and matching through [`Backend`],
//! without knowing whether the work happens on the CPU reference ([`crate::cpu::CpuBackend`]) or
//! on an OpenCL device ([`crate::opencl::open`]).
//!
//! Both backends take the same validated [`DetectParams`] and return the same [`Features`], so a
//! test can run one image through both and compare the outputs field by field.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use surfcl_core::harris::HarrisConfig;
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::surf::SurfConfig;
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use crate::error::Error;
use crate::opencl::OpenClError;

/// Largest `max_keypoints` accepted. A million keypoints is far more than any image within the
/// core's size limits yields at a sensible threshold, and it bounds the buffers (keypoints and
/// 64-float descriptors, about 300 MB) that a backend allocates up front.
pub const MAX_KEYPOINTS_LIMIT: usize = 1_000_000;

/// Which detector finds the interest points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DetectorKind {
    /// Fast-Hessian (SURF) blobs over several scales.
    #[default]
    Surf,
    /// Harris corners at one scale, described with SURF-64 at a fixed scale.
    Harris,
}

impl DetectorKind {
    /// The name used on the command line and in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            DetectorKind::Surf => "surf",
            DetectorKind::Harris => "harris",
        }
    }
}

/// Which descriptor representation the matcher compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DescriptorKind {
    /// Unit-length `f32` SURF-64, L2 distance.
    #[default]
    F32,
    /// The same descriptor quantised to Q7 (`i8`), squared integer distance.
    Q7,
}

impl DescriptorKind {
    /// The name used on the command line and in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            DescriptorKind::F32 => "f32",
            DescriptorKind::Q7 => "q7",
        }
    }
}

/// Everything a backend needs to detect and describe the interest points of one image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectParams {
    /// Which detector runs.
    pub detector: DetectorKind,
    /// SURF parameters (used when `detector` is [`DetectorKind::Surf`]; `upright` also decides
    /// whether SURF keypoints get an orientation).
    pub surf: SurfConfig,
    /// Harris parameters (used when `detector` is [`DetectorKind::Harris`]).
    pub harris: HarrisConfig,
    /// Capacity of the keypoint set: the strongest `max_keypoints` are kept, the rest counted as
    /// dropped. `1..=`[`MAX_KEYPOINTS_LIMIT`].
    pub max_keypoints: usize,
    /// Descriptor representation the matcher will use (detection always produces `f32`).
    pub descriptor: DescriptorKind,
}

impl DetectParams {
    /// Checks every parameter once, with the same core `validate()`s the kernels rely on.
    pub fn validate(&self) -> Result<(), Error> {
        self.surf.validate()?;
        self.harris.validate()?;
        if self.max_keypoints == 0 || self.max_keypoints > MAX_KEYPOINTS_LIMIT {
            return Err(Error::InvalidArgument(format!(
                "max-keypoints must be in 1..={MAX_KEYPOINTS_LIMIT}, got {}",
                self.max_keypoints
            )));
        }
        Ok(())
    }
}

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

/// Which backend the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// OpenCL when a device is available, else the CPU reference (with one note on stderr).
    #[default]
    Auto,
    /// OpenCL, or an error.
    OpenCl,
    /// The CPU reference.
    Cpu,
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
