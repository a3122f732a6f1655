#!/usr/bin/env bash
# Runs the cross builds against the x86 CPU backend on the same image (called by `make cross-test`
# after `make cross`):
#   - the example firmware (the banded path of surfcl-core, embedded/) under qemu for each
#     microcontroller target, variant and memory map (256 KB: 3 octaves; 192 KB: 2 octaves), on
#     a held-in frame and a synthetic one: the same keypoints as the x86 CPU backend's full-frame
#     `surfcl detect --backend cpu --octaves N --max-keypoints CAPACITY` (same count, x / y / scale within 1e-3 px for the
#     f32 variant, within 0.05 px for the fixed-point one, whose arithmetic is its own;
#     core/tests/fixed_point.rs holds it to the f32 path on all six frames, core/tests/banded.rs
#     holds the banded path to the full-frame one bit for bit), `ram_high_water` (statics +
#     stack) within the memory map's RAM; its symbols (scripts/cross/check-firmware-symbols.sh:
#     no soft double anywhere, no soft float at all in the fixed-point variant);
#   - instructions per frame on thumbv6m under `qemu -icount shift=0`: the fixed-point variant
#     must need at most a third of the f32 (soft-float) variant's count;
#   - the aarch64 `surfcl` under qemu-aarch64: the same JSON report (keypoints and descriptors);
#   - the comparison itself, on a deliberately corrupted firmware output: it must fail.
# Environment: CROSS_DIR (build folder of `make cross`), HOST_SURFCL (the x86 binary),
# IMAGE (default data/boat-qvga/img1.pgm), FIRMWARE_VARIANTS ("TARGET:VARIANT:RAM ...").
set -euo pipefail
cd "$(dirname "$0")/../.."

cross_dir=${CROSS_DIR:-target-cross}
host=${HOST_SURFCL:-target/debug/surfcl}
image=${IMAGE:-data/boat-qvga/img1.pgm}
runs=${FIRMWARE_VARIANTS:-"thumbv7em-none-eabihf:f32:256K thumbv6m-none-eabi:f32:256K
    riscv32imc-unknown-none-elf:f32:256K thumbv7em-none-eabihf:fixed:256K
    thumbv6m-none-eabi:fixed:256K riscv32imc-unknown-none-elf:fixed:256K
    thumbv7em-none-eabihf:f32:192K thumbv6m-none-eabi:fixed:192K
    riscv32imc-unknown-none-elf:fixed:192K"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -x "$host" ] || { echo "cross-test: no host binary at $host" >&2; exit 2; }

# A synthetic QVGA frame: blobs of several sizes on a gradient, with noise (deterministic).
python3 - "$work/synthetic.pgm" <<'PY'
import math, random, sys
random.seed(36)
w, h = 320, 240
rows = bytearray()
for y in range(h):
    for x in range(w):
        v = 110 + 60 * math.sin(x / 9) * math.cos(y / 13) + 40 * math.sin(0.31 * x + 0.17 * y)
        rows.append(max(0, min(255, int(v + 0.2 * y + random.randrange(16)))))
open(sys.argv[1], "wb").write(b"P5\n%d %d\n255\n" % (w, h) + bytes(rows))
PY

status=0
for frame in "$image" "$work/synthetic.pgm"; do
    name=$(basename "$frame" .pgm)
    # The firmware's octaves and keypoint capacity per memory map: 3 and 512 in 256 KB, 2 and 256
    # in 192 KB (embedded/src/buffers.rs).
    for config in 3:512 2:256; do
        IFS=: read -r octaves capacity <<<"$config"
        echo "== x86 reference: $host detect $frame --backend cpu --octaves $octaves --max-keypoints $capacity"
        "$host" detect "$frame" --backend cpu --octaves "$octaves" --max-keypoints "$capacity" \
            --json "$work/host-$name-$octaves.json" >/dev/null
    done
    for run in $runs; do
        IFS=: read -r target variant ram <<<"$run"
        suffix=""; octaves=3; limit=$((256 * 1024))
        if [ "$ram" = 192K ]; then suffix="-192k"; octaves=2; limit=$((192 * 1024)); fi
        elf="$cross_dir/firmware/$target-$variant$suffix.elf"
        out="$work/$target-$variant$suffix-$name.txt"
        echo "== firmware $target ($variant, $ram RAM) under qemu: $name"
        scripts/cross/check-firmware-symbols.sh "$elf" "$target" "$variant" || status=1
        tol=0.001
        [ "$variant" = fixed ] && tol=0.05
        if scripts/cross/firmware-run.sh "$target" "$elf" "$frame" >"$out"; then
            grep -E '^(keypoints|stack_high_water|statics|ram_high_water) ' "$out" | tr '\n' ' '
            echo
            scripts/cross/compare-keypoints.py firmware "$out" "$work/host-$name-$octaves.json" \
                --tol "$tol" || status=1
            ram_used=$(awk '$1 == "ram_high_water" { print $2 }' "$out")
            if [ -z "$ram_used" ] || [ "$ram_used" -gt "$limit" ]; then
                echo "cross-test: ram_high_water ${ram_used:-missing} exceeds $ram" >&2
                status=1
            fi
        else
            echo "cross-test: firmware $target ($variant, $ram) failed:" >&2
            tail -n 5 "$out" >&2
            status=1
        fi
    done
done

# The comparison must be able to fail: move one keypoint of a real firmware output by 0.01 px.
# (an f32 run: the fixed-point one is compared with a looser tolerance)
sample=$(ls "$work"/*-f32-"$(basename "$image" .pgm)".txt 2>/dev/null | head -n 1 || true)
if [ -n "$sample" ] && [ -s "$sample" ]; then
    echo "== self-check: a firmware output with one keypoint moved by 0.01 px must be rejected"
    awk 'NR == 1 && NF == 3 { printf "%.3f %s %s\n", $1 + 0.01, $2, $3; next } { print }' \
        "$sample" >"$work/corrupted.txt"
    if scripts/cross/compare-keypoints.py firmware "$work/corrupted.txt" "$work/host-$(basename "$image" .pgm)-3.json"; then
        echo "cross-test: the comparison accepted a corrupted output" >&2
        status=1
    else
        echo "cross-test: corrupted output rejected, as it must be"
    fi
fi

# Instructions per frame, counted deterministically (one instruction per virtual ns).
count_instructions() {
    QEMU_EXTRA="-icount shift=0" scripts/cross/firmware-run.sh thumbv6m-none-eabi \
        "$cross_dir/firmware/thumbv6m-none-eabi-$1.elf" "$image" |
        awk '$1 == "instructions" { print $2 }'
}
if [ "${SKIP_COUNT:-0}" != 1 ]; then
    echo "== instructions per frame on thumbv6m-none-eabi (qemu -icount shift=0)"
    f32_count=$(count_instructions f32)
    fixed_count=$(count_instructions fixed)
    echo "f32 (soft float): $f32_count; fixed point: $fixed_count"
    if [ -z "$f32_count" ] || [ -z "$fixed_count" ] || [ $((3 * fixed_count)) -gt "$f32_count" ]; then
        echo "cross-test: the fixed-point path must need at most a third of the f32 path's instructions" >&2
        status=1
    fi
fi

aarch64="$cross_dir/aarch64-unknown-linux-gnu/release/surfcl"
if [ "${SKIP_AARCH64:-0}" != 1 ]; then
    # The arm64 glibc of Debian's multiarch (libc6:arm64, which libstd-rust-web-dev:arm64 pulls
    # in) is the one the dynamic loader finds; its own loader must go with it. Mixing it with the
    # loader of the cross toolchain's copy (/usr/aarch64-linux-gnu, another Debian revision) makes
    # pthread_create loop forever, so the multiarch loader is preferred when it is there.
    if [ -e /lib/ld-linux-aarch64.so.1 ]; then
        qemu_aarch64=(qemu-aarch64)
    else
        qemu_aarch64=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
    fi
    for frame in "$image" data/oxford-boat/img1.pgm; do
        echo "== aarch64 surfcl under qemu-aarch64: $frame"
        "$host" detect "$frame" --backend cpu --json "$work/host-frame.json" >/dev/null
        # Without a usable arm64 OpenCL driver `--backend auto` must fall back to the CPU at once.
        start=$(date +%s%N)
        timeout 300 "${qemu_aarch64[@]}" "$aarch64" detect "$frame" --backend auto \
            --json "$work/aarch64.json" >/dev/null || status=1
        echo "aarch64 detect --backend auto took $(( ($(date +%s%N) - start) / 1000000 )) ms under qemu"
        scripts/cross/compare-keypoints.py json "$work/aarch64.json" "$work/host-frame.json" || status=1
    done
    # The CPU-only build (no `opencl` feature) is what a board without libOpenCL.so.1 runs.
    cpu_only="$cross_dir/aarch64-unknown-linux-gnu/surfcl-cpu-only"
    echo "== aarch64 CPU-only surfcl: no libOpenCL needed, same keypoints"
    if readelf -d "$cpu_only" | grep -q 'libOpenCL'; then
        echo "cross-test: the CPU-only aarch64 build links libOpenCL" >&2
        status=1
    fi
    timeout 300 "${qemu_aarch64[@]}" "$cpu_only" detect "$image" --json "$work/cpu-only.json" >/dev/null || status=1
    "$host" detect "$image" --backend cpu --json "$work/host-frame.json" >/dev/null
    scripts/cross/compare-keypoints.py json "$work/cpu-only.json" "$work/host-frame.json" || status=1
fi

[ $status -eq 0 ] && echo "cross-test: ok" || echo "cross-test: FAILED" >&2
exit $status
