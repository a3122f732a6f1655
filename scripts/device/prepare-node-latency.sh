#!/bin/sh
# Fills .device-ros/ (git-ignored) with what the lent GPU machine needs to measure the ROS node:
# the release latency/soak test binary (stripped), two boat images and the run script. Then,
# with the device tool: carry [".device-ros"], command `OUT=$OUT sh .device-ros/run.sh "1920x1080 opencl" ...`
# (see scripts/device/node-latency.sh and docs/BENCHMARKS.md, "ROS 2 node latency").
set -eu
cd "$(dirname "$0")/../.."
bin=$(cargo test -p surfcl-ros --release --test soak_latency --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "soak_latency":
        print(m["executable"])')
mkdir -p .device-ros/data/oxford-boat
cp "$bin" .device-ros/soak_latency
strip .device-ros/soak_latency
cp data/oxford-boat/img1.pgm data/oxford-boat/img2.pgm .device-ros/data/oxford-boat/
cp scripts/device/node-latency.sh .device-ros/run.sh
echo "ready: .device-ros ($(du -sh .device-ros | cut -f1))"
