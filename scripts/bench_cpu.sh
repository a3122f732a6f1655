#!/usr/bin/env bash
# CPU benchmarks of the development machine, with the OpenCV peers measured in the same run
# (docs/BENCHMARKS.md). Ratios, not absolute times, are what carry over between runs.
#   scripts/bench_cpu.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
quick=${1:-}
out=${OUT:-target/bench-cpu}
mkdir -p "$out"
python3 -c "import cv2" 2>/dev/null || pip install -q opencv-python-headless numpy
date -u +"%Y-%m-%dT%H:%MZ" | tee "$out/date.txt"
lscpu | grep -E "Model name|^CPU\(s\)" | tee "$out/cpu.txt"
# Our criterion benches (single thread) ...
cargo bench -p surfcl-core --bench core -- --noplot 2>&1 | grep -E "^[a-z_/0-9]+ +time:|time:" | tee "$out/core.txt"
cargo bench -p surfcl-core --bench matcher -- --noplot 2>&1 | grep -E "time:" -B1 | tee "$out/matcher.txt"
cargo bench -p surfcl-core --bench harris -- --noplot 2>&1 | grep -E "time:" -B1 | tee "$out/harris.txt"
# ... the peers right after, on the same machine.
python3 scripts/peer_sift.py data/oxford-boat/img1.pgm 1 | tee "$out/sift.json"
python3 scripts/peers_cpu.py $quick --json "$out/peers.json"
# The whole CLI path (both cores) on the CPU and on PoCL.
cargo build -q --release -p surfcl-cli
target/release/surfcl bench --backend opencl --frames 5 --sizes 640x480,1920x1080 --json "$out/pocl.json" 2>&1 | tee "$out/pocl.txt"
