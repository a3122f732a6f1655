#!/bin/sh
# Where a frame's time goes on this host (issue 17, docs/BENCHMARKS.md "run 12"): the pipeline
# alone (`surfcl bench`, 1920x1080 from boat img1, 4096 keypoints, pinned input), then the
# node's latency test at 640x480, 1920x1080 (also with OpenCL profiling: upload, kernels,
# readback), 4000x3000 and 1920x1080 paced at 30 Hz, best-effort outputs, each run in its own
# private network namespace. Compare the node's `detect` with the bench's "pinned input" (which
# does not fill the keypoint arrays: about 0.07 ms at 4096 keypoints on an H100 host).
# From the folder scripts/device/prepare-node-latency.sh filled (it also puts `surfcl` there):
#   OUT=$OUT sh .device-ros/diag.sh          (about a minute)
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /etc/OpenCL/vendors
echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee -a "$OUT/latency.txt"
bench() {
  SURFCL_BENCH_IMAGE="$D/data/oxford-boat/img1.pgm" "$D/surfcl" bench --device NVIDIA \
    --frames 200 --max-keypoints 4096 --sizes 1920x1080 2>&1 | grep -E "OpenCL|ms \(|ms$" | head -14 | tee -a "$OUT/latency.txt"
}
bench
FRAMES=300 BIN=soak_latency sh "$D/run.sh" \
  "640x480 opencl SURFCL_LATENCY_OUTPUTS=best_effort" \
  "1920x1080 opencl SURFCL_LATENCY_OUTPUTS=best_effort" \
  "1920x1080 opencl SURFCL_LATENCY_OUTPUTS=best_effort SURFCL_LATENCY_PROFILE=1" \
  "4000x3000 opencl SURFCL_LATENCY_OUTPUTS=best_effort" \
  "1920x1080 opencl SURFCL_LATENCY_OUTPUTS=best_effort SURFCL_LATENCY_HZ=30 SURFCL_LATENCY_WARMUP_S=2"
bench
