#!/usr/bin/env bash
# scripts/demo.sh: the five-minute tour. Builds gapwatch and the simulated CUDA stack
# (scripts/setup.sh --try: no test tooling, no tests), then runs the data-bound scenario on the
# simulated GPU and shows what happened, with the ground truth the simulator recorded. Output goes
# to out/demo/ (or $GAPWATCH_DEMO_OUT).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${GAPWATCH_BUILD_DIR:-build}"
out="${GAPWATCH_DEMO_OUT:-out/demo}"
scenario="examples/scenarios/data-bound.json"
sim="$build_dir/bin/gapwatch-sim"

die() { echo "demo.sh: error: $*" >&2; exit 1; }

scripts/setup.sh --try
[[ -f "$scenario" ]] || die "$scenario is missing: the example scenarios are not in this checkout yet"
[[ -x "$sim" ]] || die "$sim is missing: the scenario driver (tests/simcuda/workload) is not" \
  "built yet, so there is nothing to demonstrate"
mkdir -p "$out"
truth="$out/data-bound.truth.json"
profile_dir="$out/profile"
lib="$build_dir/lib/libgapwatch.so"
[[ -f "$lib" ]] || die "$lib is missing: the build did not produce the recording library"
# gapwatch profile wants a new or empty directory: this run's recordings only.
rm -rf "$profile_dir"

echo "gapwatch demo: a training loop whose GPU waits on its data pipeline (simulated GPU)"
echo "scenario: $scenario"
echo
echo "1. The job runs under gapwatch, with no change to it; gapwatch prints what it measured:"
echo "   gapwatch profile -o $profile_dir -- gapwatch-sim $scenario"
echo
# No GAPWATCH_CUPTI_PATH: gapwatch loads the libcupti beside the CUDA runtime the job loaded (here
# the simulated one in build/simcuda/lib; on a GPU machine the toolkit's or the PyTorch wheel's).
"$build_dir/bin/gapwatch" profile -o "$profile_dir" -- "$sim" "$scenario" --truth "$truth" --quiet
echo
echo "2. The recording and that report stay in $profile_dir/ (gapwatch-report.txt, .json);"
echo "   gapwatch report $profile_dir/*.gwt draws the report again from the recording."
echo
echo "3. What the simulator knows it did (the ground truth, $truth):"
echo
python3 - "$truth" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for p in t["processes"]:
    for d in p["devices"]:
        w = d["window"]["ns"]
        print("device %d: window %.1f ms, idle %.1f ms = %.1f%% of the window" % (
            d["device"], w / 1e6, d["idle_ns"] / 1e6, 100 * d["idle_fraction"]))
        causes = sorted(d["idle_by_cause"].items(), key=lambda kv: -kv[1])
        print("  idle by cause: " + ", ".join("%s %.1f ms" % (k, v / 1e6) for k, v in causes if v))
PY
echo
echo "gapwatch's numbers come from its recording alone; the simulator's come from what it knows it did."
echo "They agree: that is what tests/acceptance checks for every shipped scenario."
