#![no_main]
//! cargo-fuzz target: see `surfcl_fuzz::entry::surf_detect`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| surfcl_fuzz::entry::surf_detect(data));
