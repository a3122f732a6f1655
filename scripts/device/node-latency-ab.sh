#!/bin/sh
# Two builds of the ROS node's latency test alternated on the lent GPU machine (issue 17): the
# folder that scripts/device/prepare-node-latency.sh fills, with the builds copied in as
# soak_latency.old and soak_latency.new. Two rounds of old and new at 640x480, 1920x1080 and
# 4000x3000 mono8 with best-effort outputs, then the new build alone: reliable outputs, the CPU
# backend, 4K rgb8 and the 2000-frame soak at 1920x1080. Results in $OUT/latency.txt (.jsonl).
#   OUT=$OUT sh .device-ros/ab.sh          (both parts: may not fit one 10-minute device command)
#   OUT=$OUT sh .device-ros/ab.sh ab       (the alternated rounds only)
#   OUT=$OUT sh .device-ros/ab.sh new      (the new build alone only)
#   OUT=$OUT sh .device-ros/ab.sh paced    (issue 17: two rounds of old and new at 1920x1080,
#                                          back to back with reliable outputs, then 30 Hz after
#                                          14 s of warm-up (two RustDDS cleanings), reliable then
#                                          best-effort outputs: the steady state of a camera
#                                          stream; about 5 minutes)
# scripts/device/prepare-node-latency.sh with OLD= (and NEW=) fills the folder.
D=$(cd "$(dirname "$0")" && pwd)
part=${1:-all}
if [ "$part" = paced ]; then
  for round in 1 2; do
    for build in old new; do
      FRAMES=300 BIN=soak_latency.$build sh "$D/run.sh" \
        "1920x1080 opencl" \
        "1920x1080 opencl SURFCL_LATENCY_HZ=30 SURFCL_LATENCY_WARMUP_S=14" \
        "1920x1080 opencl SURFCL_LATENCY_HZ=30 SURFCL_LATENCY_WARMUP_S=14 SURFCL_LATENCY_OUTPUTS=best_effort"
    done
  done
  exit 0
fi
[ "$part" = new ] || for round in 1 2; do
  for build in old new; do
    BIN=soak_latency.$build sh "$D/run.sh" \
      "640x480 opencl SURFCL_LATENCY_OUTPUTS=best_effort" \
      "1920x1080 opencl SURFCL_LATENCY_OUTPUTS=best_effort" \
      "4000x3000 opencl SURFCL_LATENCY_OUTPUTS=best_effort"
  done
done
[ "$part" = ab ] && exit 0
BIN=soak_latency.new sh "$D/run.sh" "1920x1080 opencl" \
  "1920x1080 cpu SURFCL_LATENCY_OUTPUTS=best_effort" \
  "3840x2160 opencl SURFCL_LATENCY_ENCODING=rgb8 SURFCL_LATENCY_OUTPUTS=best_effort"
BIN=soak_latency.new sh "$D/run.sh" "soak 1920x1080 opencl"
