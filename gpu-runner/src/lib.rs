//! # surfcl-gpu
//!
//! The runtime of surfcl: the OpenCL pipeline and the CPU backend behind one `Backend` seam
//! (the `surfcl` command-line tool is the `surfcl-cli` crate).
//!
//! ## Modules
//! - [`backend`]: the [`backend::Backend`] seam, the detection parameters (the shared
//!   configuration of `surfcl_core::config`) and results; [`open_backend`] picks OpenCL with a
//!   CPU fallback.
//! - [`cpu`]: the CPU reference backend over `surfcl-core` (with AVX2, chosen at run time, for
//!   its description loops: `wide`).
//! - [`opencl`]: the OpenCL backend (kernels in `kernels/*.cl`) and device listing.
//! - [`error`]: the crate's error type.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod backend;
pub mod cpu;
pub mod error;
pub mod fault;
mod open;
// The unit tests load the sample images with a small test-only loader (the tool's `io` is in
// `surfcl-cli`).
#[cfg(test)]
#[path = "../tests/support/gray.rs"]
mod io;
pub mod opencl;
mod wide;

pub use backend::{
    Backend, BackendChoice, DescriptorKind, DetectParams, DetectorKind, Features, StageTiming,
};
pub use error::Error;
pub use open::open_backend;
