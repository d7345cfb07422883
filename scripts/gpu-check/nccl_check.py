#!/usr/bin/env python3
"""scripts/gpu-check/nccl_check.py: gapwatch's two NCCL routes on a real GPU and a real NCCL.

Runs one small torch.distributed job (NCCL backend, world size 1 on one GPU, MASTER_ADDR
127.0.0.1 and a free port; eager init through device_id, so PyTorch makes its communicator with
ncclCommInitRankConfig; all_reduce, all_to_all_single, broadcast, a new_group split and an
all_reduce on it) three ways:

  preload   LD_PRELOAD=$lib (the symbol hooks)
  plugin    NCCL_PROFILER_PLUGIN=$lib, CUDA_INJECTION64_PATH=$lib, no LD_PRELOAD (the plugin route)
  both      LD_PRELOAD=$lib and NCCL_PROFILER_PLUGIN=$lib

each with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV. For each it saves, under OUT/<mode>/, the
recordings, `gapwatch dump --json` and `gapwatch report --json` of each, the job's log, and
writes OUT/nccl_check.json: per mode, the NCCL calls recorded by op with their (rank, nranks),
the job's own count of collectives, and the NCCL log lines that mention the profiler plugin (which
interface version NCCL accepted). Exits 0 when the harness worked, whatever the runs showed.

Usage: nccl_check.py OUT [--lib PATH] [--gapwatch PATH] [--budget SECONDS] [--self-test]
--self-test runs the same harness with a stand-in job (no torch, no GPU, no gapwatch needed).
"""

import argparse
import collections
import json
import os
import re
import socket
import subprocess
import sys
import time

MODES = ("preload", "plugin", "both")
# What the job calls, in the recording's op names (a world of one: all_to_all_single is one
# ncclAlltoAll or a send/recv group, depending on the PyTorch version: both are counted).
JOB_CALLS = {"all_reduce": 2, "all_to_all": 1, "broadcast": 1}
PLUGIN_LINE = re.compile(r"profiler", re.I)
VERSION = re.compile(r"\(v(\d)\)|plugin v(\d)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job(fake):
    """The job itself (run as a child: --job)."""
    if fake:
        sys.stderr.write("host:1:1 [0] NCCL INFO PROFILER/Plugin: Loaded gapwatch (v6)\n")
        print(json.dumps({"calls": JOB_CALLS, "fake": True}))
        return 0
    import torch
    import torch.distributed as dist
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
    x = torch.ones(1 << 16, device=device)
    dist.all_reduce(x)
    y = torch.empty_like(x)
    dist.all_to_all_single(y, x)
    dist.broadcast(x, src=0)
    sub = dist.new_group([0])
    dist.all_reduce(x, group=sub)
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(json.dumps({"calls": JOB_CALLS, "torch": torch.__version__,
                      "nccl": ".".join(map(str, torch.cuda.nccl.version()))}))
    return 0


def environment(mode, lib, out_dir, port):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "NCCL_PROFILER_PLUGIN", "GAPWATCH_OUTPUT"):
        env.pop(k, None)
    env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "NCCL_DEBUG": "INFO",
                "NCCL_DEBUG_SUBSYS": "INIT,ENV", "GAPWATCH_OUTPUT": out_dir + "/"})
    if lib:
        if mode in ("preload", "both"):
            env["LD_PRELOAD"] = lib
        if mode in ("plugin", "both"):
            env["NCCL_PROFILER_PLUGIN"] = lib
            if mode == "plugin":
                env["CUDA_INJECTION64_PATH"] = lib
    return env


def summarize_dump(lines):
    calls = collections.Counter()
    ranks = collections.Counter()
    for line in lines:
        if not line.strip():
            continue
        e = json.loads(line)
        if e.get("type") == "nccl_call":
            calls[e["op"]] += 1
            ranks["%s rank %s of %s" % (e["op"], e["rank"], e["nranks"])] += 1
    return {"calls": dict(calls), "ranks": dict(ranks)}


def run_mode(mode, args, deadline):
    out_dir = os.path.join(args.out, mode)
    os.makedirs(out_dir, exist_ok=True)
    env = environment(mode, args.lib, out_dir, free_port())
    cmd = [sys.executable, os.path.abspath(__file__), "--job"] + (["--fake"] if args.self_test else [])
    result = {"mode": mode, "env": {k: env[k] for k in ("LD_PRELOAD", "NCCL_PROFILER_PLUGIN", "CUDA_INJECTION64_PATH")
                                    if k in env}}
    started = time.monotonic()
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=max(1, deadline - time.monotonic()))
        result["rc"] = r.returncode
        stdout, stderr = r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        result["rc"] = "timeout"
        stdout = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    result["seconds"] = round(time.monotonic() - started, 2)
    with open(os.path.join(out_dir, "job.log"), "w") as f:
        f.write(stdout + "\n--- stderr ---\n" + stderr)
    result["plugin_lines"] = [l for l in stderr.splitlines() if PLUGIN_LINE.search(l)][:20]
    versions = {int(a or b) for l in result["plugin_lines"] for a, b in VERSION.findall(l)}
    result["plugin_versions"] = sorted(versions)
    job_lines = [l for l in stdout.splitlines() if l.startswith("{")]
    result["job"] = json.loads(job_lines[-1]) if job_lines else None
    result["recordings"] = {}
    have_cli = args.gapwatch and os.access(args.gapwatch, os.X_OK)
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".gwt"):
            continue
        path = os.path.join(out_dir, name)
        rec = {}
        if have_cli and time.monotonic() < deadline:
            d = subprocess.run([args.gapwatch, "dump", "--json", path], capture_output=True, text=True, timeout=20)
            with open(path + ".dump.jsonl", "w") as f:
                f.write(d.stdout)
            rec = summarize_dump(d.stdout.splitlines()) if d.returncode == 0 else {"dump_error": d.stderr[-500:]}
            rep = subprocess.run([args.gapwatch, "report", "--json", path], capture_output=True, text=True, timeout=20)
            with open(path + ".report.json", "w") as f:
                f.write(rep.stdout if rep.returncode == 0 else rep.stderr)
        else:
            rec = {"skipped": "no gapwatch CLI" if not have_cli else "out of time"}
        result["recordings"][name] = rec
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?")
    p.add_argument("--lib", default=os.environ.get("GAPWATCH_LIB", ""))
    p.add_argument("--gapwatch", default=os.environ.get("GAPWATCH_BIN", ""))
    p.add_argument("--budget", type=float, default=60.0)
    p.add_argument("--self-test", action="store_true")
    p.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--fake", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.job:
        return job(args.fake)
    if not args.out:
        p.error("OUT (the results folder) is required")
    if args.self_test:
        args.lib = ""  # the stand-in job needs no library, and none is preloaded
    os.makedirs(args.out, exist_ok=True)
    deadline = time.monotonic() + args.budget - 2
    results = []
    for mode in MODES:
        if time.monotonic() >= deadline:
            results.append({"mode": mode, "skipped": "out of time"})
            continue
        # Each mode gets at most its share of what is left, so one hang cannot eat the others.
        share = (deadline - time.monotonic()) / (len(MODES) - len(results))
        results.append(run_mode(mode, args, time.monotonic() + share))
    summary = {"check": "nccl", "self_test": args.self_test, "lib": args.lib, "modes": results}
    with open(os.path.join(args.out, "nccl_check.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for r in results:
        print("nccl_check: %-8s rc=%s plugin=%s recordings=%d" % (
            r["mode"], r.get("rc", r.get("skipped")), r.get("plugin_versions"), len(r.get("recordings", {}))))
    if args.self_test:
        ok = all(r.get("rc") == 0 and r.get("plugin_versions") == [6] and r.get("job") for r in results)
        # The environments the real runs would get, without running them.
        want = {"preload": {"LD_PRELOAD"}, "plugin": {"NCCL_PROFILER_PLUGIN", "CUDA_INJECTION64_PATH"},
                "both": {"LD_PRELOAD", "NCCL_PROFILER_PLUGIN"}}
        for mode, keys in want.items():
            env = environment(mode, "/lib/libgapwatch.so", args.out, 1)
            got = {k for k in ("LD_PRELOAD", "NCCL_PROFILER_PLUGIN", "CUDA_INJECTION64_PATH") if k in env}
            if got != keys or env.get("NCCL_DEBUG") != "INFO":
                print("nccl_check: self-test: %s environment has %s, wants %s" % (mode, sorted(got), sorted(keys)))
                ok = False
        print("nccl_check: self-test %s" % ("passed" if ok else "FAILED"))
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
