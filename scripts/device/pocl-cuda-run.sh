#!/bin/bash
# PoCL's CUDA driver beside NVIDIA's OpenCL on the lent GPU machine (issue 35): the parity tests
# on each, `surfcl detect` reports of both against the CPU backend, `surfcl bench` 1920x1080 on
# both in the same run, and the CPU backend on 1 to 16 cores.
#
# Prepare here (PAYLOAD is a git-ignored folder of the checkout that the device call sends,
# e.g. .device-pocl/ listed in .git/info/exclude; a helper's worktree is not what is sent, so
# copy this script and build-pocl-cuda.sh into PAYLOAD too):
#   scripts/device/build-pocl-cuda.sh stage PAYLOAD     (or PAYLOAD/pocl-cuda-install.tar.xz
#                                                        from an earlier `build`)
#   cargo build --release -p surfcl-cli && strip -o PAYLOAD/surfcl target/release/surfcl
#   cargo test --release -p surfcl-tests --no-run --test opencl_matches_cpu --test opencl_harris \
#       --test opencl_stream --test opencl_select --test opencl_profiling
#   and copy those test binaries to PAYLOAD/tests/ under their names without the hash.
# There, from the repository root (the script itself may sit in PAYLOAD):
#   SURFCL_BUILD_ROOT=/path/of/the/checkout/where/they/were/built \
#       scripts/device/pocl-cuda-run.sh PAYLOAD OUT PHASE...
# (the test binaries find data/ through the path they were built at: SURFCL_BUILD_ROOT makes
# that path a link to this checkout when it does not exist).
# PHASE: build (PoCL from the staged sources, or unpacked from PAYLOAD/pocl-cuda-install.tar.xz),
# devices, parity-pocl, parity-nvidia, compare, bench, scaling. Each phase writes OUT/PHASE.log.
set -uo pipefail
payload=$(cd "${1:?PAYLOAD}" && pwd)
out=${2:?OUT}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
repo=$PWD
surfcl=$payload/surfcl
export POCL_PREFIX=${POCL_PREFIX:-/opt/pocl-cuda}
mkdir -p "$out"
if [ -n "${SURFCL_BUILD_ROOT:-}" ] && [ ! -e "$SURFCL_BUILD_ROOT" ]; then
  mkdir -p "$(dirname "$SURFCL_BUILD_ROOT")" && ln -s "$repo" "$SURFCL_BUILD_ROOT"
fi

# Each run sees exactly one OpenCL platform. The machine's loader (the one CUDA ships) loads
# the libraries in OCL_ICD_FILENAMES (the image sets libpocl.so.2:libnvidia-opencl.so.1) and the
# entries of /etc/OpenCL/vendors (Ubuntu's PoCL 5.0), so both are narrowed to one library: PoCL
# 5.0's libpocl.so.2 in the same process would capture the symbols that PoCL 7.0's CUDA driver
# looks up in its own libpocl.so.2 (same soname), and the driver would fail to load.
no_vendors=/tmp/surfcl-no-vendors
mkdir -p "$no_vendors" /etc/OpenCL/vendors.machine
mv /etc/OpenCL/vendors/*.icd /etc/OpenCL/vendors.machine/ 2>/dev/null
export OCL_ICD_VENDORS=$no_vendors
nvidia_lib=libnvidia-opencl.so.1
pocl_lib=$POCL_PREFIX/lib/libpocl.so
on_nvidia() { OCL_ICD_FILENAMES=$nvidia_lib "$@"; }
on_pocl() { OCL_ICD_FILENAMES=$pocl_lib POCL_DEVICES=cuda "$@"; }
on_both() { OCL_ICD_FILENAMES=$pocl_lib:$nvidia_lib POCL_DEVICES=cuda "$@"; }

phase_build() {
  if [ -e "$payload/pocl-cuda-install.tar.xz" ]; then
    "$here/build-pocl-cuda.sh" unpack "$payload"
  else
    "$here/build-pocl-cuda.sh" build "$payload" && cp "$payload/pocl-cuda-install.tar.xz" "$out/"
  fi
}

phase_devices() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "-- both platforms"; on_both "$surfcl" devices
  echo "-- PoCL alone"; on_pocl "$surfcl" devices
  echo "-- a first detection on PoCL-CUDA (kernel compilation included)"
  time on_pocl "$surfcl" detect "$repo/data/oxford-boat/img1.pgm" --backend opencl | tail -3
}

parity() { # runner: every parity test binary under the runner
  local t rc=0
  for t in "$payload"/tests/*; do
    echo "== $(basename "$t")"
    (cd "$repo/tests" && "$1" timeout 300 "$t" --test-threads="${TEST_THREADS:-4}" 2>&1) \
      | grep -v -E '^test .* ok$|^$|^running|^note: run with|^successes:|^    [a-z_0-9]+$' || rc=1
  done
  return $rc
}
phase_parity-pocl() { parity on_pocl; }
phase_parity-nvidia() { parity on_nvidia; }

phase_compare() {
  local k run
  for k in 1 2 3 4 5 6; do
    local img=$repo/data/oxford-boat/img$k.pgm
    "$surfcl" detect "$img" --backend cpu --json /tmp/cpu.json >/dev/null
    for run in on_pocl on_nvidia; do
      $run "$surfcl" detect "$img" --backend opencl --json /tmp/cl.json >/dev/null
      echo "img$k ${run#on_}: $(python3 "$repo/scripts/cross/compare-keypoints.py" json /tmp/cl.json /tmp/cpu.json | tail -1)"
    done
    "$surfcl" detect "$img" --detector harris --backend cpu --json /tmp/cpu.json >/dev/null
    for run in on_pocl on_nvidia; do
      $run "$surfcl" detect "$img" --detector harris --backend opencl --json /tmp/cl.json >/dev/null
      echo "img$k harris ${run#on_}: $(python3 "$repo/scripts/cross/compare-keypoints.py" json /tmp/cl.json /tmp/cpu.json | tail -1)"
    done
  done
}

phase_bench() { # NVIDIA and PoCL-CUDA alternated, ROUNDS rounds
  local r run
  for r in $(seq "${ROUNDS:-3}"); do
    for run in on_nvidia on_pocl; do
      echo "-- round $r ${run#on_}"
      $run "$surfcl" bench --backend opencl --sizes 1920x1080 --frames "${FRAMES:-200}" 2>&1
    done
  done
}

phase_scaling() { # the CPU backend on 1, 2, 4, 8 and 16 cores, ROUNDS rounds
  local r cores
  for r in $(seq "${ROUNDS:-3}"); do
    for cores in 0 0-1 0-3 0-7 0-15; do
      echo "-- round $r taskset -c $cores"
      taskset -c "$cores" "$surfcl" bench --backend cpu --sizes 1920x1080 --frames 5 2>&1
    done
  done
}

for phase in "$@"; do
  echo "### $phase $(date -u +%H:%M:%S)" | tee -a "$out/$phase.log"
  "phase_$phase" 2>&1 | tee -a "$out/$phase.log"
done
