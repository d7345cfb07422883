#!/usr/bin/env bash
# Runs a test script with the tooling venv's Python (scripts/install-python-tooling.sh), or skips
# it (exit 77, ctest's SKIP_RETURN_CODE here) saying why, when the venv is not there or its Python
# cannot import the module built for CMake's Python.
# Usage: run_with_tooling.sh <venv python> <script> [args...]
python="$1"; shift
if [[ ! -x "$python" ]]; then
  echo "skipped: no Python tooling venv ($python): scripts/setup.sh installs it (left out offline or with GAPWATCH_SKIP_PYTHON_TOOLING=1)"
  exit 77
fi
exec "$python" "$@"
