#!/bin/sh
# Creates the Python venv of the tests that talk to Python: Cyclone DDS for the interop test
# (tests/interop_cyclone.rs), numpy and OpenCV for the conversions of the interface package
# (tests/opencv_conversions.rs).
# Usage: ros-node/tests/peer/setup.sh [VENV_DIR]   (default: ros-node/tests/peer/.venv)
# Needs network access once (PyPI); the tests themselves then run offline.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-$here/.venv}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import cyclonedds, cv2, numpy" 2>/dev/null; then
    echo "cyclonedds, numpy and opencv already installed in $venv"
    exit 0
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "cyclonedds==11.0.1" "numpy==2.1.3" "opencv-python-headless==4.10.0.84"
"$venv/bin/python" -c "import cyclonedds, cv2, numpy" && echo "cyclonedds, numpy and opencv installed in $venv"
