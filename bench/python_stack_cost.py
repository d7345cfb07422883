#!/usr/bin/env python3
"""What a Python stack costs at a blocking CUDA call: the same blocking calls, made through ctypes
on the simulated runtime from a Python stack of a given depth, without gapwatch, under gapwatch with
GAPWATCH_PY_STACKS=0 (the call recorded, no stack read) and under gapwatch with stacks (the default).

Each (interpreter, repetition) runs one child process per configuration, the configurations
interleaved (their order rotated each repetition), so machine noise hits every one alike. A child
(this file, --child) makes, for each depth (--depths) and call (--calls), calls from the innermost of
that many Python frames (nn.Module-like methods calling each other, in a file at a site-packages
path of realistic length): cudaStreamSynchronize on an idle stream (sync), a 4-byte cudaMemcpy device
to host into pageable memory (d2h), and cudaMemcpyAsync of each kind (issue 36, item 4): device to
device (d2d-async), host to device from cudaMallocHost memory (h2d-pinned-async), device to host
into pageable memory (d2h-pageable-async, what PyTorch's .item() makes). The first two and the last
block the host and carry a stack; the async copies that only enqueue carry none (a stack there
would be paid between launches). The simulator's own API time is set to almost nothing (1 ns), so
gapwatch's part is most of what is timed. Calls come in bursts of --burst, a pause of --pause-ms
between bursts: gapwatch hands stacks to its flusher through a 1 MiB mailbox drained once a flush
period (50 ms); calls back to back (--pause-ms 0) fill it, and a stack missed for a full mailbox
has been read but not copied. Every gapwatch configuration runs with GAPWATCH_PY_GAP_MS=0: the
pause would otherwise make each burst's first call one that ends a stretch of host time, and an
async copy that only enqueues carries its stack there (docs/design/python-stacks.md). Each burst is timed by the calling thread's CPU time and by wall
time; a child gives the mean over its bursts, the table the median over the repetitions.

Printed per interpreter, depth and call: ns per call (calling thread CPU, median; p10 and p90 over
the repetitions), the median of the per-repetition differences "stacks - stacks off" (the cost of
the stack) and "stacks off - none" (the cost of recording the call), and what the recording holds:
the calls that carry a stack, the frames in it ("48+" when cut at the limit) and the stacks missed
(DROP_SOURCE_PYTHON_STACK). --baseline-lib adds a fourth configuration, interleaved with the
others: an older libgapwatch.so with stacks on (a build of an earlier commit's gapwatch_interpose
target), and its difference to stacks off. Never asserts a time: a benchmark."""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Each call: the API name it is recorded under, the bytes it moves (which tell the copies apart in
# the recording), and whether it can block the host (so carries a stack).
CALL_SPECS = {
    "sync": ("cudaStreamSynchronize", 0, True),
    "d2h": ("cudaMemcpy", 4, True),
    "d2d-async": ("cudaMemcpyAsync", 8, False),
    "h2d-pinned-async": ("cudaMemcpyAsync", 12, False),
    "d2h-pageable-async": ("cudaMemcpyAsync", 16, True),
}


# ---------------------------------------------------------------------------------------------
# The child: runs under the interpreter being measured, with or without gapwatch preloaded.

class SimDeviceConfig(ctypes.Structure):  # tests/simcuda/include/simcuda/timeline.h
    _fields_ = [("launch_api_ns", ctypes.c_int64), ("launch_latency_ns", ctypes.c_int64),
                ("copy_api_ns", ctypes.c_int64), ("sync_api_ns", ctypes.c_int64),
                ("alloc_api_ns", ctypes.c_int64), ("h2d_gbps", ctypes.c_double), ("d2h_gbps", ctypes.c_double),
                ("d2d_gbps", ctypes.c_double), ("pageable_factor", ctypes.c_double),
                ("memset_gbps", ctypes.c_double), ("nccl_gbps", ctypes.c_double),
                ("nccl_latency_ns", ctypes.c_int64)]


def frames_here():
    n, f = 0, sys._getframe(1)
    while f is not None:
        n, f = n + 1, f.f_back
    return n


# The frames the calls are made under: a module's three methods calling each other, as a PyTorch
# model's layers go through nn.Module (_wrapped_call_impl, _call_impl, forward), in a file at a
# site-packages path of a realistic length (gapwatch copies every frame's file name and function):
# written by the parent into its temporary directory, imported by the child. At the bottom,
# timed_bursts makes the calls, so each call's stack is exactly the depth asked for.
MODULE_DIR = os.path.join("venv", "lib", "python3", "site-packages")
MODULE_FILES = {
    os.path.join("gwbench", "__init__.py"): "",
    os.path.join("gwbench", "nn", "__init__.py"): "",
    os.path.join("gwbench", "nn", "modules", "__init__.py"): "",
    os.path.join("gwbench", "nn", "modules", "module.py"): '''import time


class Module:
    def _wrapped_call_impl(self, todo, job):
        return self._call_impl(todo - 1, job) if todo > 0 else timed_bursts(*job)

    def _call_impl(self, todo, job):
        return self.forward(todo - 1, job) if todo > 0 else timed_bursts(*job)

    def forward(self, todo, job):
        return self._wrapped_call_impl(todo - 1, job) if todo > 0 else timed_bursts(*job)


def timed_bursts(call, call_args, bursts, burst, pause_s):
    cpu = wall = 0
    for _ in range(bursts):
        if pause_s:
            time.sleep(pause_s)
        t0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        for _ in range(burst):
            call(*call_args)
        t1, w1 = time.thread_time_ns(), time.perf_counter_ns()
        cpu += t1 - t0
        wall += w1 - w0
    return cpu, wall
''',
}


def at_depth(depth, job):
    from gwbench.nn.modules.module import Module
    # _wrapped_call_impl's frame is the first of the recursion; timed_bursts the innermost frame.
    todo = depth - frames_here() - 2
    if todo < 0:
        sys.exit("python_stack_cost.py: depth %d is below the %d frames the child starts at" %
                 (depth, frames_here() + 2))
    return Module()._wrapped_call_impl(todo, job)


def child(spec):
    sys.path.insert(0, spec["site"])
    simlib = spec["simlib"]
    cuda = ctypes.CDLL(os.path.join(simlib, "libcuda.so.1"))
    cfg = SimDeviceConfig(launch_api_ns=1, launch_latency_ns=1, copy_api_ns=1, sync_api_ns=1, alloc_api_ns=1)
    cuda.simcuda_configure(ctypes.byref(cfg))  # before the first CUDA call
    rt = ctypes.CDLL(os.path.join(simlib, "libcudart.so.13"))
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    rt.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    rt.cudaMallocHost.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    drain = rt.cudaDeviceSynchronize  # untimed, between bursts: not one of the measured calls
    device = ctypes.c_void_p()
    device2 = ctypes.c_void_p()
    pinned = ctypes.c_void_p()
    stream = ctypes.c_void_p()
    if (rt.cudaMalloc(ctypes.byref(device), 64) or rt.cudaMalloc(ctypes.byref(device2), 64) or
            rt.cudaMallocHost(ctypes.byref(pinned), 64) or rt.cudaStreamCreate(ctypes.byref(stream))):
        sys.exit("python_stack_cost.py: the simulated runtime failed to start")
    host = (ctypes.c_float * 16)()
    host_p, device_p, stream_p = ctypes.addressof(host), device.value, stream.value
    sync, memcpy, memcpy_async = rt.cudaStreamSynchronize, rt.cudaMemcpy, rt.cudaMemcpyAsync
    # The ctypes functions themselves, called from timed_bursts: no Python frame in between. The
    # async copies go on the created stream; a cudaDeviceSynchronize after each burst (untimed)
    # leaves it idle for the next.
    fns = {"sync": (sync, (stream_p,)), "d2h": (memcpy, (host_p, device_p, 4, 2)),
           "d2d-async": (memcpy_async, (device2.value, device_p, 8, 3, stream_p)),
           "h2d-pinned-async": (memcpy_async, (device_p, pinned.value, 12, 1, stream_p)),
           "d2h-pageable-async": (memcpy_async, (host_p, device_p, 16, 2, stream_p))}
    calls_run = spec["calls"]
    pause_s = spec["pause_ms"] / 1000.0
    # The same combinations in the same order as measured, a burst each: the interpreter lookup
    # (first stack) and first-call costs stay out of the timed bursts.
    for depth in spec["depths"]:
        for name in calls_run:
            at_depth(depth, fns[name] + (1, spec["warmup"], pause_s))
            drain()
    totals = {}
    for _ in range(spec["rounds"]):
        for depth in spec["depths"]:
            for name in calls_run:
                cpu, wall = at_depth(depth, fns[name] + (spec["bursts"], spec["burst"], pause_s))
                t = totals.setdefault("%s/%d" % (name, depth), [0, 0])
                t[0] += cpu
                t[1] += wall
                drain()
    calls = spec["rounds"] * spec["bursts"] * spec["burst"]
    print(json.dumps({k: [cpu / calls, wall / calls] for k, (cpu, wall) in totals.items()}))


if len(sys.argv) == 3 and sys.argv[1] == "--child":
    child(json.loads(sys.argv[2]))
    sys.exit(0)


# ---------------------------------------------------------------------------------------------
# The parent.

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--python", action="append",
                help="an interpreter to measure (repeatable); default: the one running this script")
ap.add_argument("--repeats", type=int, default=7, help="interleaved runs of each configuration")
ap.add_argument("--depths", default="25,60", help="Python frames at the call (gapwatch keeps 48)")
ap.add_argument("--calls", default=",".join(CALL_SPECS), help="which calls, comma-separated: " + ", ".join(CALL_SPECS))
ap.add_argument("--baseline-lib", help="an older libgapwatch.so, measured with stacks on as a fourth configuration")
ap.add_argument("--burst", type=int, default=200, help="calls timed back to back")
ap.add_argument("--bursts", type=int, default=4, help="bursts per round, for each depth and call")
ap.add_argument("--rounds", type=int, default=2, help="rounds through all depths and calls per run")
ap.add_argument("--pause-ms", type=float, default=60, help="between bursts: the flusher drains the stacks")
ap.add_argument("--warmup", type=int, default=50, help="untimed calls per depth and call, first")
ap.add_argument("--module-dir", help="write the frames' module under this directory instead of a site-packages "
                "path in a temporary one (gapwatch copies every frame's file name: its length counts)")
args = ap.parse_args()

build = os.path.abspath(args.build)
lib = os.path.join(build, "lib", "libgapwatch.so")
simlib = os.path.join(build, "simcuda", "lib")
cupti = os.path.join(simlib, "libcupti.so.13")
gapwatch = os.path.join(build, "bin", "gapwatch")
for path in (lib, cupti, gapwatch, os.path.join(simlib, "libcudart.so.13")):
    if not os.path.exists(path):
        sys.exit("python_stack_cost.py: %s is missing: build first (scripts/setup.sh)" % path)
pythons = args.python or [sys.executable]
depths = [int(d) for d in args.depths.split(",")]
CALLS = [c for c in args.calls.split(",") if c]
for c in CALLS:
    if c not in CALL_SPECS:
        sys.exit("python_stack_cost.py: no call %r (%s)" % (c, ", ".join(CALL_SPECS)))
CONFIGS = [("none", None), ("stacks off", {"GAPWATCH_PY_STACKS": "0"}), ("stacks", {})]
if args.baseline_lib:
    if not os.path.exists(args.baseline_lib):
        sys.exit("python_stack_cost.py: %s is missing" % args.baseline_lib)
    CONFIGS.append(("before", {"GAPWATCH_LIB": os.path.abspath(args.baseline_lib)}))
spec = {"simlib": simlib, "depths": depths, "burst": args.burst, "bursts": args.bursts, "rounds": args.rounds,
        "pause_ms": args.pause_ms, "warmup": args.warmup, "calls": CALLS}
timed = args.rounds * args.bursts * args.burst


def check_recording(path):
    """What a recording holds: {(call, depth or None): calls}, stacked calls under the depth their
    stack shows (None: calls without a stack), the frames kept per depth, and the stacks missed."""
    for attempt in range(3):  # the binary may be in the middle of a relink
        try:
            out = subprocess.run([gapwatch, "dump", "--json", path], capture_output=True, text=True)
        except OSError as e:
            out = subprocess.CompletedProcess([], 1, "", str(e))
        if out.returncode == 0:
            break
        time.sleep(30)
    if out.returncode != 0:
        sys.exit("python_stack_cost.py: gapwatch dump failed on %s: %s" % (path, out.stderr.strip()[-400:]))
    stacks = {}  # id -> (frames, cut at the limit)
    seen = {}  # (api name, stack id) -> calls
    missed = 0
    for line in out.stdout.splitlines():
        if line.startswith('{"type":"string","kind":"python_stack"'):
            s = json.loads(line)
            lines = s["text"].splitlines()
            cut = bool(lines) and lines[-1].startswith("...")
            stacks[s["id"]] = (len(lines) - cut, cut)
        elif line.startswith('{"type":"api_call"'):
            c = json.loads(line)
            key = (c["name"], c["bytes"], c["python_stack_id"])
            seen[key] = seen.get(key, 0) + 1
        elif line.startswith('{"type":"goodbye"'):
            missed = sum(d["dropped"] for d in json.loads(line)["drops"] if d["source"] == "python_stack")
    calls, kept = {}, {}
    for call in CALLS:
        api_name, call_bytes, _ = CALL_SPECS[call]
        for (api, nbytes, sid), n in seen.items():
            if api != api_name or nbytes != call_bytes:
                continue
            depth = None
            if sid:
                frames, cut = stacks[sid]
                # A cut stack: the deepest asked for; else the depth its frames are nearest to.
                depth = max(depths) if cut else min(depths, key=lambda d: abs(d - frames))
                kept.setdefault(depth, set()).add("%d+" % frames if cut else str(frames))
            calls[(call, depth)] = calls.get((call, depth), 0) + n
    return calls, kept, missed


def run(python, extra, workdir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GAPWATCH_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
    env["LD_LIBRARY_PATH"] = simlib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    out_path = os.path.join(workdir, "stack-cost.gwt")
    if extra is not None:
        extra = dict(extra)
        env["LD_PRELOAD"] = extra.pop("GAPWATCH_LIB", lib)
        env["GAPWATCH_PY_GAP_MS"] = "0"  # no stack for ending the pause between bursts
        env.update(extra)
        env["GAPWATCH_CUPTI_PATH"] = cupti
        env["GAPWATCH_OUTPUT"] = out_path
    out = subprocess.run([python, os.path.abspath(__file__), "--child", json.dumps(spec)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit("python_stack_cost.py: the child under %s failed (%d): %s" %
                 (python, out.returncode, out.stderr.strip()[-600:]))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    recording = None
    if extra is not None:
        if "recorded" not in out.stderr:
            sys.exit("python_stack_cost.py: gapwatch did not record: %s" % out.stderr.strip()[-400:])
        recording = check_recording(out_path)
        os.remove(out_path)
    return result, recording


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


print("python_stack_cost: %d timed calls per run for each depth and call (%d rounds x %d bursts x %d), a %.0f ms "
      "pause between bursts; %d interleaved runs per configuration; simulated runtime, API time 1 ns" %
      (timed, args.rounds, args.bursts, args.burst, args.pause_ms, args.repeats))
print("ns per call on the calling thread (CPU time), median over the runs (p10-p90); differences: median of "
      "the per-run differences; wall: median wall ns per call")
with tempfile.TemporaryDirectory() as workdir:
    spec["site"] = os.path.abspath(args.module_dir) if args.module_dir else os.path.join(workdir, MODULE_DIR)
    for name, text in MODULE_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(spec["site"], name)), exist_ok=True)
        with open(os.path.join(spec["site"], name), "w") as f:
            f.write(text)
    print("frames: %s (%d characters)" % (os.path.join(spec["site"], "gwbench", "nn", "modules", "module.py"),
                                          len(os.path.join(spec["site"], "gwbench", "nn", "modules", "module.py"))))
    for python in pythons:
        if not os.path.exists(python):
            print("%s: not found, skipped" % python)
            continue
        version = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                 capture_output=True, text=True).stdout.strip()
        samples = {name: [] for name, _ in CONFIGS}
        recordings = {name: [] for name, e in CONFIGS if e is not None}
        for repeat in range(args.repeats):
            shift = repeat % len(CONFIGS)
            for name, extra in CONFIGS[shift:] + CONFIGS[:shift]:
                result, recording = run(python, extra, workdir)
                samples[name].append(result)
                if recording is not None:
                    recordings[name].append(recording)
        print()
        print("%s (Python %s): ns per call" % (python, version))
        names = [n for n, _ in CONFIGS]
        before = "before" in names
        head = ["call", "frames"] + names + ["stack", "record"] + (["before"] if before else []) + \
            ["wall"] * len(names) + ["stacked"] + (["stacked"] if before else []) + ["kept"]
        head2 = ["", ""] + [""] * len(names) + ["on-off", "off-none"] + (["-off"] if before else []) + \
            names + ["per run"] + (["before"] if before else []) + [""]
        fmt = " ".join(["%-18s", "%6s"] + ["%20s"] * len(names) + ["%8s", "%8s"] + (["%8s"] if before else []) +
                       ["%10s"] * len(names) + ["%9s"] + (["%9s"] if before else []) + ["%6s"])
        print(fmt % tuple(head))
        print(fmt % tuple(head2))
        expected = args.warmup + timed
        for depth in depths:
            for call in CALLS:
                key = "%s/%d" % (call, depth)
                cpu = {n: [r[key][0] for r in samples[n]] for n in names}
                wall = {n: [r[key][1] for r in samples[n]] for n in names}
                cols = ["%6.0f (%5.0f-%5.0f)" % (statistics.median(cpu[n]), pct(cpu[n], 0.1), pct(cpu[n], 0.9))
                        for n in names]
                diffs = [statistics.median(a - b for a, b in zip(cpu["stacks"], cpu["stacks off"])),
                         statistics.median(a - b for a, b in zip(cpu["stacks off"], cpu["none"]))]
                if before:
                    diffs.append(statistics.median(a - b for a, b in zip(cpu["before"], cpu["stacks off"])))
                walls = ["%.0f" % statistics.median(wall[n]) for n in names]
                stacked = ["%d/%d" % (min(r[0].get((call, depth), 0) for r in recordings[n]), expected)
                           for n in (["stacks", "before"] if before else ["stacks"])]
                kept = ",".join(sorted(set().union(*(r[1].get(depth, set()) for r in recordings["stacks"])))) or "-"
                print(fmt % tuple([call, depth] + cols + ["%+.0f" % d for d in diffs] + walls + stacked + [kept]))
        # Calls that can block and have no stack, and calls that only enqueue and have one: both
        # should be 0 (each run's total over depths).
        blocking = {c for c in CALLS if CALL_SPECS[c][2]}
        unstacked = [sum(v for (c, d), v in r[0].items() if d is None and c in blocking) for r in recordings["stacks"]]
        wrongly = [sum(v for (c, d), v in r[0].items() if d is not None and c not in blocking)
                   for r in recordings["stacks"]]
        print("per run with stacks: blocking calls (timed and warm-up) without a stack %s, non-blocking calls with a "
              "stack %s, stacks missed %s; with GAPWATCH_PY_STACKS=0: calls with a stack %s%s" %
              (",".join(map(str, unstacked)), ",".join(map(str, wrongly)),
               ",".join(str(r[2]) for r in recordings["stacks"]),
               ",".join(str(sum(v for (c, d), v in r[0].items() if d is not None))
                        for r in recordings["stacks off"]),
               "; before: stacks missed %s" % ",".join(str(r[2]) for r in recordings["before"]) if before else ""))
        sys.stdout.flush()
