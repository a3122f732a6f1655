//! # surfcl-gpu
//!
//! The runtime of surfcl: the OpenCL pipeline and the CPU backend behind one `Backend` seam
//! (the `surfcl` command-line tool is the `surfcl-cli` crate).
//!
//! ## Modules
//! - [`backend`]: the [`backend::Backend`] seam, the detection parameters (the shared
//!   configuration of `surfcl_core::config`) and results; [`open_backend`] opens one, and
//!   [`explain_auto`] says which one `auto` takes: an OpenCL GPU or accelerator, else the CPU
//!   backend.
//! - [`cpu`]: the CPU reference backend over `surfcl-core`: every stage on a pool of threads,
//!   the Hessian fill, description, Haar maps and matching with AVX2 where the CPU has it
//!   (chosen once per backend).
//! - [`opencl`]: the OpenCL backend (kernels in `kernels/*.cl`) and device listing.
//! - [`error`]: the crate's error type.
//! - [`OwnedGray`]: an owned 8-bit grey image (what the tool loads, the backends borrow).
//!
//! ## Cargo features
//! - `opencl` (default): the OpenCL backend. Without it the crate is the CPU backend alone and
//!   links no libOpenCL (boards without an OpenCL driver or ICD loader); [`opencl`] then only
//!   holds its error type and answers [`opencl::OpenClError::NotBuilt`] to every request.
//! - `fault-injection` (off): the `fault` module and the OpenCL backend's injection points,
//!   armed by `SURFCL_FAULT` / `SURFCL_CL_FAULT`, for the robustness tests and diagnostic
//!   builds. A build without it ignores those variables.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod backend;
pub mod cpu;
pub mod error;
#[cfg(feature = "fault-injection")]
pub mod fault;
mod gray;
mod open;
// The unit tests load the sample images with a small test-only loader (the tool's `io` is in
// `surfcl-cli`). It is shared with the integration tests and benchmarks, which name this crate
// `surfcl_gpu`: the alias lets the same file name it from inside.
#[cfg(test)]
extern crate self as surfcl_gpu;
#[cfg(test)]
#[path = "../tests/support/gray.rs"]
mod io;
pub mod opencl;

pub use backend::{
    Backend, BackendChoice, DescriptorKind, DetectParams, DetectorKind, Features, StageTiming,
};
pub use error::Error;
pub use gray::OwnedGray;
pub use open::{AutoChoice, explain_auto, open_backend};
