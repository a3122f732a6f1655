#!/bin/sh
# Creates the Python venv with Cyclone DDS that the interop test (tests/interop_cyclone.rs) uses.
# Usage: ros-node/tests/peer/setup.sh [VENV_DIR]   (default: ros-node/tests/peer/.venv)
# Needs network access once (PyPI); the test itself then runs offline in a private namespace.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-$here/.venv}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import cyclonedds" 2>/dev/null; then
    echo "cyclonedds already installed in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "cyclonedds==11.0.1"
"$venv/bin/python" -c "import cyclonedds" && echo "cyclonedds installed in $venv"
