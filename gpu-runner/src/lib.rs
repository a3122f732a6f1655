//! # surfcl-gpu
//!
//! The OpenCL pipeline of surfcl and the library side of the `surfcl` command-line tool.
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
//! - [`io`]: image and homography file loading with size checks before decoding.
//! - [`draw`]: annotated PNG output (keypoints, matches).
//! - [`report`]: the JSON reports of `detect`, `match` and `eval`.
//! - [`cli`]: the `surfcl` command line (clap), `surfcl bench` included.
//! - [`error`]: the crate's error type.
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
pub mod cli;
pub mod cpu;
pub mod draw;
pub mod error;
#[cfg(feature = "fault-injection")]
pub mod fault;
pub mod io;
mod open;
pub mod opencl;
pub mod report;

pub use backend::{
    Backend, BackendChoice, DescriptorKind, DetectParams, DetectorKind, Features, StageTiming,
};
pub use error::Error;
pub use open::{AutoChoice, explain_auto, is_unavailable, open_backend};
