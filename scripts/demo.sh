#!/usr/bin/env bash
# scripts/demo.sh: the five-minute tour. Builds what is needed (scripts/setup.sh), then runs the
# data-bound scenario on the simulated GPU and shows what happened, with the ground truth the
# simulator recorded. Output goes to out/demo/ (or $GAPWATCH_DEMO_OUT).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${GAPWATCH_BUILD_DIR:-build}"
out="${GAPWATCH_DEMO_OUT:-out/demo}"
scenario="examples/scenarios/data-bound.json"
sim="$build_dir/bin/gapwatch-sim"

die() { echo "demo.sh: error: $*" >&2; exit 1; }

scripts/setup.sh
[[ -f "$scenario" ]] || die "$scenario is missing: the example scenarios are not in this checkout yet"
[[ -x "$sim" ]] || die "$sim is missing: the scenario driver (tests/simcuda/workload) is not" \
  "built yet, so there is nothing to demonstrate"
mkdir -p "$out"
truth="$out/data-bound.truth.json"

echo "gapwatch demo: a training loop whose GPU waits on its data pipeline (simulated GPU)"
echo "scenario: $scenario"
echo
"$sim" "$scenario" --truth "$truth"
echo
echo "Ground truth (idle time per cause, as the simulator produced it): $truth"
echo "Note: recording (libgapwatch.so) and the report are not built yet, so this shows the" \
  "simulator's own account; gapwatch's measurement will appear here beside it."
