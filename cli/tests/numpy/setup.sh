#!/bin/sh
# Creates the Python venv with numpy that cli/tests/formats.rs uses to load the `--npz` archives
# (as a numpy user would) and compare them with the JSON reports of the same runs.
# Usage: cli/tests/numpy/setup.sh [VENV_DIR]   (default: cli/tests/numpy/.venv)
# Needs network access once (PyPI).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-$here/.venv}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import numpy" 2>/dev/null; then
    echo "numpy already installed in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "numpy==2.2.6"
"$venv/bin/python" -c "import numpy" && echo "numpy installed in $venv"
