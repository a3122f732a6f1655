#!/bin/sh
# ROS node latency (and soak) on the lent GPU machine, from the folder that
# scripts/device/prepare-node-latency.sh filled (.device-ros/): the latency test binary, two boat
# images. Each argument is one run: "SIZE BACKEND [VAR=value]" (the latency test's
# SURFCL_LATENCY_* variables), or "soak SIZE BACKEND". Every run enters its own private network
# namespace (loopback raised with an ioctl: the GPU machine has no `ip`). Results are appended
# to $OUT/latency.txt and $OUT/latency.jsonl.
#   sh .device-ros/run.sh "1920x1080 opencl" "1920x1080 opencl SURFCL_LATENCY_OUTPUTS=best_effort"
# Paced at a camera's rate (measured after a warm-up of two of RustDDS's 6 s cleanings of a
# reliable writer's samples; SURFCL_LATENCY_WARMUP_S, default 14):
#   sh .device-ros/run.sh "1920x1080 opencl SURFCL_LATENCY_HZ=30"
# BIN names another build of the test binary in that folder (default soak_latency), for builds
# alternated in one session: BIN=soak_latency.old sh .device-ros/run.sh ...
set -u
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
D=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-soak_latency}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
cat > "$D/lo_up.py" <<'PY'
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
f = struct.unpack('16sH', fcntl.ioctl(s, 0x8913, struct.pack('16sH', b'lo', 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack('16sH', b'lo', f | 1))
PY
run() { # name, then VAR=value settings
  name=$1; shift
  echo "=== $BIN $name $*" | tee -a "$OUT/latency.txt"
  env "$@" SURFCL_DATA_DIR="$D/data" SURFCL_LATENCY_JSON="$OUT/latency.jsonl" \
    unshare -n -- sh -c "python3 '$D/lo_up.py' && timeout 170 '$D/$BIN' --ignored --nocapture --exact latency" 2>&1 \
    | grep -v '^\[Info\]' | tail -24 | tee -a "$OUT/latency.txt"
}
[ $# -gt 0 ] || set -- "640x480 opencl" "1920x1080 opencl" "4000x3000 opencl"
for spec in "$@"; do
  set -- $spec
  if [ "$1" = soak ]; then
    echo "=== $BIN soak $2 $3" | tee -a "$OUT/latency.txt"
    env SURFCL_DATA_DIR="$D/data" SURFCL_SOAK_SIZE=$2 SURFCL_SOAK_BACKEND=$3 \
      unshare -n -- sh -c "python3 '$D/lo_up.py' && timeout 200 '$D/$BIN' --ignored --nocapture --exact soak_2000_frames_at_30hz" 2>&1 \
      | grep -v '^\[Info\]' | tail -6 | tee -a "$OUT/latency.txt"
    continue
  fi
  size=$1 backend=$2
  shift 2
  dev=; [ "$backend" = opencl ] && dev=NVIDIA
  frames=${FRAMES:-300}; [ "$backend" = cpu ] && frames=100
  run "$size $backend" SURFCL_LATENCY_SIZE=$size SURFCL_LATENCY_BACKEND=$backend SURFCL_LATENCY_DEVICE=$dev SURFCL_LATENCY_FRAMES=$frames "$@"
done
