#![no_main]
//! cargo-fuzz target: see `surfcl_fuzz::entry::homography_parse`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| surfcl_fuzz::entry::homography_parse(data));
