#!/usr/bin/env bash
# scripts/demo.sh: the five-minute tour. Builds gapwatch and the simulated CUDA stack
# (scripts/setup.sh --try: no test tooling, no tests), then records a training loop on the
# simulated GPU with gapwatch profile and shows what happened beside what the job knows it did:
#
# - with PyTorch importable (any CPU build; Debian 12's python3-torch is enough, and --try does not
#   install it: it is large): examples/train_dataloader.py, a Python loop fed by a real
#   torch.utils.data.DataLoader with per-step metrics in Python, whose report names the lines the
#   host spent the GPU's idle time in, beside the times the program measured itself;
# - without it: the data-bound scenario of gapwatch-sim (C++, no Python lines), beside the
#   simulator's ground truth, and a line saying why.
#
# Output goes to out/demo/ (or $GAPWATCH_DEMO_OUT). GAPWATCH_DEMO_PYTHON names the interpreter to
# try for PyTorch (default: python3 on PATH, then /usr/bin/python3).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${GAPWATCH_BUILD_DIR:-build}"
out="${GAPWATCH_DEMO_OUT:-out/demo}"

die() { echo "demo.sh: error: $*" >&2; exit 1; }

scripts/setup.sh --try
lib="$build_dir/lib/libgapwatch.so"
[[ -f "$lib" ]] || die "$lib is missing: the build did not produce the recording library"
mkdir -p "$out"
profile_dir="$out/profile"
# gapwatch profile wants a new or empty directory: this run's recordings only.
rm -rf "$profile_dir"

# An interpreter that imports torch, or why none does.
torch_python=""
no_torch=""
candidates=(python3 /usr/bin/python3)
[[ -n "${GAPWATCH_DEMO_PYTHON:-}" ]] && candidates=("$GAPWATCH_DEMO_PYTHON" "${candidates[@]}")
for candidate in "${candidates[@]}"; do
  command -v "$candidate" >/dev/null 2>&1 || continue
  if "$candidate" -c 'import torch, torch.utils.data' >/dev/null 2>&1; then
    torch_python="$(command -v "$candidate")"
    break
  fi
  no_torch+="${no_torch:+, }$candidate cannot import torch"
done
[[ -n "$torch_python" || -n "$no_torch" ]] || no_torch="no python3 found"

if [[ -n "$torch_python" ]]; then
  program="examples/train_dataloader.py"
  variant="mixed"
  truth="$out/train_dataloader.truth.json"
  [[ -f "$program" ]] || die "$program is missing from this checkout"
  [[ -f "$build_dir/simcuda/lib/libcudart.so.13" ]] || die "$build_dir/simcuda/lib/libcudart.so.13 is" \
    "missing: the simulated CUDA stack is not built"
  echo "gapwatch demo: a PyTorch training loop whose GPU waits on its host (simulated GPU)"
  echo "job: $program --variant $variant: a torch.utils.data.DataLoader with 2 workers and slow items,"
  echo "     per-step metrics in pure Python, one kernel and a loss read per step"
  echo
  echo "1. The job runs under gapwatch, with no change to it; gapwatch prints what it measured:"
  echo "   gapwatch profile -o $profile_dir -- python3 $program --variant $variant"
  echo
  # No GAPWATCH_CUPTI_PATH: gapwatch loads the libcupti beside the CUDA runtime the job loaded
  # (here the simulated one in build/simcuda/lib; on a GPU machine the toolkit's or the wheel's).
  "$build_dir/bin/gapwatch" profile -o "$profile_dir" -- "$torch_python" "$program" --variant "$variant" \
    --truth "$truth" --simcuda "$build_dir/simcuda/lib"
  echo
  echo "2. The recording and that report stay in $profile_dir/ (gapwatch-report.txt, .json);"
  echo "   gapwatch report $profile_dir/*.gwt draws the report again from the recording."
  echo
  echo "3. What the program measured itself (time.perf_counter around each call; $truth):"
  echo
  python3 - "$truth" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
def ms(ns):
    return "%.0f ms" % (ns / 1e6)
print("host time between kernels: %s in the %d gaps between the %d steps' kernels (the GPU idles through it)" % (
    ms(t["host_ns"]), t["gaps"], t["steps"]))
for what, key in (("waiting in next() for the DataLoader's next batch", "loader"),
                  ("in compute_metrics (pure Python)", "metrics")):
    print("  %-51s %8s = %3.0f%%" % (what, ms(t[key + "_ns"]), 100 * t[key + "_share"]))
PY
  echo
  echo "gapwatch's numbers come from its recording alone (the launching thread's Python stack, sampled"
  echo "while the GPU waited); the program's come from its own clock. tests/interpose/train_loop_test.py"
  echo "checks that they agree, for this loop and two others."
  exit 0
fi

scenario="examples/scenarios/data-bound.json"
sim="$build_dir/bin/gapwatch-sim"
[[ -f "$scenario" ]] || die "$scenario is missing: the example scenarios are not in this checkout yet"
[[ -x "$sim" ]] || die "$sim is missing: the scenario driver (tests/simcuda/workload) is not" \
  "built yet, so there is nothing to demonstrate"
truth="$out/data-bound.truth.json"

echo "gapwatch demo: a training loop whose GPU waits on its data pipeline (simulated GPU)"
echo "scenario: $scenario"
echo "(No PyTorch here: $no_torch. So this is the simulator's C++ scenario,"
echo " whose report cannot name Python lines; with PyTorch (a CPU build will do: Debian's python3-torch)"
echo " the demo runs examples/train_dataloader.py instead, a Python loop with a real DataLoader.)"
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
