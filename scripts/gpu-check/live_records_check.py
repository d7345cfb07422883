#!/usr/bin/env python3
"""live_records_check.py OUT [--self-test]: do device records reach the recording while a light job
runs, on a real GPU? (issue 9 section 1; docs/usage.md, "Device records while the job runs")

Real CUPTI hands an activity buffer back by itself only when it is full. gapwatch's flusher asks
for finished records every 100 ms. This runs a light PyTorch job (one tiny kernel every 97 ms,
each followed by torch.cuda.synchronize(), printing the time it returned) under LD_PRELOAD,
kills it with SIGKILL after a few seconds, and compares the recording with what the job printed:
how many kernels had finished, how many are recorded, and the age at the kill of the oldest one
missing (the most SIGKILL lost). Three runs, killed at different moments.

Writes OUT/live_records.json and OUT/live_records.txt; keeps the recordings. Exits 0 when the
harness worked, whatever it found. --self-test runs the same harness on a stand-in job that
needs neither torch nor a GPU (it checks the harness, not CUPTI), in a few seconds."""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

JOB = r"""
import sys, time
import torch
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
next_t = time.monotonic()
while True:
    x.add_(1)
    torch.cuda.synchronize()
    print("ended %d" % time.monotonic_ns(), flush=True)
    next_t += 0.097
    time.sleep(max(0.0, next_t - time.monotonic()))
"""

FAKE_JOB = r"""
import time
print("ready", flush=True)
next_t = time.monotonic()
while True:
    print("ended %d" % time.monotonic_ns(), flush=True)
    next_t += 0.097
    time.sleep(max(0.0, next_t - time.monotonic()))
"""


def one_run(args, out, i, run_s):
    rec = os.path.join(out, "live-%d.gwt" % i)
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GAPWATCH_") and k != "GAPWATCH_BIN":
            env.pop(k)
    env.pop("CUDA_INJECTION64_PATH", None)
    if not args.self_test:
        env["LD_PRELOAD"] = args.lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        env["GAPWATCH_OUTPUT"] = rec
    p = subprocess.Popen([args.python, "-c", FAKE_JOB if args.self_test else JOB], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    ended, ready = [], threading.Event()

    def read():
        for line in p.stdout:
            if line.startswith("ready"):
                ready.set()
            elif line.startswith("ended "):
                ended.append(int(line.split()[1]))

    t = threading.Thread(target=read)
    t.start()
    ready.wait(60)
    time.sleep(run_s)
    killed = time.monotonic_ns()
    p.send_signal(signal.SIGKILL)
    _, err = p.communicate(timeout=30)
    t.join(10)
    ended = [e for e in ended if e <= killed]
    result = {"run": i, "ready": ready.is_set(), "ended": len(ended), "stderr_tail": err[-400:]}
    if args.self_test:
        result["recorded"] = None
        return result
    gw = args.gapwatch
    if not (os.path.exists(rec) and os.access(gw, os.X_OK)):
        result["recorded"] = None
        result["note"] = "no recording" if not os.path.exists(rec) else "no gapwatch CLI to read it"
        return result
    d = subprocess.run([gw, "dump", "--json", rec], capture_output=True, text=True, timeout=60)
    kernels = [json.loads(l) for l in d.stdout.splitlines() if '"activity"' in l]
    ends = sorted(e["end_ns"] for e in kernels if e.get("type") == "activity" and e.get("kind") == "kernel")
    # The first kernels of a PyTorch process are its own set-up (torch.zeros); match each printed
    # end with a kernel that ended within 5 ms before it.
    missing = [e for e in ended if not any(0 <= e - k < 5_000_000 for k in ends)]
    result.update({"recorded": len(ends), "missing": len(missing),
                   "oldest_missing_ms": round((killed - min(missing)) / 1e6, 1) if missing else 0.0})
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default=os.environ.get("GPU_CHECK_PYTHON", sys.executable))
    ap.add_argument("--lib", default=os.environ.get("GAPWATCH_LIB", os.path.join(REPO, "build", "lib", "libgapwatch.so")))
    ap.add_argument("--gapwatch", default=os.environ.get("GAPWATCH_BIN", os.path.join(REPO, "build", "bin", "gapwatch")))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = []
    for i in range(args.runs):
        try:
            results.append(one_run(args, args.out, i, random.uniform(2.0, 3.5) if not args.self_test else 0.5))
        except Exception as e:  # the harness reports, it does not fail the whole check
            results.append({"run": i, "error": repr(e)})
    with open(os.path.join(args.out, "live_records.json"), "w") as f:
        json.dump(results, f, indent=1)
    worst = max((r.get("oldest_missing_ms") or 0.0) for r in results) if results else 0.0
    lines = ["run %(run)s: %(ended)s kernels ended, %(recorded)s recorded, oldest missing %(oldest)s ms before SIGKILL"
             % dict(r, oldest=r.get("oldest_missing_ms"), ended=r.get("ended"), recorded=r.get("recorded"))
             for r in results]
    lines.append("SIGKILL lost at most the last %.0f ms of device records (expected: under 200 ms)" % worst)
    with open(os.path.join(args.out, "live_records.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
