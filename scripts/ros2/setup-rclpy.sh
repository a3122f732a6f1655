#!/usr/bin/env bash
# Installs ROS 2 rclpy on Fast DDS from PyPI wheels into a venv under the repository and builds
# the node's interface package (ros-node/msg, `surfcl_msgs`) into it with colcon, so that tests
# can run real ROS 2 nodes in Python against surfcl-node. No ROS installation is needed.
#
# Usage: scripts/ros2/setup-rclpy.sh [kilted|jazzy|all]   (default: all)
#   venv:    ros-node/tests/ros2/.venv-<distro>
#   colcon:  ros-node/tests/ros2/.colcon-<distro>/{build,install,log}
#   use:     . ros-node/tests/ros2/.venv-<distro>/bin/activate
#            . ros-node/tests/ros2/.colcon-<distro>/install/local_setup.sh
# Idempotent: a distro whose venv imports rclpy and surfcl_msgs, built from the current .msg
# files, is skipped in well under a second. Needs network access (PyPI) the first time only.
#
# The wheels need a few workarounds to build an interface package (ROS2 wheels of 2025-10/11):
# - build dependencies they do not declare: ament_package, ament_cmake_include_directories,
#   rosidl_core_generators, ament_cmake_ros_core (Kilted; Jazzy's is ament_cmake_ros);
# - their installed `*Export.cmake` files name the wheel builder's Python and numpy include
#   folders (/opt/python/cp311-cp311/...): rewritten to the venv's own before building;
# - CMake comes from PyPI too (< 4: ament's modules still declare compatibility with 3.x).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
base=$repo/ros-node/tests/ros2
python=${PYTHON:-python3}

packages_for() {
    local prefix=$1
    local common=(rclpy sensor-msgs std-msgs diagnostic-msgs rcl-interfaces rmw-fastrtps-cpp
        ament-cmake rosidl-default-generators ament-package ament-cmake-include-directories
        rosidl-core-generators)
    local p
    for p in "${common[@]}"; do printf '%s%s\n' "$prefix" "$p"; done
    if [ "$prefix" = "ros-" ]; then
        echo ros-ament-cmake-ros-core
    else
        # Jazzy's ament_cmake_ros finds the test helpers unconditionally, and its generators
        # two CMake modules the wheels do not declare either.
        printf '%s\n' ros-jazzy-ament-cmake-ros ros-jazzy-ament-cmake-gmock \
            ros-jazzy-ament-cmake-gtest ros-jazzy-ament-cmake-pytest \
            ros-jazzy-python-cmake-module ros-jazzy-fastrtps-cmake-module
    fi
}

# What the tests' probes use beyond ROS 2: the OpenCV views of the messages (surfcl_msgs.cv)
# are checked with numpy and OpenCV's own Python bindings. Pinned to versions with wheels for
# the Python the ROS 2 wheels are built for (3.11).
probe_packages=(numpy==2.1.3 opencv-python-headless==4.10.0.84)

# The fingerprint of what a distro's setup depends on: its package lists and the interface
# package's files.
setup_fingerprint() {
    {
        packages_for "$1"
        printf '%s\n' "${probe_packages[@]}"
        (cd "$repo/ros-node/msg" && find . -type f | LC_ALL=C sort | xargs sha256sum)
    } | sha256sum | cut -d' ' -f1
}

setup_distro() {
    local distro=$1 prefix
    case "$distro" in
        kilted) prefix=ros- ;;
        jazzy) prefix=ros-jazzy- ;;
        *) echo "unknown distro: $distro" >&2; return 2 ;;
    esac
    local venv=$base/.venv-$distro ws=$base/.colcon-$distro
    local stamp=$ws/install/.surfcl-setup-fingerprint
    local fp
    fp=$(setup_fingerprint "$prefix")
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$fp" ] \
        && "$venv/bin/python" -c 'import rclpy' 2>/dev/null; then
        echo "ros2 $distro: ready ($venv)"
        return 0
    fi
    echo "ros2 $distro: installing rclpy, Fast DDS and the build tools from PyPI into $venv" >&2
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
            $(packages_for "$prefix") "${probe_packages[@]}" colcon-common-extensions \
            'cmake>=3.22,<4'
    # The wheel builder's include folders, as the *Export.cmake files name them, become the venv's.
    local py_inc np_inc
    py_inc=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    np_inc=$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')
    local site
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    { grep -rlZ --include='*Export.cmake' -e '/opt/python/' "$site" "$venv" 2>/dev/null || true; } \
        | sort -zu | xargs -0r sed -i -E \
            -e "s#/opt/python/cp[0-9]+-cp[0-9]+/include/python[0-9.]+#${py_inc}#g" \
            -e "s#/opt/python/cp[0-9]+-cp[0-9]+/lib/python[0-9.]+/site-packages/numpy/(_core|core)/include#${np_inc}#g"
    echo "ros2 $distro: building surfcl_msgs with colcon" >&2
    rm -rf "$ws"
    mkdir -p "$ws/src"
    ln -s "$repo/ros-node/msg" "$ws/src/surfcl_msgs"
    (
        cd "$ws"
        # shellcheck disable=SC1091
        . "$venv/bin/activate"
        # The wheels install an ament prefix at the venv's root; CMake's package search and
        # rosidl's type support lookup read it from these (a sourced ROS setup would set them).
        export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
        export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
        colcon build --packages-select surfcl_msgs --event-handlers console_cohesion- \
            --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$venv/bin/python" \
            >"$ws/build.log" 2>&1 || { tail -n 60 "$ws/build.log" >&2; exit 1; }
    )
    # The interface package, its OpenCV views included, must import from the venv's Python.
    (
        set +u # colcon's setup scripts read unset variables
        . "$venv/bin/activate"
        . "$ws/install/local_setup.sh"
        python -c 'from surfcl_msgs.msg import KeypointArray, MatchArray
from surfcl_msgs.cv import to_cv_keypoints, descriptors, to_cv_matches
import cv2, numpy'
    )
    echo "$fp" >"$stamp"
    echo "ros2 $distro: ready ($venv, surfcl_msgs in $ws/install)"
}

# colcon builds C and C++ type support: a compiler is the one thing PyPI does not bring.
if ! command -v c++ >/dev/null 2>&1; then
    echo "installing a C/C++ compiler (g++) for colcon" >&2
    if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q g++
fi

case "${1:-all}" in
    all) setup_distro kilted; setup_distro jazzy ;;
    kilted|jazzy) setup_distro "$1" ;;
    *) echo "usage: $0 [kilted|jazzy|all]" >&2; exit 2 ;;
esac
