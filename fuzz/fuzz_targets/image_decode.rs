#![no_main]
//! cargo-fuzz target: see `surfcl_fuzz::entry::image_decode`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| surfcl_fuzz::entry::image_decode(data));
