//! The OpenCL backend: device selection, the detectors ([`Detector`] over the [`SurfPipeline`]
//! or the [`HarrisPipeline`], chosen by [`DetectorConfig`]), the fused 2-NN [`GpuMatcher`], the
//! frame-to-frame [`StreamPipeline`] and [`OpenClBackend`], which puts the detectors and the
//! matcher behind [`Backend`](crate::backend::Backend). `docs/ARCHITECTURE.md` has the map of
//! the files.
//!
//! Kernels live in `kernels/*.cl` (OpenCL C 1.2, `FP_CONTRACT OFF`) and reproduce the
//! definitions of `docs/ARCHITECTURE.md`: integer results byte for byte, `f32` responses bit for
//! bit, positions/orientations/descriptors within the documented tolerances.
//!
//! Without the `opencl` cargo feature only the error type, the device description and the
//! profiling switch remain, and [`list_devices`] and [`open`] answer
//! [`OpenClError::NotBuilt`]: such a build links no libOpenCL.
//!
//! This file only names the parts; they import each other, never this facade. From the bottom:
//! `error`, `device_info`, `profiling` and `record` (the result layout), `platform_count` and
//! `device` (enumeration and choice), `inject` (fault injection points, armed only with the
//! `fault-injection` feature), `gpu` (one context and queue), `enqueue` (all kernel `unsafe`), `frame` (the per-frame base of every
//! detector), `integral`, `descriptor` and `strongest` (kernels several detectors share), the
//! detectors `surf` and `harris`, the registry `detector`, then `matcher`, `stream` and
//! `backend`.
//!
//! ```no_run
//! let devices = surfcl_gpu::opencl::list_devices()?;
//! for d in &devices {
//!     println!("{}: {} / {} ({})", d.index, d.platform, d.name, d.kind);
//! }
//! # Ok::<(), surfcl_gpu::opencl::OpenClError>(())
//! ```

#[cfg(feature = "opencl")]
mod backend;
#[cfg(feature = "opencl")]
mod descriptor;
#[cfg(feature = "opencl")]
mod detector;
#[cfg(feature = "opencl")]
mod device;
mod device_info;
#[cfg(feature = "opencl")]
mod enqueue;
pub(crate) mod error;
#[cfg(feature = "opencl")]
mod frame;
#[cfg(feature = "opencl")]
mod gpu;
#[cfg(feature = "opencl")]
mod harris;
#[cfg(all(feature = "opencl", feature = "fault-injection"))]
pub mod inject;
#[cfg(all(feature = "opencl", not(feature = "fault-injection")))]
mod inject;
#[cfg(feature = "opencl")]
mod integral;
#[cfg(feature = "opencl")]
mod matcher;
#[cfg(not(feature = "opencl"))]
mod not_built;
#[cfg(feature = "opencl")]
mod platform_count;
mod profiling;
#[cfg(feature = "opencl")]
mod record;
#[cfg(feature = "opencl")]
mod stream;
#[cfg(feature = "opencl")]
mod strongest;
#[cfg(feature = "opencl")]
mod surf;
#[cfg(all(test, feature = "opencl"))]
mod test_images;

#[cfg(feature = "opencl")]
pub use backend::{OpenClBackend, open};
#[cfg(feature = "opencl")]
pub use detector::{Detector, DetectorConfig};
#[cfg(feature = "opencl")]
pub use device::list_devices;
pub use device_info::{DeviceInfo, preferred_device};
pub use error::OpenClError;
#[cfg(feature = "opencl")]
pub use frame::{DetectOutput, PinnedFrame};
#[cfg(feature = "opencl")]
pub use harris::{HarrisPipeline, HarrisPipelineConfig};
#[cfg(feature = "opencl")]
pub use matcher::{GpuMatcher, MatchTimings, NearestNeighbours};
#[cfg(not(feature = "opencl"))]
pub use not_built::{list_devices, open};
pub use profiling::{profiling, set_profiling};
#[cfg(feature = "opencl")]
pub use stream::{StreamFrame, StreamInput, StreamPipeline};
#[cfg(feature = "opencl")]
pub use surf::{SurfPipeline, SurfPipelineConfig};
