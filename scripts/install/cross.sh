#!/usr/bin/env bash
# Installs what the cross builds need on Debian/Ubuntu, skipping what is already there (see
# docs/CROSS.md). Safe to run repeatedly.
#   - Debian's Rust 1.96 with its library sources (rustc-web, cargo-web, rust-web-src) and
#     rust-lld (rust-web-llvm, whose /usr/bin/rust-lld points at lld-22, a recommends only):
#     microcontroller targets are built with -Zbuild-std=core, which
#     needs library sources of exactly the compiler's version (rustup's shims cannot use them).
#   - arm64 multiarch: the aarch64 cross linker, Rust's std for arm64 and the OpenCL ICD loader.
#   - qemu: qemu-user for aarch64 binaries, qemu-system-arm (mps2-an385/an386) and
#     qemu-system-misc (riscv32 virt) for the firmware; binutils for size/nm checks.
set -euo pipefail

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
apt_install() {
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

packages=(rustc-web cargo-web rust-web-src rust-web-llvm lld-22 gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    libstd-rust-web-dev:arm64 ocl-icd-opencl-dev:arm64 qemu-user qemu-system-arm qemu-system-misc
    binutils python3)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install/cross.sh: installing ${missing[*]}" >&2
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        sudo_if_needed dpkg --add-architecture arm64
    fi
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -q
    apt_install "${missing[@]}"
fi
