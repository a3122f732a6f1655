//! The OpenCL entry points of a build without the `opencl` feature: every request for OpenCL
//! answers [`OpenClError::NotBuilt`], so that `--backend opencl` says why it cannot run instead
//! of failing to link or to load libOpenCL.

use super::device_info::DeviceInfo;
use super::error::OpenClError;
use crate::backend::Backend;

/// No devices can be listed: this build has no OpenCL backend.
pub fn list_devices() -> Result<Vec<DeviceInfo>, OpenClError> {
    Err(OpenClError::NotBuilt)
}

/// No OpenCL backend can be opened: this build has none.
pub fn open(spec: Option<&str>) -> Result<Box<dyn Backend>, OpenClError> {
    let _ = spec;
    Err(OpenClError::NotBuilt)
}
