//! The OpenCL backend (placeholder: being written). Owned by the OpenCL work.

use crate::backend::Backend;

/// Errors of the OpenCL backend.
#[derive(Debug, thiserror::Error)]
pub enum OpenClError {
    /// No OpenCL platform is installed.
    #[error(
        "no OpenCL platform found: install an OpenCL runtime (Debian: pocl-opencl-icd ocl-icd-opencl-dev)"
    )]
    NoPlatform,
}

/// One OpenCL device as listed by `surfcl devices`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    /// Global index used by `--device N`.
    pub index: usize,
    /// Platform name.
    pub platform: String,
    /// Device name.
    pub name: String,
    /// "GPU", "CPU", "ACCELERATOR" or "OTHER".
    pub kind: String,
}

/// Lists all OpenCL devices of all platforms.
pub fn list_devices() -> Result<Vec<DeviceInfo>, OpenClError> {
    Err(OpenClError::NoPlatform)
}

/// Opens the OpenCL backend on the device chosen by `spec` (`None` or "auto": prefer a GPU,
/// else any device; a number: the index in [`list_devices`]; otherwise a name substring).
pub fn open(_spec: Option<&str>) -> Result<Box<dyn Backend>, OpenClError> {
    Err(OpenClError::NoPlatform)
}
