//! `--backend auto` takes the fastest backend of the machine: an OpenCL GPU or accelerator when
//! there is one, else the native CPU backend, also where PoCL's CPU device is installed (the
//! development machine and CI); `--backend opencl` still runs PoCL there, and `surfcl devices`
//! says which one `auto` takes.
//!
//! Needs an OpenCL device (CI installs PoCL): without one it fails instead of passing vacuously
//! (`no_opencl.rs` covers machines without OpenCL).
#![cfg(feature = "opencl")]

mod common;

use std::path::PathBuf;

use surfcl_gpu::opencl::{DeviceInfo, list_devices, preferred_device};

use common::surfcl;

fn boat() -> PathBuf {
    common::boat().join("img1.pgm")
}

fn devices() -> Vec<DeviceInfo> {
    match list_devices() {
        Ok(d) if !d.is_empty() => d,
        other => panic!(
            "this test needs an OpenCL device (CI: apt-get install pocl-opencl-icd ocl-icd-opencl-dev); got {other:?}"
        ),
    }
}

/// The backend and device a `surfcl detect --json -` report names.
fn detect_backend(extra: &[&str]) -> (String, String) {
    let image = boat();
    let mut args = vec!["detect", image.to_str().unwrap(), "--json", "-"];
    args.extend_from_slice(extra);
    let out = surfcl(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["backend"].as_str().unwrap().to_string(),
        v["device"].as_str().unwrap().to_string(),
    )
}

#[test]
fn auto_takes_a_gpu_or_else_the_cpu_backend_and_opencl_still_runs_any_device() {
    let devices = devices();
    let (backend, device) = detect_backend(&[]);
    match preferred_device(&devices) {
        Some(gpu) => {
            assert_eq!(backend, "opencl", "{device}");
            assert!(device.contains(&gpu.name), "{device} is not {}", gpu.name);
        }
        None => assert_eq!(backend, "cpu", "{device}; devices {devices:?}"),
    }
    // Asked for, OpenCL runs: on PoCL's CPU device where that is all there is.
    let (backend, device) = detect_backend(&["--backend", "opencl"]);
    assert_eq!(backend, "opencl", "{device}");
    let expected = preferred_device(&devices).unwrap_or(&devices[0]);
    assert!(device.contains(&expected.name), "{device}");
    // A device named by index is OpenCL whatever its kind, also with `auto`.
    let (backend, _) = detect_backend(&["--device", "0"]);
    assert_eq!(backend, "opencl");
}

#[test]
fn devices_says_which_backend_auto_takes_and_why() {
    let devices = devices();
    let out = surfcl(&["devices"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("--backend auto takes "))
        .unwrap_or_else(|| panic!("no auto line in:\n{text}"));
    match preferred_device(&devices) {
        Some(d) => assert!(
            line.contains(&format!("OpenCL device {}", d.index)),
            "{line}"
        ),
        None => {
            assert!(line.contains("the CPU backend"), "{line}");
            assert!(line.contains("--backend opencl"), "{line}");
        }
    }
}
