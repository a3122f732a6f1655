#!/usr/bin/env bash
# The CPU backend of two revisions against each other and against cv2 ORB, in one run: a 640x480
# and a 1920x1080 real image, warm frames, one thread (`taskset -c 0`), then the newer one on
# every core.
#   scripts/bench/cpu-ab.sh OLD [NEW] [OUT_DIR]
#     OLD, NEW  git revisions; NEW defaults to the working tree as it is (uncommitted changes too)
#     OUT_DIR   default target/bench-cpu-ab
#   ROUNDS=N (default 5) alternating rounds.
# docs/BENCHMARKS.md's CPU figures compare against b728fc2, the last commit before the CPU
# fast-path work (issue 15): `scripts/bench/cpu-ab.sh b728fc2`.
#
# Both sides run this tree's criterion bench (gpu-runner/benches/cpu_backend.rs is copied into
# each revision's worktree; a revision whose backends predate `detect_into` gets the copy with
# `detect` instead). Rounds alternate between the revisions, so a slow period of a shared
# machine hits both: compare ratios, not absolute times.
#
# Images: the centre 640x480 crop of Oxford boat img1 (data/oxford-boat), and "Elephants"
# 1920x1080 from Debian's mate-backgrounds (GPL-2+), downloaded here, never committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
old=${1:?usage: scripts/bench/cpu-ab.sh OLD [NEW] [OUT_DIR]}
new=${2:-}
out=${3:-target/bench-cpu-ab}
mkdir -p "$out/images"
python3 -c "import cv2" 2>/dev/null || pip install -q opencv-python-headless numpy

# The images.
if [ ! -f "$out/images/eleph1080.pgm" ]; then
    (cd "$out/images" && apt-get download mate-backgrounds >/dev/null &&
        dpkg-deb -x mate-backgrounds_*_all.deb deb)
fi
python3 - "$out/images" <<'PY'
import sys, cv2
d = sys.argv[1]
boat = cv2.imread("data/oxford-boat/img1.pgm", cv2.IMREAD_GRAYSCALE)
h, w = boat.shape
y, x = (h - 480) // 2, (w - 640) // 2
cv2.imwrite(f"{d}/boat640.pgm", boat[y:y + 480, x:x + 640])
el = cv2.imread(f"{d}/deb/usr/share/backgrounds/mate/abstract/Elephants.jpg", cv2.IMREAD_GRAYSCALE)
if el.shape != (1080, 1920):
    el = cv2.resize(el, (1920, 1080), interpolation=cv2.INTER_AREA)
cv2.imwrite(f"{d}/eleph1080.pgm", el)
PY
images="$root/$out/images/boat640.pgm,$root/$out/images/eleph1080.pgm"

# A worktree of a revision, with this tree's bench in it.
worktree() { # revision -> prints the worktree's path
    local dir=target/bench-ab-$1
    [ -d "$dir" ] || git worktree add -f "$dir" "$1" >/dev/null
    mkdir -p "$dir/gpu-runner/benches"
    if grep -rq 'fn detect_into' "$dir/gpu-runner/src"; then
        cp gpu-runner/benches/cpu_backend.rs "$dir/gpu-runner/benches/cpu_backend.rs"
    else
        sed 's#backend.detect_into(image, params, out)#backend.detect(image, params).map(|f| *out = f)#' \
            gpu-runner/benches/cpu_backend.rs >"$dir/gpu-runner/benches/cpu_backend.rs"
        grep -q 'backend.detect(image, params).map' "$dir/gpu-runner/benches/cpu_backend.rs"
    fi
    grep -q 'name = "cpu_backend"' "$dir/gpu-runner/Cargo.toml" ||
        printf '\n[[bench]]\nname = "cpu_backend"\nharness = false\n' >>"$dir/gpu-runner/Cargo.toml"
    echo "$dir"
}
old_dir=$root/$(worktree "$old")
old_label=$(git rev-parse --short "$old")
if [ -n "$new" ]; then
    new_dir=$root/$(worktree "$new")
    new_label=$(git rev-parse --short "$new")
else
    new_dir=$root
    new_label=tree
fi

report() { # tree label threads cpus: the stage lines only (the criterion filter matches nothing)
    (cd "$1" && SURFCL_BENCH_IMAGES=$images SURFCL_BENCH_THREADS=$3 SURFCL_BENCH_FRAMES=9 \
        taskset -c "$4" cargo bench -q -p surfcl-gpu --bench cpu_backend -- --noplot report 2>&1 |
        grep -E "median ms" | sed "s/^/$2 /") | tee -a "$out/log.txt"
}
(cd "$old_dir" && cargo bench -q -p surfcl-gpu --bench cpu_backend --no-run)
(cd "$new_dir" && cargo bench -q -p surfcl-gpu --bench cpu_backend --no-run)
: >"$out/log.txt"
{ date -u +"%Y-%m-%dT%H:%MZ"; lscpu | grep -E "Model name|^CPU\(s\)"; echo "old $old_label, new $new_label (HEAD $(git rev-parse --short HEAD))"; } | tee -a "$out/log.txt"
nproc=$(nproc)
rounds=${ROUNDS:-5}
for round in $(seq "$rounds"); do
    echo "round $round" | tee -a "$out/log.txt"
    report "$new_dir" "$new_label" 1 0
    report "$old_dir" "$old_label" 1 0
    report "$new_dir" "$new_label" "$nproc" "0-$((nproc - 1))"
    python3 scripts/peers/orb.py 1 "$out/images/boat640.pgm" "$out/images/eleph1080.pgm" | sed "s/^/orb /" | tee -a "$out/log.txt"
done
# Best frame of every program over all rounds.
python3 - "$out/log.txt" <<'PY' | tee -a "$out/log.txt"
import json, re, sys
best = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (\S+) (\S+): (\d+) keypoints.*frame best ([\d.]+)", line)
    if m:
        key = (m[2], m[3], m[1])
        best[key] = min(best.get(key, 1e9), float(m[5]))
    elif line.startswith("orb "):
        r = json.loads(line[4:])
        key = (r["image"].rsplit("/", 1)[-1].split(".")[0], "orb5000/1t", "cv2")
        best[key] = min(best.get(key, 1e9), r["best_ms"])
print("best frame over all rounds (ms):")
for (image, mode, tree), ms in sorted(best.items()):
    print(f"  {image:10} {mode:16} {tree:8} {ms:8.2f}")
PY
