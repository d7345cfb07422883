#!/usr/bin/env bash
# scripts/install-hta.sh: puts HTA (traceinsight, HTA 0.6.1 renamed, pinned in scripts/hta-requirements.txt)
# in a virtual environment, <build dir>/hta-venv, for the live HTA parity test
# (tests/unit/hta_parity_test.py live) and bench/kineto_import_bench.py. gapwatch does not need it.
# About 300 MB (pandas, numpy, plotly; no torch) and 40 s on a 2-core machine. Offline, without
# python3's venv module, or with GAPWATCH_SKIP_HTA=1, nothing is installed: those two skip HTA and
# say so. Exits 0 either way; prints one line only when it could not install.
#
# Usage: install-hta.sh <build dir>
set -uo pipefail

build_dir="${1:?usage: install-hta.sh <build dir>}"
requirements="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/hta-requirements.txt"
venv="$build_dir/hta-venv"

[[ "${GAPWATCH_SKIP_HTA:-0}" == 1 ]] && exit 0
# Installed already, from the same pins.
cmp -s "$requirements" "$venv/hta-requirements.txt" && exit 0

say_left_out() { echo "setup.sh: HTA not installed ($1): the live HTA parity test and HTA's side of the Kineto benchmark will be skipped" >&2; }

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
   ! "$venv/bin/python" -c "import hta.trace_analysis" >"$log" 2>&1; then
  say_left_out "pip install -r $(basename "$requirements") failed: $(tail -n 1 "$log")"
  rm -rf "$venv"
  exit 0
fi
cp "$requirements" "$venv/hta-requirements.txt"
