#!/bin/sh
# Fills .device-ros/ (git-ignored) with what the lent GPU machine needs to measure the ROS node:
# the release latency/soak test binary (stripped), two boat images and the run scripts. Then,
# with the device tool: carry [".device-ros"], command `OUT=$OUT sh .device-ros/run.sh "1920x1080 opencl" ...`
# (see scripts/device/node-latency.sh and docs/BENCHMARKS.md, "ROS 2 node latency"), or
# `OUT=$OUT sh .device-ros/diag.sh`: the pipeline alone beside the node on the same host.
#
# A/B of two builds (scripts/device/node-latency-ab.sh, copied as .device-ros/ab.sh):
#   OLD=<commit> [NEW=<commit>] scripts/device/prepare-node-latency.sh
# builds the test binary of each commit in a temporary git worktree (sharing this checkout's
# target directory, so only the workspace's own crates are compiled again) and stores them as
# soak_latency.old and soak_latency.new. Without NEW, "new" is this checkout's working tree
# (uncommitted changes included: name a commit to leave them out). Then carry [".device-ros"],
# command `OUT=$OUT sh .device-ros/ab.sh`.
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
target=${CARGO_TARGET_DIR:-$root/target}

# The path of the release soak_latency test binary built in the checkout at $1.
build() {
  (cd "$1" && CARGO_TARGET_DIR=$target cargo test -p surfcl-ros --release --test soak_latency --no-run --message-format=json 2>/dev/null) \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "soak_latency":
        print(m["executable"])'
}

# Builds commit $1 in a temporary worktree and copies its binary to .device-ros/$2.
build_commit() {
  tree=$(mktemp -d "${TMPDIR:-/tmp}/surfcl-$2.XXXXXX")
  git worktree add --detach "$tree" "$1" >/dev/null
  bin=$(build "$tree")
  [ -n "$bin" ] || { echo "build of $1 failed" >&2; git worktree remove --force "$tree"; exit 1; }
  cp "$bin" ".device-ros/$2"
  strip ".device-ros/$2"
  git worktree remove --force "$tree"
  echo "$2: $(git rev-parse --short "$1")"
}

mkdir -p .device-ros/data/oxford-boat
if [ -n "${NEW:-}" ]; then
  build_commit "$NEW" soak_latency.new
  cp .device-ros/soak_latency.new .device-ros/soak_latency
else
  bin=$(build "$root")
  [ -n "$bin" ] || { echo "build failed" >&2; exit 1; }
  cp "$bin" .device-ros/soak_latency
  strip .device-ros/soak_latency
  [ -z "${OLD:-}" ] || cp .device-ros/soak_latency .device-ros/soak_latency.new
fi
[ -z "${OLD:-}" ] || build_commit "$OLD" soak_latency.old
cp data/oxford-boat/img1.pgm data/oxford-boat/img2.pgm .device-ros/data/oxford-boat/
cp scripts/device/node-latency.sh .device-ros/run.sh
cp scripts/device/node-latency-ab.sh .device-ros/ab.sh
cp scripts/device/node-latency-diag.sh .device-ros/diag.sh
# The pipeline alone, for diag.sh: this checkout's `surfcl`.
if (CARGO_TARGET_DIR=$target cargo build --release -p surfcl-cli --bin surfcl 2>/dev/null); then
  strip -o .device-ros/surfcl "$target/release/surfcl"
else
  echo "build of surfcl failed: diag.sh cannot run its bench" >&2
fi
echo "ready: .device-ros ($(du -sh .device-ros | cut -f1))"
