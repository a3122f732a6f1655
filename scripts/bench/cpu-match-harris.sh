#!/usr/bin/env bash
# Issue 15's matcher and Harris comparisons, in one run, one thread (`taskset -c 0`):
# - the CPU backend's 2-NN matching on real SURF-64 descriptors (gpu-runner/benches/cpu_match.rs,
#   N = 3000 and 15000) against cv2.BFMatcher knnMatch k=2 on the very same descriptors
#   (scripts/peers/bfmatcher.py), alternating over ROUNDS rounds;
# - Harris whole detection (core/benches/harris.rs) against cv2.cornerHarris response only
#   (scripts/peers/cpu.py).
#   scripts/bench/cpu-match-harris.sh [OUT_DIR]     (default target/bench-match-harris)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "${1:-target/bench-match-harris}")
mkdir -p "$out/descriptors"
python3 -c "import cv2" 2>/dev/null || pip install -q opencv-python-headless numpy
cargo bench -q -p surfcl-gpu --bench cpu_match --no-run
cargo bench -q -p surfcl-core --bench harris --no-run
: >"$out/log.txt"
{ date -u +"%Y-%m-%dT%H:%MZ"; lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-120; git rev-parse --short HEAD; } | tee -a "$out/log.txt"
for round in $(seq "${ROUNDS:-3}"); do
    echo "round $round" | tee -a "$out/log.txt"
    SURFCL_MATCH_DUMP="$out/descriptors" taskset -c 0 \
        cargo bench -q -p surfcl-gpu --bench cpu_match -- --noplot report 2>&1 |
        grep -E "^match" | tee -a "$out/log.txt"
    taskset -c 0 python3 scripts/peers/bfmatcher.py 1 "$out/descriptors" | tee -a "$out/log.txt"
done
taskset -c 0 cargo bench -q -p surfcl-core --bench harris -- --noplot 2>&1 |
    grep -E "time:" | tee -a "$out/log.txt"
taskset -c 0 python3 scripts/peers/cpu.py --quick 2>&1 | grep cornerHarris | tee -a "$out/log.txt"
