#!/usr/bin/env bash
# Create the virtual environment and install the project with the given extras.
#   scripts/python_env.sh VENV EXTRAS      e.g. scripts/python_env.sh .venv course,test
# Skips the install when pyproject.toml has not changed since the last one for these extras.
set -euo pipefail
venv=$1 extras=$2
stamp="$venv/.installed-${extras//,/-}"

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then exit 0; fi

echo "Installing the course's Python packages into $venv (first time: a few minutes)..."
"$venv/bin/python" -m pip install -q --upgrade pip
# torch first and pinned: a CPU wheel of exactly this version, never the CUDA bundle.
"$venv/bin/python" -m pip install -q "torch==2.13.0"
"$venv/bin/python" -m pip install -q -e ".[${extras}]"
# Build matplotlib's font cache once, outside the notebooks (it prints while it does).
"$venv/bin/python" -c "import matplotlib.pyplot" >/dev/null 2>&1
touch "$stamp"
