//! Fuzzing entry points of surfcl. `entry` only depends on surfcl-core and surfcl-gpu so that
//! `tests/tests/robustness_regressions.rs` can include the same file (`#[path]`) and replay saved
//! inputs from a normal `cargo test`.
#![forbid(unsafe_code)]

pub mod entry;
#[cfg(feature = "ros")]
pub mod ros;
