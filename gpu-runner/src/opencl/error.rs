//! The error type of the OpenCL backend: what the runtime, the device or a kernel build said,
//! typed by the operation that failed. [`crate::error::Error`] wraps it.

/// Errors of the OpenCL backend.
#[derive(Debug, thiserror::Error)]
pub enum OpenClError {
    /// This build of surfcl has no OpenCL backend (built without the `opencl` cargo feature).
    #[error("this build has no OpenCL backend (built without the `opencl` cargo feature)")]
    NotBuilt,
    /// No OpenCL platform is installed.
    #[error(
        "no OpenCL platform found: install an OpenCL runtime (Debian: pocl-opencl-icd ocl-icd-opencl-dev)"
    )]
    NoPlatform,
    /// No device matches the requested specification.
    #[error("no OpenCL device matches {spec:?} (see `surfcl devices`)")]
    NoDevice {
        /// The specification given (`auto`, an index or a name substring).
        spec: String,
    },
    /// A kernel source did not build; carries the compiler's log.
    #[error("OpenCL kernels {file} failed to build on {device}:\n{log}")]
    Build {
        /// Kernel file.
        file: &'static str,
        /// Device name.
        device: String,
        /// The build log (or the runtime's error text, which includes it).
        log: String,
    },
    /// The frame is larger than the pipeline was made for.
    #[error("image {width}x{height} exceeds the pipeline's maximum {max_width}x{max_height}")]
    ImageTooLarge {
        /// Frame width.
        width: usize,
        /// Frame height.
        height: usize,
        /// Pipeline maximum width.
        max_width: usize,
        /// Pipeline maximum height.
        max_height: usize,
    },
    /// A frame of a stream could not be had (unreadable file, decoding error).
    #[error("bad frame: {0}")]
    BadFrame(String),
    /// A device buffer could not be allocated.
    #[error("cannot allocate {bytes} bytes of device memory for {what}: {message}")]
    Allocation {
        /// The buffer.
        what: &'static str,
        /// Its size.
        bytes: u64,
        /// The runtime's error.
        message: String,
    },
    /// A parameter the device cannot handle (too little local memory, sizes out of range).
    #[error("unsupported on this device: {0}")]
    Unsupported(String),
    /// More candidates than the candidate buffer holds. The buffer is sized so that this cannot
    /// happen (see `SurfPipeline`); seeing it means a bug, so it is an error, not a silent drop.
    #[error("candidate buffer overflow: {found} candidates for {capacity} slots")]
    CandidateOverflow {
        /// Candidates found.
        found: usize,
        /// Slots.
        capacity: usize,
    },
    /// Any other OpenCL runtime error, with what was being done.
    #[error("{context}: {message}")]
    Runtime {
        /// What was being done.
        context: &'static str,
        /// The runtime's error.
        message: String,
    },
}

#[cfg(feature = "opencl")]
impl OpenClError {
    /// Wraps an `ocl` error with a short description of the operation.
    pub(crate) fn runtime(context: &'static str) -> impl FnOnce(ocl::Error) -> Self {
        move |e| OpenClError::Runtime {
            context,
            message: e.to_string(),
        }
    }
}
