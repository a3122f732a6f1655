#!/usr/bin/env bash
# Where the example firmware's instructions go: runs it once under qemu, as `make firmware-count`
# does (scripts/cross/firmware-run.sh, -icount shift=0), with the per-address counting plugin
# (scripts/cross/qemu-pc-profile.c, built by scripts/install/qemu-insn-plugin.sh), and prints the
# instructions per pipeline stage, per symbol and per core source line
# (scripts/cross/firmware-profile.py). Only the instructions between the firmware's own
# count::start and count::stop are attributed, so the total is the firmware's `instructions` line
# to within the SysTick's 40-instruction resolution (both are printed). A developer tool
# (docs/CROSS.md, "Where a frame's instructions go"), not part of make test or make cross-test.
#   scripts/cross/firmware-profile.sh TARGET ELF IMAGE.pgm
# Environment: CROSS_DIR (build folder, default target-cross), PROFILE_TOP (rows of the symbol
# and source line tables, default 15), PROFILE_KEEP (a folder to keep the raw counts and the
# firmware's output in).
set -euo pipefail
cd "$(dirname "$0")/../.."

target=${1:?target}
elf=${2:?firmware ELF}
image=${3:?image.pgm}
cross_dir=${CROSS_DIR:-target-cross}
top=${PROFILE_TOP:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -f "$elf" ] || { echo "firmware-profile: no firmware at $elf (make firmware TARGET=$target)" >&2; exit 2; }
command -v addr2line >/dev/null || { echo "firmware-profile: needs addr2line (binutils)" >&2; exit 2; }

scripts/install/qemu-insn-plugin.sh "$cross_dir/qemu-plugins" >/dev/null
plugin="$cross_dir/qemu-plugins/libpc-profile.so"
read -r on off < <(python3 scripts/cross/firmware-profile.py window "$elf")

# The plugin's arguments are comma-separated: the counts go to a path without commas.
QEMU_EXTRA="-icount shift=0 -plugin $plugin,out=$work/counts.txt,on=$on,off=$off" \
    scripts/cross/firmware-run.sh "$target" "$elf" "$image" >"$work/firmware.out"
own=$(awk '$1 == "instructions" { print $2 }' "$work/firmware.out")
if [ -z "$own" ]; then
    echo "firmware-profile: the firmware printed no instruction count" >&2
    cat "$work/firmware.out" >&2
    exit 1
fi
echo "firmware $elf on $image: $(awk '$1 == "keypoints" { print $2 }' "$work/firmware.out") keypoints"
python3 scripts/cross/firmware-profile.py report "$elf" "$work/counts.txt" "$own" "$top"
if [ -n "${PROFILE_KEEP:-}" ]; then
    mkdir -p "$PROFILE_KEEP"
    cp "$work/counts.txt" "$work/firmware.out" "$PROFILE_KEEP/"
fi
