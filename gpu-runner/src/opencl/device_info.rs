//! The description of one OpenCL device (what `surfcl devices` lists) and which kinds of device
//! are worth more than the native CPU backend: plain data that builds without the `opencl`
//! feature too.

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
    /// OpenCL version string of the device.
    pub version: String,
    /// Compute units.
    pub compute_units: u32,
    /// Largest work-group size.
    pub max_work_group_size: usize,
    /// Local memory per work-group, bytes.
    pub local_mem_bytes: u64,
    /// Global memory, bytes.
    pub global_mem_bytes: u64,
    /// Whether the device has `cl_khr_fp64` (used for the sub-pixel fit).
    pub fp64: bool,
}

impl DeviceInfo {
    /// Whether the device is a GPU or an accelerator: hardware that runs the kernels faster
    /// than the native CPU backend runs the same work. An OpenCL CPU device (PoCL) is not: it
    /// compiles the same kernels for the same cores the CPU backend already uses with its own
    /// threads and SIMD, and is slower than it (docs/BENCHMARKS.md).
    pub fn is_accelerator(&self) -> bool {
        self.kind == "GPU" || self.kind == "ACCELERATOR"
    }
}

/// The device `auto` takes among `devices`: the first GPU, else the first accelerator; `None`
/// when there is neither (then `auto` runs the native CPU backend).
pub fn preferred_device(devices: &[DeviceInfo]) -> Option<&DeviceInfo> {
    devices
        .iter()
        .find(|d| d.kind == "GPU")
        .or_else(|| devices.iter().find(|d| d.kind == "ACCELERATOR"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(index: usize, platform: &str, kind: &str) -> DeviceInfo {
        DeviceInfo {
            index,
            platform: platform.to_string(),
            name: format!("{platform} {kind}"),
            kind: kind.to_string(),
            version: "OpenCL 1.2".to_string(),
            compute_units: 1,
            max_work_group_size: 256,
            local_mem_bytes: 16384,
            global_mem_bytes: 1 << 30,
            fp64: false,
        }
    }

    #[test]
    fn auto_prefers_a_gpu_then_an_accelerator_and_never_a_cpu_device() {
        let pocl = device(0, "Portable Computing Language", "CPU");
        let fpga = device(1, "Vendor", "ACCELERATOR");
        let gpu = device(2, "NVIDIA CUDA", "GPU");
        assert_eq!(preferred_device(&[]).map(|d| d.index), None);
        assert_eq!(
            preferred_device(std::slice::from_ref(&pocl)).map(|d| d.index),
            None
        );
        assert_eq!(
            preferred_device(&[pocl.clone(), fpga.clone()]).map(|d| d.index),
            Some(1)
        );
        assert_eq!(
            preferred_device(&[pocl.clone(), fpga.clone(), gpu.clone()]).map(|d| d.index),
            Some(2)
        );
        assert!(gpu.is_accelerator() && fpga.is_accelerator() && !pocl.is_accelerator());
    }
}
