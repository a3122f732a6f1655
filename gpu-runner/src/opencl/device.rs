//! Finding OpenCL devices: every (platform, device) pair in a stable order, their description
//! for `surfcl devices`, and the choice of one by index or name.

use ocl::enums::{DeviceInfo as ClDeviceInfo, DeviceInfoResult};
use ocl::flags::DeviceType;
use ocl::{Device, Platform};

use super::device_info::{DeviceInfo, preferred_device};
use super::error::OpenClError;
use super::platform_count::platform_count;

/// Serialises OpenCL setup calls (enumeration, context creation, program builds).
pub(crate) static SETUP_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A device together with its platform and description.
#[derive(Debug, Clone)]
pub(crate) struct Selected {
    pub platform: Platform,
    pub device: Device,
    pub info: DeviceInfo,
}

fn kind_name(t: DeviceType) -> &'static str {
    if t.contains(DeviceType::GPU) {
        "GPU"
    } else if t.contains(DeviceType::CPU) {
        "CPU"
    } else if t.contains(DeviceType::ACCELERATOR) {
        "ACCELERATOR"
    } else {
        "OTHER"
    }
}

fn describe(index: usize, platform: &Platform, device: &Device) -> DeviceInfo {
    let kind = match device.info(ClDeviceInfo::Type) {
        Ok(DeviceInfoResult::Type(t)) => kind_name(t),
        _ => "OTHER",
    };
    let u32_info = |what| match device.info(what) {
        Ok(DeviceInfoResult::MaxComputeUnits(v)) => v,
        _ => 0,
    };
    let u64_info = |what| match device.info(what) {
        Ok(DeviceInfoResult::LocalMemSize(v)) | Ok(DeviceInfoResult::GlobalMemSize(v)) => v,
        _ => 0,
    };
    let extensions = match device.info(ClDeviceInfo::Extensions) {
        Ok(DeviceInfoResult::Extensions(e)) => e,
        _ => String::new(),
    };
    DeviceInfo {
        index,
        platform: platform.name().unwrap_or_default(),
        name: device.name().unwrap_or_default(),
        kind: kind.to_string(),
        version: match device.info(ClDeviceInfo::Version) {
            Ok(DeviceInfoResult::Version(v)) => v.to_string(),
            _ => String::new(),
        },
        compute_units: u32_info(ClDeviceInfo::MaxComputeUnits),
        max_work_group_size: device.max_wg_size().unwrap_or(1),
        local_mem_bytes: u64_info(ClDeviceInfo::LocalMemSize),
        global_mem_bytes: u64_info(ClDeviceInfo::GlobalMemSize),
        fp64: extensions.split_whitespace().any(|e| e == "cl_khr_fp64"),
    }
}

/// All (platform, device) pairs in platform order, then device order.
fn enumerate() -> Result<Vec<Selected>, OpenClError> {
    // The ICD loader's first platform query is not thread-safe with PoCL (SIGSEGV when the
    // tests open devices from several threads): enumerate under a process-wide lock.
    let _guard = SETUP_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // One direct query first: without any ICD, `ocl::core::get_platform_ids` would retry for
    // 10 s before giving up (see `platform_count`).
    if platform_count() == 0 {
        return Err(OpenClError::NoPlatform);
    }
    // `Platform::list` panics without an ICD; the core call returns an error instead.
    let platforms = match ocl::core::get_platform_ids() {
        Ok(p) if !p.is_empty() => Platform::list_from_core(p),
        _ => return Err(OpenClError::NoPlatform),
    };
    let mut out = Vec::new();
    for platform in platforms {
        // A platform whose device query fails (a broken ICD) is skipped, not fatal: the others
        // may still work.
        let Ok(devices) = Device::list_all(platform) else {
            continue;
        };
        for device in devices {
            let info = describe(out.len(), &platform, &device);
            out.push(Selected {
                platform,
                device,
                info,
            });
        }
    }
    Ok(out)
}

/// Lists all OpenCL devices of all platforms.
pub fn list_devices() -> Result<Vec<DeviceInfo>, OpenClError> {
    Ok(enumerate()?.into_iter().map(|s| s.info).collect())
}

/// Picks a device: `None`, `""` or `"auto"`: the first GPU of any platform, else the first
/// accelerator, else the first device (OpenCL was asked for: a CPU device too); a number: that
/// index of [`list_devices`]; otherwise the first device whose name or platform name contains
/// `spec` (case-insensitive).
pub(crate) fn select(spec: Option<&str>) -> Result<Selected, OpenClError> {
    let all = enumerate()?;
    let spec = spec.map(str::trim).unwrap_or("auto");
    let no_device = || OpenClError::NoDevice {
        spec: spec.to_string(),
    };
    if all.is_empty() {
        return Err(if spec == "auto" {
            OpenClError::NoPlatform
        } else {
            no_device()
        });
    }
    let chosen = if spec.is_empty() || spec.eq_ignore_ascii_case("auto") {
        // PoCL is listed before NVIDIA on the GPU machine: prefer a GPU wherever it is. Without
        // one, OpenCL was asked for explicitly: any device, PoCL's CPU device included.
        let infos: Vec<DeviceInfo> = all.iter().map(|s| s.info.clone()).collect();
        preferred_device(&infos)
            .and_then(|d| all.get(d.index))
            .or_else(|| all.first())
    } else if let Ok(index) = spec.parse::<usize>() {
        all.get(index)
    } else {
        let needle = spec.to_lowercase();
        all.iter().find(|s| {
            s.info.name.to_lowercase().contains(&needle)
                || s.info.platform.to_lowercase().contains(&needle)
        })
    };
    chosen.cloned().ok_or_else(no_device)
}
