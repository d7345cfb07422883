#!/usr/bin/env bash
# scripts/pinned-venv.sh: makes a virtual environment holding exactly the pins of one requirements
# file, for test and benchmark tooling that gapwatch itself never needs (install-hta.sh,
# install-python-tooling.sh). Installs with --no-deps (the file pins every package), waits a
# bounded time (an offline machine must not hang setup), and checks the result with a command.
# Exits 0 either way: what it could not install it leaves out, with one line naming NAME, why, and
# what that means (CONSEQUENCE); the tests that need it then skip and say so.
#
# Usage: pinned-venv.sh NAME VENV REQUIREMENTS CONSEQUENCE CHECK...
#   CHECK... runs with VENV/bin first on PATH; the venv counts as installed only when it exits 0.
# A second run with the same pins does nothing: the copy of REQUIREMENTS in VENV, written last,
# marks a venv installed from them.
set -uo pipefail

name="${1:?usage: pinned-venv.sh NAME VENV REQUIREMENTS CONSEQUENCE CHECK...}"
venv="${2:?}"
requirements="${3:?}"
consequence="${4:?}"
shift 4
(($#)) || { echo "pinned-venv.sh: no check command given" >&2; exit 2; }
marker="$venv/$(basename "$requirements")"

cmp -s "$requirements" "$marker" && exit 0

say_left_out() { echo "setup.sh: $name not installed ($1): $consequence" >&2; }

python="$(command -v python3 || true)"
[[ -n "$python" ]] || { say_left_out "no python3"; exit 0; }

# Built in place (a venv's scripts name its path).
rm -rf "$venv"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! "$python" -m venv "$venv" >"$log" 2>&1; then
  say_left_out "python3 -m venv failed: $(tail -n 1 "$log")"
  rm -rf "$venv"
  exit 0
fi
if ! timeout 600 "$venv/bin/python" -m pip install --quiet --no-deps --disable-pip-version-check \
     --retries 1 --timeout 15 -r "$requirements" >"$log" 2>&1; then
  say_left_out "pip install -r $(basename "$requirements") failed: $(tail -n 1 "$log")"
  rm -rf "$venv"
  exit 0
fi
if ! PATH="$venv/bin:$PATH" "$@" >"$log" 2>&1; then
  say_left_out "installed, but its check failed ($*): $(tail -n 1 "$log")"
  rm -rf "$venv"
  exit 0
fi
cp "$requirements" "$marker"
