//! Picks the memory map of the qemu machine that runs the firmware for the target being built,
//! and hands the runtime crate's linker script to the linker.

use std::path::PathBuf;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    // (memory map, linker scripts in order); cortex-m-rt's link.x includes memory.x itself.
    let (memory, scripts): (&str, &[&str]) = match target.as_str() {
        "thumbv7em-none-eabihf" => ("mps2-an386.x", &["-Tlink.x"]),
        "thumbv6m-none-eabi" => ("mps2-an385.x", &["-Tlink.x"]),
        "riscv32imc-unknown-none-elf" => ("riscv-virt.x", &["-Tmemory.x", "-Tlink.x"]),
        other => panic!(
            "surfcl-firmware: no qemu machine for target {other:?}; build with \
             `make firmware TARGET=thumbv7em-none-eabihf` (or thumbv6m-none-eabi, \
             riscv32imc-unknown-none-elf)"
        ),
    };
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    let source = manifest.join("memory").join(memory);
    let map = std::fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("reading {}: {e}", source.display()));
    // `MEMORY=192K` (the `ram192k` feature): the same map with 192 KB of RAM.
    let map = if std::env::var_os("CARGO_FEATURE_RAM192K").is_some() {
        map.replace(
            "RAM   : ORIGIN = 0x20000000, LENGTH = 256K",
            "RAM   : ORIGIN = 0x20000000, LENGTH = 192K",
        )
        .replace(
            "RAM   : ORIGIN = 0x80400000, LENGTH = 256K",
            "RAM   : ORIGIN = 0x80400000, LENGTH = 192K",
        )
    } else {
        map
    };
    std::fs::write(out.join("memory.x"), map).unwrap_or_else(|e| panic!("writing memory.x: {e}"));
    let reserve = manifest.join("memory").join("stack-reserve.x");
    std::fs::copy(&reserve, out.join("stack-reserve.x"))
        .unwrap_or_else(|e| panic!("copying {}: {e}", reserve.display()));
    println!("cargo:rustc-link-search={}", out.display());
    for script in scripts {
        println!("cargo:rustc-link-arg-bins={script}");
    }
    println!("cargo:rerun-if-changed=memory");
    println!("cargo:rerun-if-changed=build.rs");
}
