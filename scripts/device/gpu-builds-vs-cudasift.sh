#!/bin/sh
# Several surfcl builds alternated per image on the lent GPU machine, with CudaSift (the peer
# of issue 14) after them in every round, for ROUNDS rounds; then GPU-vs-CPU parity and the
# streams of the last build.
# Prepare here (the folder is git-ignored and carried to the device):
#   scripts/device/prepare-cudasift.sh CUDASIFT_GIT_DIR
#   cp scripts/device/gpu-builds-vs-cudasift.sh scripts/cross/compare-keypoints.py .device-gpu/
#   cp target/release/surfcl .device-gpu/surfcl-new; (an older build as surfcl-old)
#   1920x1080 PGM images into .device-gpu/ (e.g. eleph1080.pgm, boat1080.pgm)
# There: cd .device-gpu && sh gpu-builds-vs-cudasift.sh [ROUNDS] [BUILDS] [IMAGES]
#   (defaults: 3, "surfcl-old surfcl-new", "eleph1080.pgm boat1080.pgm")
cd "$(dirname "$0")" || exit 1
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
rounds=${1:-3}
builds=${2:-surfcl-old surfcl-new}
images=${3:-eleph1080.pgm boat1080.pgm}
last=$(echo "$builds" | awk '{print $NF}')
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -x cudasift-bench ] || nvcc -O3 -arch=sm_90 -Icudasift cudasift-bench.cu cudasift/cudaImage.cu \
    cudasift/cudaSiftH.cu cudasift/matching.cu -o cudasift-bench 2>&1 | grep -v warning | tail -3
"./$last" devices | head -8
bench() { # build image: one line of stage medians and end-to-end times
  SURFCL_BENCH_IMAGE=$2 "./$1" bench --device NVIDIA --frames 200 --max-keypoints 4096 \
      --sizes 1920x1080 2>&1 |
    awk -v tag="$1 $2" '/OpenCL/ {kp=$0} /^    [a-z_0-9]+ +[0-9.]+ ms/ {s = s $1 " " $2 "; "}
      /device total/ {s = s "device total " $3 "; "} /end to end/ {s = s "end to end " $4 "; "}
      /pinned input/ {s = s "pinned input " $3 "; "} /CPU backend/ {exit}
      END {print "== " tag " " s; print "   " kp}'
}
for r in $(seq "$rounds"); do
  for img in $images; do
    echo "-- round $r $img"
    for b in $builds; do bench "$b" "$img"; done
    ./cudasift-bench "$img" 200 2>&1 >/dev/null | tail -1
  done
done
echo "-- parity: GPU (NVIDIA) against the CPU backend, $last"
for img in $images; do
  "./$last" detect "$img" --device NVIDIA --json gpu.json >/dev/null 2>&1
  "./$last" detect "$img" --backend cpu --json cpu.json >/dev/null 2>&1
  python3 compare-keypoints.py json gpu.json cpu.json 2>&1 | tail -3
done
echo "-- streams, $last, 1000 frames"
for img in $images; do
  SURFCL_BENCH_IMAGE=$img "./$last" bench --device NVIDIA --frames 1000 --max-keypoints 4096 \
    --sizes 1920x1080 --stream 2>&1 | grep -E '^  (surf|harris) '
done
