//! # surfcl-gpu
//!
//! The OpenCL pipeline of surfcl and the `surfcl` command-line tool's library side.
#![deny(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
