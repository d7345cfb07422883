#!/usr/bin/env bash
# scripts/regenerate-screenshots.sh: the HTML report's screenshots in docs/images/ (README.md shows
# them), rendered by headless chromium from the two-rank nccl-bound golden recordings, by the same
# test that checks the page renders (tests/unit/html_report_test.py render). Needs a built tree
# (scripts/setup.sh) and Debian's chromium.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GAPWATCH_BUILD_DIR:-$repo_root/build}"
python3 "$repo_root/tests/unit/html_report_test.py" render "$build_dir/bin/gapwatch" "$repo_root/tests/golden" \
  "$repo_root/docs/images"
