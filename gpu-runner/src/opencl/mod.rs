//! The OpenCL backend: device selection, the detectors ([`Detector`] over the SURF [`Pipeline`]
//! or the [`harris::HarrisPipeline`], chosen by [`DetectorConfig`]), the fused 2-NN
//! [`GpuMatcher`], the frame-to-frame [`StreamPipeline`] and [`OpenClBackend`], which puts the
//! detectors and the matcher behind [`Backend`]. `docs/ARCHITECTURE.md` has the map of the files.
//!
//! Kernels live in `kernels/*.cl` (OpenCL C 1.2, `FP_CONTRACT OFF`) and reproduce the
//! definitions of `docs/ARCHITECTURE.md`: integer results byte for byte, `f32` responses bit for
//! bit, positions/orientations/descriptors within the documented tolerances.
//!
//! All `unsafe` (enqueuing kernels with `ocl`) is in the private `enqueue` module.
//!
//! ```no_run
//! let devices = surfcl_gpu::opencl::list_devices()?;
//! for d in &devices {
//!     println!("{}: {} / {} ({})", d.index, d.platform, d.name, d.kind);
//! }
//! # Ok::<(), surfcl_gpu::opencl::OpenClError>(())
//! ```

mod backend;
mod enqueue;
mod frame;
mod gpu;
pub mod harris;
pub mod inject;
mod matcher;
mod pipeline;
mod record;
mod stream;
mod strongest;

/// Test images of the repository's data folder, for the unit tests that run kernels.
#[cfg(test)]
pub(crate) mod test_images {
    /// Oxford boat img1 (850x680), the frame the unit tests compare GPU and core on.
    pub(crate) fn boat() -> crate::io::OwnedGray {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat/img1.pgm");
        crate::io::load_gray(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

pub use backend::OpenClBackend;
pub use frame::{DetectOutput, Detector, DetectorConfig, PinnedFrame};
pub use gpu::{profiling, set_profiling};
pub use matcher::{GpuMatcher, MatchTimings, NearestNeighbours};
pub use pipeline::{Pipeline, PipelineConfig};
pub use stream::{StreamFrame, StreamInput, StreamPipeline};

use ocl::enums::{DeviceInfo as ClDeviceInfo, DeviceInfoResult};
use ocl::flags::DeviceType;
use ocl::{Device, Platform};

use crate::backend::Backend;

/// Errors of the OpenCL backend.
#[derive(Debug, thiserror::Error)]
pub enum OpenClError {
    /// No OpenCL platform is installed.
    #[error(
        "no OpenCL platform found: install an OpenCL runtime (Debian: pocl-opencl-icd ocl-icd-opencl-dev)"
    )]
    NoPlatform,
    /// No device matches the requested specification.
    #[error("no OpenCL device matches {spec:?} (see `surfcl devices`)")]
    NoDevice {
        /// The specification given (`auto`, an index or a name substring).
        spec: String,
    },
    /// A kernel source did not build; carries the compiler's log.
    #[error("OpenCL kernels {file} failed to build on {device}:\n{log}")]
    Build {
        /// Kernel file.
        file: &'static str,
        /// Device name.
        device: String,
        /// The build log (or the runtime's error text, which includes it).
        log: String,
    },
    /// The frame is larger than the pipeline was made for.
    #[error("image {width}x{height} exceeds the pipeline's maximum {max_width}x{max_height}")]
    ImageTooLarge {
        /// Frame width.
        width: usize,
        /// Frame height.
        height: usize,
        /// Pipeline maximum width.
        max_width: usize,
        /// Pipeline maximum height.
        max_height: usize,
    },
    /// A frame of a stream could not be had (unreadable file, decoding error).
    #[error("bad frame: {0}")]
    BadFrame(String),
    /// A device buffer could not be allocated.
    #[error("cannot allocate {bytes} bytes of device memory for {what}: {message}")]
    Allocation {
        /// The buffer.
        what: &'static str,
        /// Its size.
        bytes: u64,
        /// The runtime's error.
        message: String,
    },
    /// A parameter the device cannot handle (too little local memory, sizes out of range).
    #[error("unsupported on this device: {0}")]
    Unsupported(String),
    /// More candidates than the candidate buffer holds. The buffer is sized so that this cannot
    /// happen (see `Pipeline`); seeing it means a bug, so it is an error, not a silent drop.
    #[error("candidate buffer overflow: {found} candidates for {capacity} slots")]
    CandidateOverflow {
        /// Candidates found.
        found: usize,
        /// Slots.
        capacity: usize,
    },
    /// Any other OpenCL runtime error, with what was being done.
    #[error("{context}: {message}")]
    Runtime {
        /// What was being done.
        context: &'static str,
        /// The runtime's error.
        message: String,
    },
}

impl OpenClError {
    /// Wraps an `ocl` error with a short description of the operation.
    pub(crate) fn runtime(context: &'static str) -> impl FnOnce(ocl::Error) -> Self {
        move |e| OpenClError::Runtime {
            context,
            message: e.to_string(),
        }
    }
}

/// One OpenCL device as listed by `surfcl devices`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    /// Global index used by `--device N`.
    pub index: usize,
    /// Platform name.
    pub platform: String,
    /// Device name.
    pub name: String,
    /// "GPU", "CPU", "ACCELERATOR" or "OTHER".
    pub kind: String,
    /// OpenCL version string of the device.
    pub version: String,
    /// Compute units.
    pub compute_units: u32,
    /// Largest work-group size.
    pub max_work_group_size: usize,
    /// Local memory per work-group, bytes.
    pub local_mem_bytes: u64,
    /// Global memory, bytes.
    pub global_mem_bytes: u64,
    /// Whether the device has `cl_khr_fp64` (used for the sub-pixel fit).
    pub fp64: bool,
}

/// Serialises OpenCL setup calls (enumeration, context creation, program builds).
pub(crate) static SETUP_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A device together with its platform and description.
#[derive(Debug, Clone)]
pub(crate) struct Selected {
    pub platform: Platform,
    pub device: Device,
    pub info: DeviceInfo,
}

fn kind_name(t: DeviceType) -> &'static str {
    if t.contains(DeviceType::GPU) {
        "GPU"
    } else if t.contains(DeviceType::CPU) {
        "CPU"
    } else if t.contains(DeviceType::ACCELERATOR) {
        "ACCELERATOR"
    } else {
        "OTHER"
    }
}

fn describe(index: usize, platform: &Platform, device: &Device) -> DeviceInfo {
    let kind = match device.info(ClDeviceInfo::Type) {
        Ok(DeviceInfoResult::Type(t)) => kind_name(t),
        _ => "OTHER",
    };
    let u32_info = |what| match device.info(what) {
        Ok(DeviceInfoResult::MaxComputeUnits(v)) => v,
        _ => 0,
    };
    let u64_info = |what| match device.info(what) {
        Ok(DeviceInfoResult::LocalMemSize(v)) | Ok(DeviceInfoResult::GlobalMemSize(v)) => v,
        _ => 0,
    };
    let extensions = match device.info(ClDeviceInfo::Extensions) {
        Ok(DeviceInfoResult::Extensions(e)) => e,
        _ => String::new(),
    };
    DeviceInfo {
        index,
        platform: platform.name().unwrap_or_default(),
        name: device.name().unwrap_or_default(),
        kind: kind.to_string(),
        version: match device.info(ClDeviceInfo::Version) {
            Ok(DeviceInfoResult::Version(v)) => v.to_string(),
            _ => String::new(),
        },
        compute_units: u32_info(ClDeviceInfo::MaxComputeUnits),
        max_work_group_size: device.max_wg_size().unwrap_or(1),
        local_mem_bytes: u64_info(ClDeviceInfo::LocalMemSize),
        global_mem_bytes: u64_info(ClDeviceInfo::GlobalMemSize),
        fp64: extensions.split_whitespace().any(|e| e == "cl_khr_fp64"),
    }
}

/// All (platform, device) pairs in platform order, then device order.
fn enumerate() -> Result<Vec<Selected>, OpenClError> {
    // The ICD loader's first platform query is not thread-safe with PoCL (SIGSEGV when the
    // tests open devices from several threads): enumerate under a process-wide lock.
    let _guard = SETUP_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // One direct query first: without any ICD, `ocl::core::get_platform_ids` would retry for
    // 10 s before giving up (see `enqueue::platform_count`).
    if enqueue::platform_count() == 0 {
        return Err(OpenClError::NoPlatform);
    }
    // `Platform::list` panics without an ICD; the core call returns an error instead.
    let platforms = match ocl::core::get_platform_ids() {
        Ok(p) if !p.is_empty() => Platform::list_from_core(p),
        _ => return Err(OpenClError::NoPlatform),
    };
    let mut out = Vec::new();
    for platform in platforms {
        // A platform whose device query fails (a broken ICD) is skipped, not fatal: the others
        // may still work.
        let Ok(devices) = Device::list_all(platform) else {
            continue;
        };
        for device in devices {
            let info = describe(out.len(), &platform, &device);
            out.push(Selected {
                platform,
                device,
                info,
            });
        }
    }
    Ok(out)
}

/// Lists all OpenCL devices of all platforms.
pub fn list_devices() -> Result<Vec<DeviceInfo>, OpenClError> {
    Ok(enumerate()?.into_iter().map(|s| s.info).collect())
}

/// Picks a device: `None`, `""` or `"auto"`: the first GPU of any platform, else the first
/// device; a number: that index of [`list_devices`]; otherwise the first device whose name or
/// platform name contains `spec` (case-insensitive).
pub(crate) fn select(spec: Option<&str>) -> Result<Selected, OpenClError> {
    let all = enumerate()?;
    let spec = spec.map(str::trim).unwrap_or("auto");
    let no_device = || OpenClError::NoDevice {
        spec: spec.to_string(),
    };
    if all.is_empty() {
        return Err(if spec == "auto" {
            OpenClError::NoPlatform
        } else {
            no_device()
        });
    }
    let chosen = if spec.is_empty() || spec.eq_ignore_ascii_case("auto") {
        // PoCL is listed before NVIDIA on the GPU machine: prefer a GPU wherever it is.
        all.iter()
            .find(|s| s.info.kind == "GPU")
            .or_else(|| all.first())
    } else if let Ok(index) = spec.parse::<usize>() {
        all.get(index)
    } else {
        let needle = spec.to_lowercase();
        all.iter().find(|s| {
            s.info.name.to_lowercase().contains(&needle)
                || s.info.platform.to_lowercase().contains(&needle)
        })
    };
    chosen.cloned().ok_or_else(no_device)
}

/// Opens the OpenCL backend on the device chosen by `spec` (`None` or "auto": prefer a GPU,
/// else any device; a number: the index in [`list_devices`]; otherwise a name substring).
pub fn open(spec: Option<&str>) -> Result<Box<dyn Backend>, OpenClError> {
    Ok(Box::new(OpenClBackend::new(spec)?))
}
