#!/usr/bin/env bash
# scripts/test.sh: build (through setup.sh) and run every test with ctest. The exit code is
# ctest's. Extra arguments go to ctest, e.g. `scripts/test.sh -R proto_schema` or `-L unit`.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GAPWATCH_BUILD_DIR:-$repo_root/build}"

"$repo_root/scripts/setup.sh"
status=0
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j"${JOBS:-2}" "$@" || status=$?
exit "$status"
