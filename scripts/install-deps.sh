#!/usr/bin/env bash
# Installs what surfcl needs on a fresh Debian/Ubuntu machine with a Rust toolchain, skipping
# whatever is already there. Safe to run repeatedly.
#   scripts/install-deps.sh          runtime: OpenCL (PoCL on the CPU) + headers + clinfo
#   scripts/install-deps.sh --test   also the test tools: iproute2 (ip), unshare, OpenCV's core
#                                    headers and a C++ compiler (the msgs package's cv.hpp), the
#                                    Python venv of Cyclone DDS, numpy and OpenCV
#                                    (ros-node/tests/peer/.venv), the numpy venv of the CLI's
#                                    archive tests (cli/tests/numpy/.venv)
set -euo pipefail
cd "$(dirname "$0")/.."

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

packages=(pocl-opencl-icd ocl-icd-opencl-dev clinfo)
if [ "${1:-}" = "--test" ]; then
    packages+=(iproute2 util-linux python3 python3-venv g++ libopencv-core-dev)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3/python3-venv may come from elsewhere (pyenv): only ask apt if no working venv exists.
if [ ${#missing[@]} -gt 0 ]; then
    filtered=()
    for p in "${missing[@]}"; do
        case "$p" in
            python3|python3-venv) python3 -m venv --help >/dev/null 2>&1 || filtered+=("$p") ;;
            *) filtered+=("$p") ;;
        esac
    done
    if [ ${#filtered[@]} -gt 0 ]; then
        echo "installing: ${filtered[*]}" >&2
        sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -q
        sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${filtered[@]}"
    fi
fi

if [ "${1:-}" = "--test" ]; then
    # The independent DDS peer of the ROS interop test (Eclipse Cyclone DDS from PyPI).
    ros-node/tests/peer/setup.sh >&2
    # numpy, to load the CLI's --npz archives in cli/tests/formats.rs.
    cli/tests/numpy/setup.sh >&2
    scripts/ros2/setup-rclpy.sh >&2 # rclpy (Kilted, Jazzy) + surfcl_msgs for tests/ros2_interop.rs
fi
