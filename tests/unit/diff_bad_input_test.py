"""`gapwatch diff` on input it cannot compare: one clear line on stderr, exit 2, nothing on stdout,
never a crash; and on input it can (a run against itself, a directory of ranks against another, a
run without steps: compared, but --fail-if-slower exits 6 since the step time cannot be).

    diff_bad_input_test.py GAPWATCH REPO_ROOT

Uses the stored recordings of tests/golden (no simulator needed).
"""
import os
import shutil
import subprocess
import sys
import tempfile

EXIT_BAD_INPUT = 2
EXIT_NOT_COMPARED = 6

# Two different kernels, once each: a PyTorch profiler trace with no step in it.
NO_STEPS_TRACE = """{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 100, "dur": 5,
  "args": {"correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "alpha", "pid": 0, "tid": 7, "ts": 110, "dur": 50,
  "args": {"correlation": 1, "device": 0, "stream": 7}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 300, "dur": 5,
  "args": {"correlation": 2}},
 {"ph": "X", "cat": "kernel", "name": "beta", "pid": 0, "tid": 7, "ts": 310, "dur": 50,
  "args": {"correlation": 2, "device": 0, "stream": 7}}
]}
"""


def run(gapwatch, *args):
    return subprocess.run([gapwatch, "diff", *args], capture_output=True, text=True, timeout=300)


def expect_bad(gapwatch, args, words, failures):
    out = run(gapwatch, *args)
    lines = out.stderr.strip().splitlines()
    what = "gapwatch diff " + " ".join(args)
    if out.returncode != EXIT_BAD_INPUT:
        failures.append(f"{what}: exit {out.returncode}, expected {EXIT_BAD_INPUT}; stderr: {out.stderr!r}")
    elif len(lines) != 1:
        failures.append(f"{what}: expected one line on stderr, got {lines!r}")
    elif not all(w in lines[0] for w in words):
        failures.append(f"{what}: the line {lines[0]!r} does not say {words!r}")
    elif out.stdout:
        failures.append(f"{what}: wrote to stdout: {out.stdout[:200]!r}")


def main():
    gapwatch, repo_root = sys.argv[1], sys.argv[2]
    golden = os.path.join(repo_root, "tests", "golden")
    data_bound = os.path.join(golden, "data-bound.gwt")
    failures = []
    with tempfile.TemporaryDirectory() as work:
        empty = os.path.join(work, "empty")
        os.mkdir(empty)
        only_reports = os.path.join(work, "only-reports")
        os.mkdir(only_reports)
        for name in ("run.report.json", "gapwatch-report.json", "gapwatch-report.txt", "notes.md"):
            with open(os.path.join(only_reports, name), "w") as f:
                f.write("{}\n")
        two_ranks = os.path.join(work, "two-ranks")
        os.mkdir(two_ranks)
        for rank in (0, 1):
            shutil.copy(os.path.join(golden, f"nccl-bound.rank{rank}.gwt"), two_ranks)
        one_rank = os.path.join(work, "one-rank")
        os.mkdir(one_rank)
        shutil.copy(os.path.join(golden, "nccl-bound.rank0.gwt"), one_rank)
        other_rank = os.path.join(work, "other-rank")
        os.mkdir(other_rank)
        shutil.copy(os.path.join(golden, "nccl-bound.rank0.gwt"), other_rank)
        shutil.copy(os.path.join(golden, "data-bound.gwt"), other_rank)  # a process without a rank
        garbage = os.path.join(work, "garbage.gwt")
        with open(garbage, "wb") as f:
            f.write(b"not a recording at all\n")

        missing = os.path.join(work, "missing.gwt")
        expect_bad(gapwatch, [missing, data_bound], ["missing.gwt", "no such file or directory"], failures)
        expect_bad(gapwatch, [data_bound, missing], ["missing.gwt", "no such file or directory"], failures)
        expect_bad(gapwatch, [empty, data_bound], ["empty", "no recordings"], failures)
        expect_bad(gapwatch, [data_bound, only_reports], ["only-reports", "no recordings"], failures)
        expect_bad(gapwatch, [garbage, data_bound], ["garbage.gwt", "not a gapwatch recording"], failures)
        expect_bad(gapwatch, [two_ranks, one_rank], ["run A has 2 ranks and run B 1"], failures)
        expect_bad(gapwatch, [two_ranks, other_rank], ["without a rank"], failures)

        # A bad threshold is a command-line mistake (exit 1), not a crash.
        out = run(gapwatch, "--fail-if-slower", "fast", data_bound, data_bound)
        if out.returncode != 1 or "not a percentage" not in out.stderr:
            failures.append(f"--fail-if-slower fast: exit {out.returncode}, stderr {out.stderr!r}")

        # What it can compare: a run against itself is no change, and CI's check passes.
        out = run(gapwatch, "--fail-if-slower", "5%", data_bound, data_bound)
        if out.returncode != 0 or "no change beyond noise" not in out.stdout:
            failures.append(f"data-bound against itself: exit {out.returncode}, stdout {out.stdout[:400]!r}, "
                            f"stderr {out.stderr!r}")
        # Two directories of two ranks each, paired by rank number.
        out = run(gapwatch, two_ranks, two_ranks)
        if out.returncode != 0 or "2 ranks, paired by rank number" not in out.stdout:
            failures.append(f"two ranks against themselves: exit {out.returncode}, stdout {out.stdout[:400]!r}, "
                            f"stderr {out.stderr!r}")

        # A run without steps: nothing to test the step time on. Compared all the same (exit 0);
        # CI's check cannot pass: exit 6 with one line.
        no_steps = os.path.join(work, "no-steps.json")
        with open(no_steps, "w") as f:
            f.write(NO_STEPS_TRACE)
        out = run(gapwatch, no_steps, no_steps)
        if out.returncode != 0 or "Verdict: step time not compared: run A has fewer than two timed steps" not in out.stdout:
            failures.append(f"a run without steps: exit {out.returncode}, stdout {out.stdout[:400]!r}")
        out = run(gapwatch, "--fail-if-slower", "5%", no_steps, no_steps)
        lines = out.stderr.strip().splitlines()
        if out.returncode != EXIT_NOT_COMPARED or len(lines) != 1 or "step time not compared" not in lines[0]:
            failures.append(f"--fail-if-slower on a run without steps: exit {out.returncode}, stderr {out.stderr!r}")

    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print("ok: every bad input gave one line and exit 2; good input compared; no steps: exit 6 with the check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
