//! surfcl on a microcontroller: reads a binary PGM from the host through semihosting, runs SURF
//! detection and SURF-64 description with `surfcl-core` in caller-owned `static` buffers, and
//! prints one line per keypoint (`x y scale`, 3 decimals, strongest first), then
//! `keypoints N` and `stack_high_water BYTES`.
//!
//! Run under qemu with `make firmware-run TARGET=<target> IMAGE=<file.pgm>`; the image path is
//! the first semihosting argument. Parameters are those of `surfcl detect` (threshold 0.0004,
//! 4 octaves, first sample step 2, oriented descriptors) except where noted in README.md.
//!
//! The stack is painted with a pattern when `main` starts and scanned at the end: the lowest
//! overwritten word gives the high-water mark of everything `main` called.
#![no_std]
#![no_main]

mod buffers;
mod decimal;
mod pgm;
mod stack;

use semihosting::io::Write as _;
use surfcl_core::describe::describe_all;
use surfcl_core::keypoint::{KeypointBuffer, KeypointSink};
use surfcl_core::surf::{self, Precision, SurfConfig};
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

    let config = SurfConfig {
        // Same keypoints as the f32 maps (the packed candidates are recomputed exactly), with a
        // quarter of the response memory: 77 KB instead of 307 KB at 320x240.
        precision: Precision::Packed8,
        ..SurfConfig::default()
    };
    let scratch_len = surf::scratch_len(&config, width, height).map_err(|_| "bad size")?;
    let scratch = buffers
        .scratch
        .get_mut(..scratch_len)
        .ok_or("image too large for the response scratch")?;
    let mut keypoints = KeypointBuffer::new(&mut buffers.keypoints[..]);
    let stats = surf::detect(&integral, &config, scratch, &mut keypoints)
        .map_err(|_| "detection failed")?;
    let count = keypoints.len();
    describe_all(
        &integral,
        keypoints.points_mut(),
        config.upright,
        &mut buffers.descriptors[..count],
    )
    .map_err(|_| "description failed")?;

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
    if stats.dropped > 0 {
        print_count(b"dropped ", stats.dropped);
    }
    print_count(b"keypoints ", count);
    print_count(b"stack_high_water ", stack::high_water());
    Ok(())
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
