//! Detects the interest points of a synthetic pattern on the backend named by the first argument
//! (`auto`, `cpu` or `opencl`; `auto` when absent) and prints `backend=NAME keypoints=N`.
//!
//! The smallest program over the runtime: `tests/without_libopencl.rs` runs it where
//! libOpenCL.so.1 cannot be loaded, to show that a build without the `opencl` feature starts and
//! detects there while the default build cannot start.

use std::process::ExitCode;

use surfcl_core::GrayImage;
use surfcl_gpu::{BackendChoice, DetectParams, open_backend};

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<String, surfcl_gpu::Error> {
    let choice = match std::env::args().nth(1).as_deref() {
        None | Some("auto") => BackendChoice::Auto,
        Some("cpu") => BackendChoice::Cpu,
        Some("opencl") => BackendChoice::OpenCl,
        Some(other) => {
            return Err(surfcl_gpu::Error::InvalidArgument(format!(
                "unknown backend {other:?} (auto, cpu, opencl)"
            )));
        }
    };
    // A dark frame with two bright squares: blobs at two scales for the detector.
    let (w, h) = (160usize, 120usize);
    let pixels: Vec<u8> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let big = (30..70).contains(&x) && (30..70).contains(&y);
            let small = (100..116).contains(&x) && (50..66).contains(&y);
            if big || small { 220 } else { 30 }
        })
        .collect();
    let image = GrayImage::new(&pixels, w, h)?;
    let mut backend = open_backend(choice, None)?;
    let features = backend.detect(&image, &DetectParams::default())?;
    Ok(format!(
        "backend={} keypoints={}",
        backend.name(),
        features.keypoints.len()
    ))
}
