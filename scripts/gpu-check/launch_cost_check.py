#!/usr/bin/env python3
"""What a launch costs on a real GPU under each profiler (issue 9, section 5).

A launch-bound loop (torch.add on 1-element tensors, out= so nothing is allocated: one kernel
launch per call) is timed from torch.cuda.synchronize() to torch.cuda.synchronize(), in one fresh
process per configuration, the configurations interleaved, a few repetitions each:

  plain                 no profiler
  cupti_null            bench's empty CUPTI subscriber (CUDA_INJECTION64_PATH) enabling gapwatch's
                        callback ids in both domains and its activity kinds: CUPTI's own cost
  cupti_null_runtime    the same, runtime-domain ids only
  cupti_null_driver     the same, driver-domain ids only
  gapwatch_cupti        LD_PRELOAD=libgapwatch.so (CUPTI probe)
  gapwatch_symbols      the same with GAPWATCH_PROBES=symbols (symbol hooks, no CUPTI)
  torch_profiler        torch.profiler (CPU + CUDA activities) around the timed loops

Usage: launch_cost_check.py OUTDIR [--budget-s 120] [--lib ...] [--null ...]
       launch_cost_check.py --self-test   (no torch, no GPU: a fake job through the whole flow)
Writes OUTDIR/launch_cost.jsonl (one line per run) and OUTDIR/launch_cost.txt (the table, also
printed). Exits 0 when the harness worked, whatever the numbers; 1 only when it itself failed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CONFIGS = ["plain", "cupti_null", "cupti_null_runtime", "cupti_null_driver", "gapwatch_cupti",
           "gapwatch_symbols", "torch_profiler"]


# ---- the worker: one process, one configuration ----------------------------------------------------
def mapped_cupti():
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libcupti" in line:
                return line.split()[-1]
    return None


def wheel_cupti(torch):
    import glob
    site = os.path.dirname(os.path.dirname(torch.__file__))
    found = sorted(glob.glob(os.path.join(site, "nvidia", "**", "libcupti.so*"), recursive=True))
    return found[-1] if found else None


def worker(config, launches, loops, fake):
    """Prints one JSON line: ns per launch of each timed loop, and what the process had loaded."""
    if fake:  # --self-test: the same shape of result without torch
        def loop(n):
            t = time.perf_counter()
            for _ in range(n):
                pass
            return time.perf_counter() - t
        per = [loop(launches) / launches * 1e9 for _ in range(loops)]
        print(json.dumps({"config": config, "ns_per_launch": per, "cupti": None}))
        return 0
    import torch
    # The empty subscriber and gapwatch must use the libcupti torch uses: name it before CUDA starts
    # (their InitializeInjection runs at cuInit, in this process, and reads the environment).
    cupti_found = mapped_cupti() or wheel_cupti(torch)
    if cupti_found and not os.environ.get("GAPWATCH_CUPTI_PATH"):
        os.environ["GAPWATCH_CUPTI_PATH"] = cupti_found
    if not torch.cuda.is_available():
        print(json.dumps({"config": config, "error": "torch.cuda.is_available() is false"}))
        return 0
    a = torch.ones(1, device="cuda")
    b = torch.ones(1, device="cuda")
    c = torch.empty(1, device="cuda")

    def timed(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            torch.add(a, b, out=c)
        torch.cuda.synchronize()
        return time.perf_counter() - t

    timed(2000)  # warm up: CUDA context, the kernel's first launch, caches
    per = []
    if config == "torch_profiler":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            timed(2000)  # the profiler's own start-up (CUPTI subscription, buffers) is not timed
            for _ in range(loops):
                per.append(timed(launches) / launches * 1e9)
    else:
        for _ in range(loops):
            per.append(timed(launches) / launches * 1e9)
    cupti = mapped_cupti()
    print(json.dumps({"config": config, "ns_per_launch": per, "cupti": cupti, "cupti_named": cupti_found,
                      "torch": torch.__version__, "torch_cuda": torch.version.cuda}))
    sys.stdout.flush()
    return 0


# ---- the driver ------------------------------------------------------------------------------------
def config_env(config, lib, null, workdir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GAPWATCH_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
    if config.startswith("cupti_null"):
        env["CUDA_INJECTION64_PATH"] = null
        env["NULL_SUBSCRIBER_VERBOSE"] = "1"
        if config != "cupti_null":
            env["NULL_SUBSCRIBER_DOMAINS"] = config.rsplit("_", 1)[1]
    elif config.startswith("gapwatch"):
        env["LD_PRELOAD"] = lib
        env["GAPWATCH_OUTPUT"] = os.path.join(workdir, "rec-%p.gwt")
        if config == "gapwatch_symbols":
            env["GAPWATCH_PROBES"] = "symbols"
    return env


def missing_library(config, lib, null):
    if config.startswith("cupti_null") and not os.path.exists(null):
        return null
    if config.startswith("gapwatch") and not os.path.exists(lib):
        return lib
    return None


def run_one(args, config, rep, workdir, timeout):
    cmd = [args.python, os.path.abspath(__file__), "--worker", config, "--launches", str(args.launches),
           "--loops", str(args.loops)] + (["--fake"] if args.self_test else [])
    row = {"config": config, "rep": rep}
    t = time.monotonic()
    try:
        out = subprocess.run(cmd, env=config_env(config, args.lib, args.null, workdir), capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        row.update(error="timed out after %d s" % timeout)
        return row
    row["wall_s"] = round(time.monotonic() - t, 2)
    row["stderr_tail"] = out.stderr[-600:]
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        row.update(error="exit %d" % out.returncode)
        return row
    row.update(json.loads(lines[-1]))
    # Did the profiler we meant to measure really run? Say so beside the number.
    if config.startswith("cupti_null") and not args.self_test:
        row["subscribed"] = "null_cupti_subscriber: subscribed" in out.stderr
    if config.startswith("gapwatch"):
        recorded = [l for l in out.stderr.splitlines() if l.startswith("gapwatch:")]  # its exit line, any fallback
        row["gapwatch_lines"] = recorded[-3:]
        for name in os.listdir(workdir):
            os.remove(os.path.join(workdir, name))
    return row


def summarize(rows):
    per = {}
    for r in rows:
        if "ns_per_launch" in r:
            per.setdefault(r["config"], []).append(statistics.median(r["ns_per_launch"]))
    lines = ["ns per launch (torch.add, 1 element, out=): median of each run's loops; over the runs",
             "%-20s %5s %10s %10s %10s %10s" % ("configuration", "runs", "median", "min", "max", "added")]
    base = statistics.median(per["plain"]) if per.get("plain") else None
    for c in CONFIGS:
        xs = per.get(c)
        if not xs:
            lines.append("%-20s %5d %10s" % (c, 0, "-"))
            continue
        m = statistics.median(xs)
        added = "%10.1f" % (m - base) if base is not None else "%10s" % "-"
        lines.append("%-20s %5d %10.1f %10.1f %10.1f %s" % (c, len(xs), m, min(xs), max(xs), added))
    if base is not None and per.get("cupti_null") and per.get("gapwatch_cupti"):
        lines.append("CUPTI itself (cupti_null - plain): %.1f ns/launch; gapwatch's share beside it "
                     "(gapwatch_cupti - cupti_null): %.1f ns/launch" %
                     (statistics.median(per["cupti_null"]) - base,
                      statistics.median(per["gapwatch_cupti"]) - statistics.median(per["cupti_null"])))
    if base is not None and per.get("torch_profiler"):
        lines.append("torch.profiler (torch_profiler - plain): %.1f ns/launch" %
                     (statistics.median(per["torch_profiler"]) - base))
    notes = sorted({"%s: %s" % (r["config"], r["error"]) for r in rows if "error" in r})
    notes += sorted({"%s: the empty subscriber did not subscribe (stderr: %s)" % (r["config"], r["stderr_tail"][-200:])
                     for r in rows if r.get("subscribed") is False})
    cupti = sorted({str(r.get("cupti")) for r in rows if "cupti" in r and r.get("cupti")})
    if cupti:
        lines.append("libcupti mapped: " + ", ".join(cupti))
    gw = sorted({l for r in rows for l in r.get("gapwatch_lines", [])})[:4]
    lines += ["gapwatch said: " + l for l in gw]
    return lines + ["note: " + n for n in notes]


def main():
    ap = argparse.ArgumentParser(description="ns per launch under each profiler, on a real GPU")
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--budget-s", type=float, default=120)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--loops", type=int, default=5)
    ap.add_argument("--python", default=os.environ.get("GPU_CHECK_PYTHON", sys.executable))
    ap.add_argument("--lib", default=os.environ.get("GAPWATCH_LIB", os.path.join(REPO, "build", "lib", "libgapwatch.so")))
    ap.add_argument("--null", default=os.path.join(REPO, "build", "lib", "libnull_cupti_subscriber.so"))
    ap.add_argument("--worker")
    ap.add_argument("--fake", action="store_true")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.launches, args.loops, args.fake)
    if args.self_test:
        args.launches, args.loops, args.repeats, args.budget_s = 2000, 2, 2, 60
        args.python = sys.executable
        with tempfile.TemporaryDirectory() as d:
            lines = drive(args, d)
            text = open(os.path.join(d, "launch_cost.txt")).read()
            rows = [json.loads(l) for l in open(os.path.join(d, "launch_cost.jsonl"))]
        ok = len(rows) == 2 * len(CONFIGS) and "plain" in text and all(
            "ns_per_launch" in r or r["config"].startswith(("gapwatch", "cupti_null")) for r in rows)
        print("launch_cost_check self-test: %s (%d runs)" % ("ok" if ok else "FAILED", len(rows)))
        return 0 if ok else 1
    if not args.outdir:
        ap.error("OUTDIR is required")
    os.makedirs(args.outdir, exist_ok=True)
    drive(args, args.outdir)
    return 0


def drive(args, outdir):
    start = time.monotonic()
    rows = []
    try:
        have_torch = args.self_test or subprocess.run(
            [args.python, "-c", "import torch"], capture_output=True, timeout=60).returncode == 0
    except Exception:
        have_torch = False
    with tempfile.TemporaryDirectory() as workdir, open(os.path.join(outdir, "launch_cost.jsonl"), "w") as log:
        if not have_torch:
            rows.append({"config": "plain", "error": "no torch importable by %s" % args.python})
        for rep in range(args.repeats if have_torch else 0):
            for config in CONFIGS:
                left = args.budget_s - (time.monotonic() - start)
                if left < 15:
                    rows.append({"config": config, "rep": rep, "error": "skipped: budget spent"})
                    continue
                lib = missing_library(config, args.lib, args.null)
                if lib and not args.self_test:
                    rows.append({"config": config, "rep": rep, "error": "skipped: %s is missing" % lib})
                    continue
                rows.append(run_one(args, config, rep, workdir, int(min(45, left - 5))))
                log.write(json.dumps(rows[-1]) + "\n")
                log.flush()
        for r in rows:
            if "rep" not in r or "error" in r and r["error"].startswith("skipped"):
                log.write(json.dumps(r) + "\n")
    lines = summarize(rows)
    lines.append("took %.0f s" % (time.monotonic() - start))
    with open(os.path.join(outdir, "launch_cost.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return lines


if __name__ == "__main__":
    sys.exit(main())
