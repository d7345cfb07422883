#!/usr/bin/env python3
"""What the Python sampler (interpose/python_sampler.h) costs: CPU per sampled second and per
sample, at two stack depths, and what it does to a job whose GPU is busy.

A child (this file, --child) runs on the simulated runtime through ctypes, under gapwatch with
the sampler off (GAPWATCH_PY_SAMPLING=0) and on (the default, 10 ms), the two interleaved (their
order rotated each repetition) so machine noise hits both alike:
- idle: each step launches a 1 ms kernel, then waits 50 ms in time.sleep at the bottom of a
  Python stack of the given depth (a DataLoader's queue wait, the case the sampler is for), then
  synchronizes. The sampler runs on the flusher thread: the flusher's CPU time
  (/proc/self/task/TID/schedstat, nanoseconds) on less off, as a share of one core over the
  seconds the launching thread spent outside CUDA, and per sample (samples counted in the
  recording); beside it the whole process's CPU time (getrusage), off and on, with machine noise.
- busy-python: the same, but the 50 ms are a Python busy loop at that depth (a metrics function):
  the stack changes between samples, and every sample walks it.
- busy: each step launches a 20 ms kernel and synchronizes: the launching thread waits inside
  CUDA and nothing is sampled. Steps per second, on against off, and the samples taken.
Never asserts a time: a benchmark (scripts/bench.sh; figures in docs/performance.md)."""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def frames_here():
    n, f = 0, sys._getframe(1)
    while f is not None:
        n, f = n + 1, f.f_back
    return n


def at_depth(depth, fn, *args):
    """fn(*args) called from the innermost of `depth` Python frames."""
    if frames_here() >= depth - 1:
        return fn(*args)
    return at_depth(depth, fn, *args)


def busy(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
        x *= 3
        x %= 1000003
    return x


def child(spec):
    # The ctypes runtime of the Python stack tests: a kernel whose duration is its argument.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "interpose"))
    from python_stacks_prog import Runtime
    runtime = Runtime(spec["simlib"])
    rt, launch = runtime.rt, runtime.launch

    launch(1000)
    rt.cudaDeviceSynchronize()
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    outside = 0.0
    for _ in range(spec["steps"]):
        if spec["mode"] in ("idle", "python"):
            launch(1000000)
            s = time.perf_counter()
            at_depth(spec["depth"], time.sleep if spec["mode"] == "idle" else busy, 0.05)
            outside += time.perf_counter() - s
        else:
            launch(20000000)
        rt.cudaDeviceSynchronize()
    wall = time.perf_counter() - t0
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    # The flusher thread's CPU time, to the nanosecond (schedstat's first field), over the run: it
    # takes the samples (python_sampler.h), and does the same work besides with the sampler off.
    flusher_ns = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                if f.read().strip() != "gapwatch-flush":
                    continue
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                flusher_ns = int(f.read().split()[0])
        except OSError:
            pass
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "outside_s": outside, "steps": spec["steps"],
                      "flusher_ns": flusher_ns}))


if len(sys.argv) == 3 and sys.argv[1] == "--child":
    child(json.loads(sys.argv[2]))
    sys.exit(0)

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--depths", default="25,60")
ap.add_argument("--steps", type=int, default=60, help="idle steps per run (50 ms outside CUDA each)")
ap.add_argument("--busy-steps", type=int, default=100, help="busy steps per run (20 ms kernels)")
args = ap.parse_args()

build = os.path.abspath(args.build)
lib = os.path.join(build, "lib", "libgapwatch.so")
simlib = os.path.join(build, "simcuda", "lib")
gapwatch = os.path.join(build, "bin", "gapwatch")
for path in (lib, gapwatch, os.path.join(simlib, "libcudart.so.13")):
    if not os.path.exists(path):
        sys.exit("python_sampler_cost.py: %s is missing: build first (scripts/setup.sh)" % path)
CONFIGS = [("off", {"GAPWATCH_PY_SAMPLING": "0"}), ("on", {})]
work = tempfile.mkdtemp(prefix="gw-sampler-bench-")


def samples_in(path):
    out = subprocess.run([gapwatch, "dump", "--json", path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("python_sampler_cost.py: gapwatch dump failed: %s" % out.stderr.strip()[-400:])
    return sum(1 for line in out.stdout.splitlines() if line.startswith('{"type":"python_sample"'))


def run(mode, depth, config, repeat):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAPWATCH_") and k != "LD_PRELOAD"}
    env.update({"LD_PRELOAD": lib, "GAPWATCH_CUPTI_PATH": os.path.join(simlib, "libcupti.so.13")})
    env.update(CONFIGS[config][1])
    out = os.path.join(work, "%s-%d-%s-%d.gwt" % (mode, depth, CONFIGS[config][0], repeat))
    env["GAPWATCH_OUTPUT"] = out
    spec = {"simlib": simlib, "mode": mode, "depth": depth,
            "steps": args.busy_steps if mode == "busy" else args.steps}
    r = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        sys.exit("python_sampler_cost.py: child failed: %s" % r.stderr[-800:])
    result = json.loads(r.stdout.strip().splitlines()[-1])
    result["samples"] = samples_in(out)
    os.remove(out)
    return result


print("python_sampler_cost: %d repetitions, on/off interleaved; medians" % args.repeats)
for mode, depth in [(m, int(d)) for m in ("idle", "python") for d in args.depths.split(",")]:
    per = {0: [], 1: []}
    for rep in range(args.repeats):
        order = [0, 1] if rep % 2 == 0 else [1, 0]
        for c in order:
            per[c].append(run(mode, depth, c, rep))
    diffs = [(on["cpu_s"] - off["cpu_s"]) for off, on in zip(per[0], per[1])]
    outside = statistics.median(r["outside_s"] for r in per[1])
    samples = statistics.median(r["samples"] for r in per[1])
    # The flusher's CPU with the sampler on less off (pairs of the same repetition), over the time
    # the launching thread was outside CUDA, and per sample.
    extra = [(on["flusher_ns"] - off["flusher_ns"]) / 1e9 for off, on in zip(per[0], per[1])]
    share = statistics.median(e / r["outside_s"] for e, r in zip(extra, per[1]))
    per_sample = statistics.median(1e6 * e / max(1, r["samples"]) for e, r in zip(extra, per[1]))
    print("  %s, depth %d: %.1f s outside CUDA, %d samples; flusher CPU off %.1f ms, on %.1f ms: sampling "
          "%.3f%% of a core while outside CUDA, %.1f us per sample; process CPU off %.3f s, on %.3f s" %
          (mode, depth, outside, samples, statistics.median(r["flusher_ns"] for r in per[0]) / 1e6,
           statistics.median(r["flusher_ns"] for r in per[1]) / 1e6, 100 * share, per_sample,
           statistics.median(r["cpu_s"] for r in per[0]), statistics.median(r["cpu_s"] for r in per[1])))
per = {0: [], 1: []}
for rep in range(args.repeats):
    for c in ([0, 1] if rep % 2 == 0 else [1, 0]):
        per[c].append(run("busy", 25, c, rep))
rate = {c: statistics.median(r["steps"] / r["wall_s"] for r in per[c]) for c in (0, 1)}
flusher = {c: statistics.median(r["flusher_ns"] / 1e6 for r in per[c]) for c in (0, 1)}
print("  busy GPU: %.2f steps/s off, %.2f on (on/off %.4f); flusher CPU off %.1f ms, on %.1f ms; samples taken "
      "on: %d" % (rate[0], rate[1], rate[1] / rate[0], flusher[0], flusher[1], max(r["samples"] for r in per[1])))
