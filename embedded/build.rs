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
    std::fs::copy(&source, out.join("memory.x"))
        .unwrap_or_else(|e| panic!("copying {}: {e}", source.display()));
    println!("cargo:rustc-link-search={}", out.display());
    for script in scripts {
        println!("cargo:rustc-link-arg-bins={script}");
    }
    println!("cargo:rerun-if-changed=memory");
    println!("cargo:rerun-if-changed=build.rs");
}
