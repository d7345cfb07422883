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
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

[[ "${GAPWATCH_SKIP_HTA:-0}" == 1 ]] && exit 0
exec "$here/pinned-venv.sh" HTA "$build_dir/hta-venv" "$here/hta-requirements.txt" \
  "the live HTA parity test and HTA's side of the Kineto benchmark will be skipped" \
  python -c "import hta.trace_analysis"
