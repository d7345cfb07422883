"""Measures how often `gapwatch diff` calls one of two runs of the same job slower (its false-alarm
rate at the 5 % level), and how often it finds a run that really is slower.

Usage: diff_false_alarm_rate.py [--pairs N] [--check MAX_RATE] [--jobs J,...] [--gapwatch PATH]
       (GAPWATCH_BUILD_DIR: the build whose simulator records, default build/)

Each pair is two recordings of one scenario on the simulated CUDA stack that differ only in the
scenario's seed (its jitter draws), plus the machine's own noise. Three jobs:
  - data-bound, 24 steps: the main thread loads data for 20 ms +- 4 ms a step;
  - compile: the same with a 150 ms compile in the first step (a warm-up step the test leaves out);
  - 3 steps: the same job profiled for three steps only.
For each pair, A against B: "slower" when the verdict is "B is slower" (the CI gate of
`--fail-if-slower`); a false alarm. And A against a slowed copy of B (data loading 20 % longer,
about 4 ms a step): found when "B is slower". Prints one line per job and the totals; with
--check, exits 1 when a job's false-alarm rate is over MAX_RATE (CI runs a few pairs this way; the
measurement in docs/analysis.md is 100 pairs a job).
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwtest  # noqa: E402
from diff_scenarios_test import record  # noqa: E402  (a scenario recorded under the library)


def job(kind, seed, slowed=False):
    with open(os.path.join(gwtest.SCENARIOS, "data-bound.json")) as f:
        scenario = json.load(f)
    scenario = copy.deepcopy(scenario)
    scenario["seed"] = seed
    scenario["steps"]["count"] = 3 if kind == "3 steps" else 24
    for op in scenario["steps"]["ops"]:
        if op.get("host") == "data":
            op["duration_us"] = 24000 if slowed else 20000
            op["jitter_us"] = 4000
    if kind == "compile":
        scenario["steps"]["ops"].insert(0, {"host": "compile", "duration_us": 150000, "until_step": 1})
    return scenario


def verdict(gapwatch, a, b):
    run = subprocess.run([gapwatch, "diff", "--json", a, b], capture_output=True, text=True, timeout=300)
    if run.returncode not in (0, 5, 6):
        raise RuntimeError("gapwatch diff failed (%d): %s" % (run.returncode, run.stderr))
    return json.loads(run.stdout)["verdict"]


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--check", type=float, default=None)
    parser.add_argument("--jobs", default="data-bound,compile,3 steps", help="which jobs, comma-separated")
    parser.add_argument("--gapwatch", default=gwtest.GAPWATCH, help="the gapwatch whose diff is measured "
                        "(another build's, to compare; the recordings are always this build's)")
    args = parser.parse_args(argv[1:])
    failures = []
    print(f"{'job':<12} {'pairs':>5} {'called slower':>14} {'rate':>6} {'called faster':>14} {'slowed found':>13}")
    for kind in args.jobs.split(","):
        slower = faster = found = 0
        with tempfile.TemporaryDirectory() as work:
            for i in range(args.pairs):
                seed = 1000 + 2 * i
                a = record(job(kind, seed), os.path.join(work, f"{i}-a"))
                b = record(job(kind, seed + 1), os.path.join(work, f"{i}-b"))
                s = record(job(kind, seed + 1, slowed=True), os.path.join(work, f"{i}-s"))
                v = verdict(args.gapwatch, a, b)
                slower += v.startswith("B is slower")
                faster += v.startswith("B is faster")
                found += verdict(args.gapwatch, a, s).startswith("B is slower")
                for d in (a, b, s):
                    subprocess.run(["rm", "-rf", os.path.dirname(d)])
        rate = slower / args.pairs
        print(f"{kind:<12} {args.pairs:>5} {slower:>14} {rate:>6.1%} {faster:>14} {found:>10}/{args.pairs}",
              flush=True)
        if args.check is not None and rate > args.check:
            failures.append(f"{kind}: {slower} of {args.pairs} pairs of the same job called slower ({rate:.0%})")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
