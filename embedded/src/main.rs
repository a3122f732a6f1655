//! surfcl on a microcontroller: reads a binary PGM from the host through semihosting, runs SURF
//! detection and SURF-64 description with `surfcl-core` in caller-owned `static` buffers, and
//! prints one line per keypoint (`x y scale`, 3 decimals, strongest first), then
//! `keypoints N`, `stack_high_water BYTES` and `instructions N` (detection and description;
//! a deterministic count under `qemu -icount shift=0`, see `make firmware-count`).
//!
//! Run under qemu with `make firmware-run TARGET=<target> IMAGE=<file.pgm>`; the image path is
//! the first semihosting argument. Parameters are those of `surfcl detect` (threshold 0.0004,
//! 4 octaves, first sample step 2, oriented descriptors) except where noted in README.md.
//!
//! With the `fixed` feature (`VARIANT=fixed`) detection, orientation and the (Q7) descriptors
//! run in fixed point (`surfcl_core::fixed`): no floating-point operation is linked, which is
//! what parts without an FPU need. The output format is the same.
//!
//! The stack is painted with a pattern when `main` starts and scanned at the end: the lowest
//! overwritten word gives the high-water mark of everything `main` called.
#![no_std]
#![no_main]

mod buffers;
mod count;
mod decimal;
mod pgm;
mod stack;

use semihosting::io::Write as _;
use surfcl_core::keypoint::{KeypointBuffer, KeypointSink};
use surfcl_core::surf::{self, SurfConfig};
use surfcl_core::{GrayImage, IntegralImage};

use buffers::Buffers;

#[cfg(target_arch = "arm")]
use cortex_m_rt::entry;
#[cfg(target_arch = "riscv32")]
use riscv_rt::entry;

/// Longest image path accepted on the semihosting command line.
const PATH_BYTES: usize = 256;

#[entry]
fn main() -> ! {
    stack::paint();
    let code = match run() {
        Ok(()) => 0,
        Err(message) => {
            print(b"error: ");
            print(message.as_bytes());
            print(b"\n");
            1
        }
    };
    semihosting::process::exit(code)
}

/// Reads, detects, describes and prints; the error is one line for the user.
fn run() -> Result<(), &'static str> {
    let buffers = Buffers::take().ok_or("buffers already taken")?;
    let mut path = [0u8; PATH_BYTES];
    let path = image_path(&mut path)?;
    let (width, height) = pgm::read(path, &mut buffers.file)?;
    let pixels = &buffers.file[pgm::pixels_range(&buffers.file, width, height)?];

    let image = GrayImage::new(pixels, width, height).map_err(|_| "invalid image size")?;
    let table_len = (width + 1) * (height + 1);
    let integral = IntegralImage::compute(&image, &mut buffers.integral[..table_len])
        .map_err(|_| "integral image failed")?;

    let config = SurfConfig::default();
    let mut keypoints = KeypointBuffer::new(&mut buffers.keypoints[..]);
    count::start();
    let dropped = detect_and_describe(
        &integral,
        &config,
        &mut buffers.scratch,
        &mut keypoints,
        &mut buffers.descriptors,
    )?;
    let instructions = count::stop();
    let count = keypoints.len();

    for kp in keypoints.points() {
        let mut line = decimal::Line::new();
        line.fixed3(kp.x);
        line.byte(b' ');
        line.fixed3(kp.y);
        line.byte(b' ');
        line.fixed3(kp.scale);
        line.byte(b'\n');
        print(line.as_bytes());
    }
    if dropped > 0 {
        print_count(b"dropped ", dropped);
    }
    print_count(b"keypoints ", count);
    print_count(b"stack_high_water ", stack::high_water());
    // A count only under `-icount shift=0` (make firmware-count); host time otherwise.
    print_count(b"instructions ", instructions as usize);
    Ok(())
}

/// The `f32` path: detection on packed 8-bit response maps (the same keypoints as the `f32`
/// maps: every candidate is recomputed exactly, with a quarter of the memory), `f32` orientation
/// and descriptors. Returns the number of keypoints dropped beyond the capacity.
#[cfg(not(feature = "fixed"))]
fn detect_and_describe(
    integral: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    keypoints: &mut KeypointBuffer,
    descriptors: &mut [buffers::Descriptor],
) -> Result<usize, &'static str> {
    let config = SurfConfig {
        precision: surf::Precision::Packed8,
        ..*config
    };
    let (w, h) = (integral.width(), integral.height());
    let len = surf::scratch_len(&config, w, h).map_err(|_| "bad size")?;
    let scratch = scratch
        .get_mut(..len)
        .ok_or("image too large for the scratch")?;
    let stats =
        surf::detect(integral, &config, scratch, keypoints).map_err(|_| "detection failed")?;
    let count = keypoints.len();
    surfcl_core::describe::describe_all(
        integral,
        keypoints.points_mut(),
        config.upright,
        &mut descriptors[..count],
    )
    .map_err(|_| "description failed")?;
    Ok(stats.dropped)
}

/// The fixed-point path: Q29 responses and an integer Newton step, fixed-point orientation and
/// Q7 descriptors. Returns the number of keypoints dropped beyond the capacity.
#[cfg(feature = "fixed")]
fn detect_and_describe(
    integral: &IntegralImage,
    config: &SurfConfig,
    scratch: &mut [u32],
    keypoints: &mut KeypointBuffer,
    descriptors: &mut [buffers::Descriptor],
) -> Result<usize, &'static str> {
    let (w, h) = (integral.width(), integral.height());
    let len = surf::scratch_len_with(config, w, h).map_err(|_| "bad size")?;
    let scratch = scratch
        .get_mut(..len)
        .ok_or("image too large for the scratch")?;
    let stats = surf::detect_with::<surf::FixedPoint, _>(integral, config, scratch, keypoints)
        .map_err(|_| "detection failed")?;
    let count = keypoints.len();
    surfcl_core::fixed::describe_all_q7(
        integral,
        keypoints.points_mut(),
        config.upright,
        &mut descriptors[..count],
    )
    .map_err(|_| "description failed")?;
    Ok(stats.dropped)
}

/// The first semihosting argument after the program name, nul-terminated in `buf`.
fn image_path(buf: &mut [u8; PATH_BYTES]) -> Result<&core::ffi::CStr, &'static str> {
    let args = semihosting::experimental::env::args::<PATH_BYTES>()
        .map_err(|_| "no semihosting command line (run with `make firmware-run`)")?;
    let path = (&args)
        .nth(1)
        .ok_or("usage: surfcl-firmware IMAGE.pgm")?
        .map_err(|_| "image path is not UTF-8")?;
    let bytes = path.as_bytes();
    if bytes.len() >= buf.len() {
        return Err("image path too long");
    }
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[bytes.len()] = 0;
    core::ffi::CStr::from_bytes_until_nul(&buf[..]).map_err(|_| "image path contains a nul byte")
}

/// Writes `bytes` to the host's standard output (ignored if the host refuses).
fn print(bytes: &[u8]) {
    if let Ok(mut out) = semihosting::io::stdout() {
        let _ = out.write_all(bytes);
    }
}

/// Prints `label` followed by `n` and a newline.
fn print_count(label: &[u8], n: usize) {
    let mut line = decimal::Line::new();
    line.bytes(label);
    line.unsigned(n as u64);
    line.byte(b'\n');
    print(line.as_bytes());
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // No formatting: it would pull core::fmt's float code into the flash budget.
    print(b"error: panic\n");
    semihosting::process::exit(101)
}
