#!/usr/bin/env python3
"""A launch storm at the default settings: 4 threads, each on its own stream, launching 2 us kernels
back to back on the simulated runtime, as fast as it lets them, each launch call spending
--launch-api-ns in the runtime (1 us: a fast real cudaLaunchKernel) (tests/interpose/launch_storm.cpp),
under LD_PRELOAD=libgapwatch.so, --runs times. Prints per run the launches recorded and the events
dropped (the recording's Goodbye and drop counters). Nothing may be dropped (issue 9, section 5);
the CI test with the same program is tests/interpose/launch_storm_test.py. Not a test: it prints."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--runs", type=int, default=20)
ap.add_argument("--threads", type=int, default=4)
ap.add_argument("--launches", type=int, default=100000, help="per thread")
ap.add_argument("--kernel-ns", type=int, default=2000)
ap.add_argument("--launch-api-ns", type=int, default=1000)
ap.add_argument("--lib", help="another libgapwatch.so to storm (to compare with an older build)")
args = ap.parse_args()

build = os.path.abspath(args.build)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "interpose"))
os.environ["GAPWATCH_BUILD_DIR"] = build
import gwtest  # noqa: E402

storm = os.path.join(build, "bin", "launch_storm")
print("launch storm: %d threads x %d launches of %d ns kernels, launch calls of %d ns, default ring "
      "(GAPWATCH_RING_KB unset), %d runs, %s" % (args.threads, args.launches, args.kernel_ns, args.launch_api_ns,
                                                args.runs, args.lib or "build/lib/libgapwatch.so"))
print("%4s %10s %10s %10s %9s %12s" % ("run", "launches", "dropped", "cupti_drop", "wall_s", "launches/s"))
runs_with_drops = 0
for i in range(args.runs):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "storm.gwt")
        env = gwtest.gapwatch_env("preload", out, {"LD_PRELOAD": os.path.abspath(args.lib)} if args.lib else None)
        t = time.monotonic()
        r = gwtest.run([storm, str(args.threads), str(args.launches), str(args.kernel_ns), str(args.launch_api_ns)],
                       env, timeout=600, cwd=d)
        wall = time.monotonic() - t
        if r.returncode != 0:
            sys.exit("launch_storm failed (%d): %s" % (r.returncode, r.stderr.strip()[-400:]))
        rep = subprocess.run([gwtest.GAPWATCH, "report", "--json", out], capture_output=True, text=True, timeout=600)
        if rep.returncode != 0:
            sys.exit("gapwatch report failed: %s" % rep.stderr.strip()[-400:])
        p = json.loads(rep.stdout)["processes"][0]
        launches = p["events"]["launches"]
        dropped, cupti = p["drops"]["events_dropped"], p["drops"]["cupti_records_dropped"]
        runs_with_drops += bool(dropped or cupti or launches != args.threads * args.launches)
        print("%4d %10d %10d %10d %9.2f %12.0f" % (i + 1, launches, dropped, cupti, wall, launches / wall))
        sys.stdout.flush()
print("runs that lost anything: %d of %d" % (runs_with_drops, args.runs))
