#!/usr/bin/env bash
# scripts/test.sh: build (through setup.sh, and the fuzz tree through fuzz.sh --build) and run every
# test with ctest. The exit code is ctest's. Extra arguments go to ctest, e.g.
# `scripts/test.sh -R proto_schema`, `-L unit` or `-LE fuzz`.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GAPWATCH_BUILD_DIR:-$repo_root/build}"

"$repo_root/scripts/setup.sh"
# The fuzz targets' own clang tree, beside this one (<build>-fuzz; tests/fuzz/README.md): ctest's
# fuzz.smoke.* tests run each fuzzer there for 5 s. Where clang or libFuzzer is missing, fuzz.sh
# says so and builds nothing, and those tests are reported as skipped (fuzz.replay.* still run).
GAPWATCH_FUZZ_BUILD_DIR="$build_dir-fuzz" "$repo_root/scripts/fuzz.sh" --build
status=0
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j"${JOBS:-2}" "$@" || status=$?
exit "$status"
