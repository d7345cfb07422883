#!/usr/bin/env python3
"""What gapwatch adds to a kernel launch, measured side by side in one run (ARCHITECTURE.md section 8:
<= 50 ns median added per call; 16 launching threads no worse than 2x one thread; <= 16 bytes per
event in the recording of launch-heavy work).

Each configuration runs launch_overhead_bench several times, interleaved, and keeps the median, so
machine noise hits every configuration alike. Prints ratios, never asserts: a benchmark, not a test.

On the simulated runtime a launch costs about 1 us of the simulator's own work, so the differences
printed here are within its noise: gapwatch's cost per launch is measured by bench/launch_cost.py
on the bench-only trio (docs/performance.md). This one stays for the bytes per event of a
launch-heavy recording."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--launches", type=int, default=20000)
args = ap.parse_args()

build = os.path.abspath(args.build)
bench = os.path.join(build, "bin", "launch_overhead_bench")
lib = os.path.join(build, "lib", "libgapwatch.so")
cupti = os.path.join(build, "simcuda", "lib", "libcupti.so.13")
gapwatch = os.path.join(build, "bin", "gapwatch")

null_subscriber = os.path.join(build, "lib", "libnull_cupti_subscriber.so")

# "CUPTI, empty subscriber" is CUPTI's own cost with gapwatch's callbacks and activity kinds
# enabled but nothing done with them: gapwatch's own cost in CUPTI mode is the difference.
MODES = [("plain", {}), ("CUPTI, empty subscriber", {"CUDA_INJECTION64_PATH": null_subscriber}),
         ("gapwatch (CUPTI)", {"LD_PRELOAD": lib}),
         ("gapwatch (symbol hooks)", {"LD_PRELOAD": lib, "GAPWATCH_PROBES": "symbols"})]


def run(threads, extra, workdir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GAPWATCH_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
    env.update(extra)
    env["GAPWATCH_CUPTI_PATH"] = cupti
    env["GAPWATCH_OUTPUT"] = os.path.join(workdir, "bench-%p.gwt")
    env["GAPWATCH_LOG"] = "off"
    out = subprocess.run([bench, str(threads), str(args.launches)], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split("ns_per_launch=")[1])


def bytes_per_event(workdir):
    sizes = []
    for name in os.listdir(workdir):
        path = os.path.join(workdir, name)
        out = subprocess.run([gapwatch, "dump", "--json", path], capture_output=True, text=True)
        events = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
        counted = sum(1 for e in events if e["type"] in ("api_call", "activity", "nccl_call"))
        if counted:
            sizes.append(os.path.getsize(path) / counted)
        os.remove(path)
    return statistics.median(sizes) if sizes else float("nan")


print("launch loop on the simulated runtime: %d launches per thread, median of %d runs" % (args.launches, args.repeats))
print("CPU ns per launch call on the launching thread (median over threads, then over runs)")
print("%-26s %8s %12s %12s %10s" % ("configuration", "threads", "ns/launch", "added ns", "ratio"))
results = {}
for threads in (1, 16):
    samples = {name: [] for name, _ in MODES}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.repeats):
            for name, extra in MODES:
                samples[name].append(run(threads, extra, d))
        size = bytes_per_event(d)
    base = statistics.median(samples["plain"])
    for name, _ in MODES:
        m = statistics.median(samples[name])
        results[(name, threads)] = m - base
        print("%-26s %8d %12.1f %12.1f %9.2fx" % (name, threads, m, m - base, m / base))
    print("%-26s %8d %12s bytes/event in the recordings: %.1f" % ("", threads, "", size))
for threads in (1, 16):
    own = results[("gapwatch (CUPTI)", threads)] - results[("CUPTI, empty subscriber", threads)]
    print("%d thread(s): gapwatch's own cost in CUPTI mode (gapwatch - empty subscriber) = %.1f ns/launch "
          "(budget <= 50)" % (threads, own))
for name in ("gapwatch (CUPTI)", "gapwatch (symbol hooks)"):
    one, sixteen = results[(name, 1)], results[(name, 16)]
    ratio = sixteen / one if one > 0 else float("nan")
    print("%s: added cost at 16 threads / at 1 thread = %.2f (budget <= 2)" % (name, ratio))
