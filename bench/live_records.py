#!/usr/bin/env python3
"""How soon a device record reaches the recording after its work ends, measured the only way that
needs no reader of a growing file: a light job (one 1 ms kernel every 97 ms, each waited for, ending at every phase of the recorder's
100 ms pulls:
tests/interpose/steady_launcher.cpp) is killed with SIGKILL at a random moment, and the recording
is compared with the kernel end times the job printed.

For each run it prints how many kernels had ended and how many are in the recording, and the age
at the kill of the oldest kernel that is missing (every kernel older than that was recorded). The
largest such age over all runs bounds what SIGKILL loses, and how late a record reaches the file.
Prints, never asserts: a benchmark, not a test (tests/interpose/live_records_test.py is the test)."""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--runs", type=int, default=10)
args = ap.parse_args()

build = os.path.abspath(args.build)
steady = os.path.join(build, "bin", "steady_launcher")
gapwatch = os.path.join(build, "bin", "gapwatch")
env = {k: v for k, v in os.environ.items()
       if not k.startswith("GAPWATCH_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
env.update({"LD_PRELOAD": os.path.join(build, "lib", "libgapwatch.so"),
            "GAPWATCH_CUPTI_PATH": os.path.join(build, "simcuda", "lib", "libcupti.so.13"), "GAPWATCH_LOG": "off"})


def one_run(workdir, run_s):
    env["GAPWATCH_OUTPUT"] = os.path.join(workdir, "r.gwt")
    p = subprocess.Popen([steady], env=env, cwd=workdir, stdout=subprocess.PIPE, text=True)
    ended = []

    def read():  # the kill comes at a random moment, not just after a kernel
        for line in p.stdout:
            if line.startswith("ended "):
                ended.append(int(line.split()[2]))

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(run_s)
    killed = time.monotonic_ns()
    p.send_signal(signal.SIGKILL)
    p.wait()
    reader.join()
    ended = [t for t in ended if t <= killed]
    out = subprocess.run([gapwatch, "dump", "--json", env["GAPWATCH_OUTPUT"]], capture_output=True, text=True)
    recorded = {e["end_ns"] for e in map(json.loads, out.stdout.splitlines())
                if e["type"] == "activity" and e["kind"] == "kernel"}
    # Kernels are matched by end time: the job printed its wait's return, just after the device end.
    missing = [t for t in ended if not any(0 <= t - r < 5_000_000 for r in recorded)]
    oldest_missing_age_ms = (killed - min(missing)) / 1e6 if missing else 0.0
    newest_age_ms = (killed - max(ended)) / 1e6 if ended else 0.0
    return len(ended), len(recorded), oldest_missing_age_ms, newest_age_ms


ages = []
print("%-5s %8s %9s %22s %30s" % ("run", "ended", "recorded", "last end, ms before kill",
                                   "oldest missing, ms before kill"))
for i in range(args.runs):
    with tempfile.TemporaryDirectory() as d:
        ended, recorded, age, newest = one_run(d, random.uniform(1.5, 3.0))
    ages.append(age)
    print("%-5d %8d %9d %22.1f %30.1f" % (i, ended, recorded, newest, age))
print("SIGKILL lost at most the last %.0f ms of device records (median %.0f ms, %d runs)"
      % (max(ages), statistics.median(ages), len(ages)))
sys.exit(0)
