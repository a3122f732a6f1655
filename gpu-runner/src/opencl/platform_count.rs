//! How many OpenCL platforms the ICD loader reports, asked with one direct `clGetPlatformIDs`
//! call: the backend's only FFI call of its own (its other `unsafe` is the enqueues of
//! `enqueue.rs`).
#![allow(unsafe_code)]

/// The number of OpenCL platforms the ICD loader reports, from one `clGetPlatformIDs` call.
///
/// `ocl-core`'s own query treats "no platform" (`CL_PLATFORM_NOT_FOUND_KHR`, what the loader says
/// when no ICD is installed) as a start-up race and retries five times with 2 s sleeps: a 10 s
/// wait on every board without an OpenCL driver. Asking once here lets the caller fall back at
/// once. Any error code counts as no platform.
pub(crate) fn platform_count() -> u32 {
    let mut count: ocl::core::ffi::cl_uint = 0;
    // SAFETY: with `num_entries = 0` and a null `platforms` pointer, the call only writes the
    // count through the valid `&mut count` pointer (OpenCL 1.2, section 4.1).
    let status = unsafe { ocl::core::ffi::clGetPlatformIDs(0, core::ptr::null_mut(), &mut count) };
    if status == ocl::core::ffi::CL_SUCCESS {
        count
    } else {
        0
    }
}
