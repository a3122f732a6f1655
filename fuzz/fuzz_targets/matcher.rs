#![no_main]
//! cargo-fuzz target: see `surfcl_fuzz::entry::matcher`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| surfcl_fuzz::entry::matcher(data));
