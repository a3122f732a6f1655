//! surfcl on a microcontroller: reads a binary PGM from the host through semihosting a row at a
//! time, runs SURF detection and SURF-64 description with the banded path of `surfcl-core`
//! (`surfcl_core::banded`: only a band of the integral image is held) in caller-owned `static`
//! buffers, and prints one line per keypoint (`x y scale`, 3 decimals, strongest first), then
//! `keypoints N`, `stack_high_water BYTES`, `statics BYTES`, `ram_high_water BYTES` (statics +
//! stack) and `instructions N` (detection and description, rows read included; a deterministic
//! count under `qemu -icount shift=0`, see `make firmware-count`).
//!
//! Run under qemu with `make firmware-run TARGET=<target> IMAGE=<file.pgm>`; the image path is
//! the first semihosting argument. Parameters are those of `surfcl detect` (threshold 0.0004,
//! first sample step 2, oriented descriptors) except the octaves (3; 2 with `MEMORY=192K`), see
//! README.md.
//!
//! With the `fixed` feature (`VARIANT=fixed`) detection, orientation and the (Q7) descriptors
//! run in fixed point (`surfcl_core::fixed`): no floating-point operation is linked, which is
//! what parts without an FPU need. The output format is the same.
//!
//! The stack is painted with a pattern when `main` starts and scanned at the end: the lowest
//! overwritten word gives the high-water mark of everything `main` called. The memory map
//! (`memory/*.x`) reserves the stack below the end of RAM and the link fails when the statics
//! leave less; the firmware fails when the stack went deeper than that reserve.
#![no_std]
#![no_main]

mod buffers;
mod count;
mod decimal;
mod pgm;
mod stack;

use semihosting::io::Write as _;
use surfcl_core::banded::{BandBuffers, BandError, BandedSurf};
use surfcl_core::keypoint::DescriptorQ7;
use surfcl_core::surf::SurfConfig;

use buffers::{ADVANCE, BAND_ROWS, Buffers, INIT_SAMPLE_STEP, OCTAVES};

#[cfg(target_arch = "arm")]
use cortex_m_rt::entry;
#[cfg(target_arch = "riscv32")]
use riscv_rt::entry;

/// Longest image path accepted on the semihosting command line.
const PATH_BYTES: usize = 256;

/// The `f32` path: `f32` responses and Newton step, orientation and descriptors (quantised to
/// Q7 for storage).
#[cfg(not(feature = "fixed"))]
type Arithmetic = surfcl_core::surf::Float;
#[cfg(not(feature = "fixed"))]
const DESCRIBE: fn(&surfcl_core::IntegralImage, &mut surfcl_core::Keypoint, bool) -> DescriptorQ7 =
    surfcl_core::banded::describe_f32_q7;

/// The fixed-point path: Q29 responses and an integer Newton step, fixed-point orientation and
/// Q7 descriptors.
#[cfg(feature = "fixed")]
type Arithmetic = surfcl_core::surf::FixedPoint;
#[cfg(feature = "fixed")]
const DESCRIBE: fn(&surfcl_core::IntegralImage, &mut surfcl_core::Keypoint, bool) -> DescriptorQ7 =
    surfcl_core::banded::describe_fixed_q7;

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
    let mut rows = pgm::Rows::open(path)?;
    let (width, height) = (rows.width, rows.height);

    let config = SurfConfig {
        octaves: OCTAVES,
        init_sample_step: INIT_SAMPLE_STEP,
        ..SurfConfig::default()
    };
    let band = BandBuffers {
        table: &mut buffers.table,
        maps: &mut buffers.maps,
        keypoints: &mut buffers.keypoints,
        descriptors: &mut buffers.descriptors,
    };
    let mut surf = BandedSurf::<Arithmetic, DescriptorQ7>::new(
        &config, width, height, BAND_ROWS, ADVANCE, band, DESCRIBE,
    )
    .map_err(band_error)?;
    count::start();
    for _ in 0..height {
        rows.read_row(&mut buffers.row)?;
        surf.push_row(&buffers.row[..width]).map_err(band_error)?;
    }
    let instructions = count::stop();

    for kp in surf.keypoints() {
        let mut line = decimal::Line::new();
        line.fixed3(kp.x);
        line.byte(b' ');
        line.fixed3(kp.y);
        line.byte(b' ');
        line.fixed3(kp.scale);
        line.byte(b'\n');
        print(line.as_bytes());
    }
    let stats = surf.stats();
    if stats.dropped > 0 {
        print_count(b"dropped ", stats.dropped);
    }
    print_count(b"keypoints ", stats.kept);
    let (stack, statics) = (stack::high_water(), stack::statics());
    print_count(b"stack_high_water ", stack);
    print_count(b"statics ", statics);
    print_count(b"ram_high_water ", statics + stack);
    // A count only under `-icount shift=0` (make firmware-count); host time otherwise.
    print_count(b"instructions ", instructions as usize);
    if stack > stack::reserve() {
        return Err("the stack went deeper than the memory map reserves for it");
    }
    Ok(())
}

/// One line for the user per kind of rejection.
fn band_error(e: BandError) -> &'static str {
    match e {
        BandError::Surf(_) => "invalid configuration or image size",
        BandError::RowLength { .. } => "a row of the wrong length",
        BandError::TooManyRows { .. } => "more rows than the frame",
        BandError::Buffer { .. } => "image wider than the firmware's buffers",
        BandError::Geometry { .. } => "band too short for the octaves",
        BandError::WindowNotCovered { .. } => "a descriptor window outside the band",
    }
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
