#!/usr/bin/env bash
# Instructions per warm run of the CPU backend's stages on aarch64, beside the x86-64 build's,
# counted by QEMU's `insn` plugin (scripts/install/qemu-insn-plugin.sh builds it for the installed
# qemu) on one thread: detection (integral image and SURF detection), orientation + description,
# and the f32 and Q7 matchers, on IMAGE (matching: IMAGE against IMAGE2). Both builds are
# gpu-runner's `insn_stages` bench (release profile, no OpenCL)
# (the aarch64 one with Debian's Rust, as `make cross`; the x86-64 one with the host's cargo, as
# `make build`, whose dependencies it shares). Fails if an aarch64 count exceeds its figure in
# scripts/cross/insn-reference.txt by more than INSN_TOLERANCE percent (default 20), and proves
# that comparison can fail. Called by `make cross-test` (docs/CROSS.md).
# Environment: CROSS_DIR (build folder, default target-cross), IMAGE (default
# data/boat-qvga/img1.pgm), IMAGE2 (default: IMAGE's folder's img2.pgm), INSN_X86=0 (skip the
# x86-64 counts), INSN_REFERENCE, INSN_TOLERANCE.
set -euo pipefail
cd "$(dirname "$0")/../.."

cross_dir=${CROSS_DIR:-target-cross}
image=${IMAGE:-data/boat-qvga/img1.pgm}
image2=${IMAGE2:-$(dirname "$image")/img2.pgm}
reference=${INSN_REFERENCE:-scripts/cross/insn-reference.txt}
tolerance=${INSN_TOLERANCE:-20}
stages=(detect frame match match-q7)
cargo_debian=(env PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc /usr/bin/cargo)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

plugin=$(scripts/install/qemu-insn-plugin.sh "$cross_dir/qemu-plugins" | tail -n 1)

# Builds the stage driver and prints the path of its executable. Arguments: the cargo command,
# then (after "build") the extra build options.
build_driver() {
    local cargo=()
    while [ "$1" != build ]; do
        cargo+=("$1")
        shift
    done
    "${cargo[@]}" "$@" --release --locked -p surfcl-gpu --no-default-features --bench insn_stages \
        --message-format=json-render-diagnostics |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "insn_stages" and m.get("executable"):
        print(m["executable"])'
}

# Instructions of one run: count TAG QEMU... DRIVER STAGE REPEATS (the driver's report line
# goes to $work/TAG.out).
count() {
    local log="$work/count.log" tag=$1
    shift
    rm -f "$log"
    "$@" "$image" "$image2" >>"$work/$tag.out"
    awk '$1 == "insns:" { print $2 }' "$log"
}

# Instructions of one warm run of each stage: the run with one repeat less the run without.
# Prints "stage count" lines into $work/TAG.txt. Arguments: TAG, the qemu command line, then
# the driver.
per_run() {
    local stage zero one tag=$1
    shift
    for stage in "${stages[@]}"; do
        zero=$(count "$tag" "$@" "$stage" 0)
        one=$(count "$tag" "$@" "$stage" 1)
        if [ -z "$zero" ] || [ -z "$one" ]; then
            echo "insn-check: no count for $stage (is the plugin loaded?)" >&2
            return 1
        fi
        echo "$stage $((one - zero))"
    done >"$work/$tag.txt"
}

# Succeeds when $1 is at most $tolerance percent above the reference $2.
within() {
    [ $((100 * $1)) -le $(((100 + tolerance) * $2)) ]
}

echo "== instructions per warm run, one thread, QEMU insn plugin ($plugin)"
arm_driver=$(build_driver "${cargo_debian[@]}" build --target aarch64-unknown-linux-gnu \
    --target-dir "$cross_dir")
# The arm64 glibc of Debian's multiarch goes with its own loader (see scripts/cross/test.sh).
arm_qemu=(qemu-aarch64)
[ -e /lib/ld-linux-aarch64.so.1 ] || arm_qemu+=(-L /usr/aarch64-linux-gnu)
plugin_args=(-plugin "$plugin,inline=on" -d plugin -D "$work/count.log")
per_run aarch64 "${arm_qemu[@]}" "${plugin_args[@]}" "$arm_driver"
columns=("aarch64")
files=("$work/aarch64.txt")
status=0
# The hot loops must be NEON code: vector instructions (on v/q registers) in each hot function
# of the aarch64 build (the fill's box sums: the instance with the most).
echo "== NEON instructions in the hot functions of the aarch64 build (objdump)"
aarch64-linux-gnu-objdump -d -C --no-show-raw-insn "$arm_driver" >"$work/arm.dis"
python3 - "$work/arm.dis" <<'EOF_PY' || status=1
import re, sys
hot = ["surfcl_core::surf::response::box_sums_out_of_line", "surfcl_core::surf::scan::scan_interval_rows",
       "surfcl_core::describe::describe_all_with_maps::{{closure}}", "surfcl_core::describe::haar_map::fill_rows",
       "surfcl_core::matcher::lane_sums_out_of_line", "surfcl_core::matcher::match_range_q7_with"]
best = {}
name = None
for line in open(sys.argv[1]):
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
    if m:
        name = m.group(1) if m.group(1) in hot else None
        counts = [0, 0]
        if name:
            best.setdefault(name, []).append(counts)
    elif name and re.match(r"^\s+[0-9a-f]+:\t", line):
        counts[0] += 1
        counts[1] += bool(re.search(r"\b[vq][0-9]+\b|\bv[0-9]+\.", line.split("\t", 2)[-1]))
failed = False
for h in hot:
    total, vector = max(best.get(h, [[0, 0]]), key=lambda c: c[1])
    print(f"{vector:6} of {total:6} instructions  {h}")
    if vector < 4:
        print(f"insn-check: {h} has no NEON loop", file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
EOF_PY
if [ "${INSN_X86:-1}" != 0 ]; then
    x86_driver=$(build_driver "${CARGO:-cargo}" build)
    # qemu64: SSE2 only, the portable build (128-bit vectors, as NEON); max: AVX2, which the
    # backend picks at run time (QEMU's TCG has no AVX-512).
    per_run sse2 qemu-x86_64 -cpu qemu64 "${plugin_args[@]}" "$x86_driver"
    per_run avx2 qemu-x86_64 -cpu max "${plugin_args[@]}" "$x86_driver"
    columns+=("x86-64 SSE2" "x86-64 AVX2")
    files+=("$work/sse2.txt" "$work/avx2.txt")
    # The same keypoints and matches on every build, or the counts compare different work.
    for tag in sse2 avx2; do
        if ! cmp -s "$work/aarch64.out" "$work/$tag.out"; then
            echo "insn-check: the aarch64 and x86-64 ($tag) runs found different keypoints or matches" >&2
            status=1
        fi
    done
fi
sort -u "$work/aarch64.out" | sed 's/^/aarch64 driver: /'

# The table: description is frame - detect.
python3 - "$image" "${#columns[@]}" "${columns[@]}" "${files[@]}" <<'EOF'
import sys
image, n = sys.argv[1], int(sys.argv[2])
names, files = sys.argv[3:3 + n], sys.argv[3 + n:3 + 2 * n]
counts = [dict((s, int(c)) for s, c in (l.split() for l in open(f))) for f in files]
for c in counts:
    c["describe"] = c["frame"] - c["detect"]
rows = ["detect", "describe", "frame", "match", "match-q7"]
head = f"{'stage':<10}" + "".join(f"{name:>16}" for name in names)
if n > 1:
    head += "".join(f"{'aarch64/' + name.split()[-1]:>16}" for name in names[1:])
print(f"image {image}")
print(head)
for r in rows:
    line = f"{r:<10}" + "".join(f"{c[r]:>16,}" for c in counts)
    line += "".join(f"{counts[0][r] / c[r]:>16.2f}" for c in counts[1:])
    print(line)
EOF

checked=0
while read -r stage measured; do
    expected=$(awk -v img="$image" -v st="$stage" '$1 == img && $2 == st { print $3 }' "$reference")
    if [ -z "$expected" ]; then
        continue
    fi
    checked=$((checked + 1))
    if within "$measured" "$expected"; then
        echo "insn-check: aarch64 $stage $measured (reference $expected): ok"
    else
        echo "insn-check: aarch64 $stage $measured is more than $tolerance% above the reference $expected" >&2
        status=1
    fi
    # The comparison must be able to fail: the same count against a reference it exceeds by 25%.
    if within "$measured" $((measured * 100 / 125)); then
        echo "insn-check: a count 25% above its reference was accepted: the check is broken" >&2
        status=1
    fi
done <"$work/aarch64.txt"
if [ "$checked" -eq 0 ]; then
    echo "insn-check: no reference figures for $image in $reference: counts only, nothing checked"
fi
[ $status -eq 0 ] && echo "insn-check: ok ($checked aarch64 counts within $tolerance% of the reference)"
exit $status
