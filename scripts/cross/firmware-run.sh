#!/usr/bin/env bash
# Runs the example firmware once under the qemu machine of its target and prints its output.
#   scripts/cross/firmware-run.sh TARGET ELF IMAGE.pgm
# TARGET: thumbv7em-none-eabihf (mps2-an386, Cortex-M4F), thumbv6m-none-eabi (mps2-an385, a
# Cortex-M3 running the v6-M code), riscv32imc-unknown-none-elf (virt). The image is read by the
# firmware from the host through semihosting; the exit code is the firmware's.
set -euo pipefail
target=${1:?target}
elf=${2:?firmware ELF}
image=${3:?image.pgm}
# Bounded: a 320x240 frame takes seconds; a firmware that hangs is a failure, not a wait.
limit=${FIRMWARE_TIMEOUT:-600}

[ -f "$elf" ] || { echo "firmware-run: no firmware at $elf (make firmware TARGET=$target)" >&2; exit 2; }
[ -f "$image" ] || { echo "firmware-run: no image at $image" >&2; exit 2; }

case "$target" in
    thumbv7em-none-eabihf) qemu=(qemu-system-arm -M mps2-an386 -cpu cortex-m4) ;;
    thumbv6m-none-eabi) qemu=(qemu-system-arm -M mps2-an385 -cpu cortex-m3) ;;
    riscv32imc-unknown-none-elf) qemu=(qemu-system-riscv32 -M virt -bios none) ;;
    *) echo "firmware-run: unknown target $target" >&2; exit 2 ;;
esac
# Commas in semihosting arguments would split the option: refuse such paths.
case "$image" in *,*) echo "firmware-run: image path must not contain ','" >&2; exit 2 ;; esac

exec timeout "$limit" "${qemu[@]}" ${QEMU_EXTRA:-} -display none -monitor none -serial none \
    -semihosting-config "enable=on,target=native,arg=surfcl-firmware,arg=$image" -kernel "$elf"
