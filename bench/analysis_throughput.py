#!/usr/bin/env python3
"""Decode and analysis speed, and memory, against the budget of ARCHITECTURE.md section 8: >= 10 M
events/s on one core, at least half the speed of a bare libprotobuf parse of the same frames, and
flat memory (100 M events < 256 MiB). A synthetic launch-heavy recording is written once (1.6 GB
for 100 M events, kept in the build directory), then each mode reads it, side by side.
A benchmark, not a test: it prints, it does not assert."""
import argparse
import os
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--events", type=int, default=100_000_000)
ap.add_argument("--modes", default="parse,engine")
args = ap.parse_args()

build = os.path.abspath(args.build)
data = os.path.join(build, "bench-data")
os.makedirs(data, exist_ok=True)
path = os.path.join(data, "synthetic-%d.gwt" % args.events)
if not os.path.exists(path):
    subprocess.run([os.path.join(build, "bin", "make_synthetic_recording"), path, str(args.events)], check=True)
print("recording: %s (%.0f MB)" % (path, os.path.getsize(path) / 1e6))
results = {}
for mode in args.modes.split(","):
    out = subprocess.run([os.path.join(build, "bin", "analysis_throughput_bench"), mode, path],
                         capture_output=True, text=True, check=True).stdout
    fields = dict(kv.split("=") for kv in out.split())
    results[mode] = fields
print("%-8s %12s %10s %14s %14s" % ("mode", "events", "seconds", "M events/s", "peak RSS MiB"))
for mode, f in results.items():
    print("%-8s %12s %10s %14.1f %14s" % (mode, f["events"], f["seconds"], float(f["events_per_second"]) / 1e6,
                                          f["peak_rss_mb"]))
if "parse" in results:
    base = float(results["parse"]["events_per_second"])
    for mode, f in results.items():
        if mode != "parse":
            print("%s runs at %.2fx the speed of a bare libprotobuf parse (budget >= 0.5)" % (
                mode, float(f["events_per_second"]) / base))
