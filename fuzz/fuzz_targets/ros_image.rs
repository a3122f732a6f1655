#![no_main]
//! cargo-fuzz target: see `surfcl_fuzz::ros::ros_image`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| surfcl_fuzz::ros::ros_image(data));
