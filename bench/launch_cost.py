#!/usr/bin/env python3
"""gapwatch's own cost per launch, where it can be seen (issue 9, section 5).

bench/fast_launch_bench runs on the bench-only CUDA trio (bench/fastcuda/): a launch there is the
CUPTI enter callback(s), nothing, the exit callback(s), so a profiler's nanoseconds are most of
what is timed. Each configuration is run --repeats times, all configurations interleaved, so machine
noise hits every one alike; each run times --launches launches per thread (CPU time of the launching
thread, median over threads). Printed per configuration: median, p10 and p90 over the runs, the
median added over plain, and the callbacks fired per launch. Never asserts a time: a benchmark.

--baseline-lib PATH: another build's libgapwatch.so (an older commit's, built in a worktree) is
measured in the same runs as this build's, each gapwatch configuration once with each library,
interleaved; printed as extra "baseline" rows, and at the end as this build's / the baseline's
ns per launch: the median of the per-run ratios (each run beside its baseline run), the
difference of the medians and the ratio of the p10s (the least disturbed runs)."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--repeats", type=int, default=15)
ap.add_argument("--launches", type=int, default=50000, help="per thread and run")
ap.add_argument("--threads", default="1,4,16")
ap.add_argument("--pace-ns", type=int, default=0, help="start a launch every N ns; 0: back to back")
ap.add_argument("--baseline-lib", metavar="PATH",
                help="another libgapwatch.so (e.g. an older commit's), measured beside this build's in the same runs")
args = ap.parse_args()

build = os.path.abspath(args.build)
bench = os.path.join(build, "bin", "fast_launch_bench")
lib = os.path.join(build, "lib", "libgapwatch.so")
cupti = os.path.join(build, "bench", "fastcuda", "lib", "libcupti.so.13")
null = os.path.join(build, "lib", "libnull_cupti_subscriber.so")
baseline = os.path.abspath(args.baseline_lib) if args.baseline_lib else None
for path in (bench, lib, cupti, null) + ((baseline,) if baseline else ()):
    if not os.path.exists(path):
        sys.exit("launch_cost.py: %s is missing: build first (scripts/setup.sh)" % path)
gapwatch_libs = (lib, baseline) if baseline else (lib,)

# (name, environment, APIs it is measured on). Symbol hooks see runtime launches only.
CONFIGS = [
    ("plain", {}, ("runtime", "driver")),
    ("CUPTI, empty subscriber", {"CUDA_INJECTION64_PATH": null}, ("runtime", "driver")),
    ("CUPTI, empty, runtime ids only", {"CUDA_INJECTION64_PATH": null, "NULL_SUBSCRIBER_DOMAINS": "runtime"},
     ("runtime",)),
    ("CUPTI, empty, driver ids only", {"CUDA_INJECTION64_PATH": null, "NULL_SUBSCRIBER_DOMAINS": "driver"},
     ("runtime", "driver")),
]


def gapwatch_configs(library, label):
    return [
        ("%s (CUPTI)" % label, {"LD_PRELOAD": library}, ("runtime", "driver")),
        # Loaded by the driver alone: the CUPTI probe without the runtime hooks around the call.
        ("%s (CUPTI, injection)" % label, {"CUDA_INJECTION64_PATH": library}, ("runtime", "driver")),
        ("%s (symbol hooks)" % label, {"LD_PRELOAD": library, "GAPWATCH_PROBES": "symbols"}, ("runtime",)),
    ]


GAPWATCH = gapwatch_configs(lib, "gapwatch")
BASELINE = gapwatch_configs(baseline, "baseline") if baseline else []
# Each baseline configuration runs right beside its own (and, on odd runs, before it).
CONFIGS += [c for pair in zip(GAPWATCH, BASELINE) for c in pair] if baseline else GAPWATCH
LINE = re.compile(r"callbacks_per_launch=([\d.]+) ns_per_launch=([\d.]+)")
RECORDED = re.compile(r"recorded (\d+) events(?: \((\d+) lost\))?")


def run(threads, api, extra, workdir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GAPWATCH_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
    env.update(extra)
    env["GAPWATCH_CUPTI_PATH"] = cupti
    env["GAPWATCH_OUTPUT"] = os.path.join(workdir, "bench-%p.gwt")
    if not args.pace_ns:
        # A ring that holds the whole run: back to back, the bench launches far faster than any
        # real runtime can (tens of ns, not microseconds), and a drop would make the hot path look cheaper.
        env["GAPWATCH_RING_KB"] = str(max(1024, (args.launches + 2000) * 80 * 2 // 1024))
    out = subprocess.run([bench, str(threads), str(args.launches), api, str(args.pace_ns)], env=env,
                         capture_output=True, text=True)
    m = LINE.search(out.stdout)
    if out.returncode != 0 or not m:
        sys.exit("launch_cost.py: %s failed (%d): %s" % (bench, out.returncode, out.stderr.strip()[-400:]))
    # A CUPTI configuration whose callbacks never fired measured nothing: gapwatch (or the empty
    # subscriber) did not take the bench's CUPTI, e.g. it now needs an entry point fastcuda lacks.
    if "GAPWATCH_PROBES" not in extra and extra and float(m.group(1)) == 0:
        sys.exit("launch_cost.py: no CUPTI callback fired under %s: %s" % (extra, out.stderr.strip()[-400:]))
    for name in os.listdir(workdir):
        os.remove(os.path.join(workdir, name))
    lost = 0
    if extra.get("LD_PRELOAD") in gapwatch_libs or extra.get("CUDA_INJECTION64_PATH") in gapwatch_libs:
        r = RECORDED.search(out.stderr)
        if not r:
            sys.exit("launch_cost.py: gapwatch did not record: %s" % out.stderr.strip()[-400:])
        lost = int(r.group(2) or 0)
        # Every timed and warm-up launch is one recorded call: fewer means gapwatch missed launches.
        if int(r.group(1)) + lost < threads * (args.launches + 1000):
            sys.exit("launch_cost.py: gapwatch recorded %s events for %d launches" %
                     (r.group(1), threads * (args.launches + 1000)))
    return float(m.group(2)), float(m.group(1)), lost


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


print("fast_launch_bench on the bench-only CUDA trio: %d launches per thread, %d interleaved runs, %s" %
      (args.launches, args.repeats, "a launch every %d ns, launch calls timed by TSC, default ring" % args.pace_ns
       if args.pace_ns else "back to back, thread CPU time, a ring holding the whole run"))
print("ns per launch on the launching thread (median over threads); over the runs: median, p10, p90")
print("%-31s %-7s %3s %9s %8s %8s %9s %8s %6s %8s" % ("configuration", "api", "thr", "median", "p10", "p90",
                                                        "added", "ratio", "cb/l", "lost"))
threads_list = [int(t) for t in args.threads.split(",")]
summary = {}
summary_p10 = {}  # the least disturbed runs: machine noise only ever adds time
paired = {}  # (name, api, threads) -> per-run ratios, this build's over the baseline's
total_lost = 0
with tempfile.TemporaryDirectory() as d:
    for threads in threads_list:
        for api in ("runtime", "driver"):
            configs = [(n, e) for n, e, apis in CONFIGS if api in apis]
            samples = {n: [] for n, _ in configs}
            cbs = {}
            lost_by = {n: 0 for n, _ in configs}
            for repeat in range(args.repeats):
                for name, extra in (configs[::-1] if baseline and repeat % 2 else configs):
                    ns, cb, lost = run(threads, api, extra, d)
                    samples[name].append(ns)
                    cbs[name] = cb
                    lost_by[name] += lost
                    total_lost += lost
            for (name, _, _), (bname, _, _) in zip(GAPWATCH, BASELINE):
                if name in samples:
                    paired[(name, api, threads)] = [a / b for a, b in zip(samples[name], samples[bname])]
            base = statistics.median(samples["plain"])
            for name, _ in configs:
                xs = samples[name]
                m = statistics.median(xs)
                summary[(name, api, threads)] = m - base
                summary_p10[(name, api, threads)] = pct(xs, 0.1)
                print("%-31s %-7s %3d %9.2f %8.2f %8.2f %9.2f %7.2fx %6.2f %8d" %
                      (name, api, threads, m, pct(xs, 0.1), pct(xs, 0.9), m - base, m / base, cbs[name], lost_by[name]))
            sys.stdout.flush()
print("events lost by gapwatch in all runs: %d" % total_lost)
for threads in threads_list:
    for api in ("runtime", "driver"):
        own = summary[("gapwatch (CUPTI)", api, threads)] - summary[("CUPTI, empty subscriber", api, threads)]
        own10 = summary_p10[("gapwatch (CUPTI)", api, threads)] - summary_p10[("CUPTI, empty subscriber", api, threads)]
        print("%2d thread(s), %-7s launch: gapwatch's own cost in CUPTI mode (gapwatch - empty subscriber) = "
              "%.1f ns/launch (medians), %.1f (p10s)" % (threads, api, own, own10))
        inj = summary[("gapwatch (CUPTI, injection)", api, threads)] - summary[("CUPTI, empty subscriber", api, threads)]
        print("%2d thread(s), %-7s launch: the same, loaded by CUDA_INJECTION64_PATH (no runtime hooks) = "
              "%.1f ns/launch" % (threads, api, inj))
    hooks = summary[("gapwatch (symbol hooks)", "runtime", threads)]
    hooks10 = summary_p10[("gapwatch (symbol hooks)", "runtime", threads)] - summary_p10[("plain", "runtime", threads)]
    print("%2d thread(s), runtime launch: gapwatch's cost with the symbol hooks (hooks - plain) = %.1f ns/launch "
          "(medians), %.1f (p10s)" % (threads, hooks, hooks10))
if baseline:
    print("this build's library against the baseline (%s), the same runs interleaved:" % baseline)
    for threads in threads_list:
        for api in ("runtime", "driver"):
            for (name, _, apis), (bname, _, _) in zip(GAPWATCH, BASELINE):
                if api not in apis:
                    continue
                ratios = paired[(name, api, threads)]
                diff = summary[(name, api, threads)] - summary[(bname, api, threads)]
                p10 = summary_p10[(name, api, threads)] / summary_p10[(bname, api, threads)]
                print("%2d thread(s), %-7s launch, %-17s this build / baseline = %.3fx (median of per-run ratios; "
                      "their p10 %.3f, p90 %.3f), %+.1f ns/launch (medians); p10s: %.3fx" %
                      (threads, api, name[len("gapwatch ("):-1] + ":", statistics.median(ratios), pct(ratios, 0.1),
                       pct(ratios, 0.9), diff, p10))
