#!/usr/bin/env python3
"""collector_check.py OUT [--self-test] [--budget 60]: do real PyTorch processes on a GPU stream
whole recordings into one `gapwatch collector`? (issue 10, the collector's core; docs/collector.md)

Starts `gapwatch collector` on a private socket, runs four small CUDA jobs at once under
LD_PRELOAD with GAPWATCH_SOCKET set, stops the collector with SIGTERM once they have ended, then checks
each .gwt it wrote: `gapwatch dump --json` counts per event type against the Goodbye's totals,
`gapwatch report --json` reads it, and the report the collector computed live (<base>.report.json)
is the same text; and that the run's report (gapwatch-report.json) was written. Writes OUT/collector_check.json, OUT/collector.log and keeps
the recordings in OUT/recordings/. Exits 0 when the harness worked, whatever it found.
--self-test replaces the jobs with stand-ins that write a Hello and a Goodbye to the socket
themselves (no torch, no GPU, no libgapwatch): it checks the harness, not the library."""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
JOBS = 4

JOB = r"""
import torch
x = torch.randn(512, 512, device="cuda")
for step in range(60):
    for _ in range(20):
        x = torch.tanh(x @ x * 0.01)
    x.sum().item()
torch.cuda.synchronize()
print("done", flush=True)
"""

# Hand-written frames (docs/recording-format.md): Frame{hello{wire_version 1, pid, host}} and
# Frame{goodbye{end_time_ns 1}}.
FAKE_JOB = r"""
import os, socket
def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7f, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)
def msg(field, body):
    return varint(field << 3 | 2) + varint(len(body)) + body
def frame(field, body):
    m = msg(field, body)
    return varint(len(m)) + m
hello = b"\x08\x01" + b"\x10" + varint(os.getpid()) + msg(3, b"selftest")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["GAPWATCH_SOCKET"])
s.sendall(frame(1, hello) + frame(3, b"\x08\x01"))
s.close()
print("done", flush=True)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--python", default=os.environ.get("GPU_CHECK_PYTHON", sys.executable))
    ap.add_argument("--lib", default=os.environ.get("GAPWATCH_LIB", os.path.join(REPO, "build", "lib", "libgapwatch.so")))
    ap.add_argument("--gapwatch", default=os.environ.get("GAPWATCH_BIN", os.path.join(REPO, "build", "bin", "gapwatch")))
    args = ap.parse_args()
    args.gapwatch = os.path.abspath(args.gapwatch)  # the reports run in the recordings' directory
    start = time.monotonic()
    left = lambda: max(1.0, args.budget - (time.monotonic() - start))  # noqa: E731
    out = os.path.abspath(args.out)
    recordings = os.path.join(out, "recordings")
    os.makedirs(recordings, exist_ok=True)
    sock = os.path.join(out, "sock", "collector.sock")
    result = {"self_test": args.self_test, "jobs": [], "recordings": []}
    with open(os.path.join(out, "collector.log"), "w") as log:
        collector = subprocess.Popen([args.gapwatch, "collector", "--socket", sock, "--output-dir", recordings],
                                     stdout=subprocess.DEVNULL, stderr=log)
    while not os.path.exists(sock) and collector.poll() is None and time.monotonic() - start < 10:
        time.sleep(0.05)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAPWATCH_") and k != "CUDA_INJECTION64_PATH"}
    env["GAPWATCH_SOCKET"] = sock
    if not args.self_test:
        env["LD_PRELOAD"] = args.lib
    jobs = [subprocess.Popen([args.python, "-c", FAKE_JOB if args.self_test else JOB], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(JOBS)]
    for p in jobs:
        try:
            o, e = p.communicate(timeout=left() * 0.7)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        result["jobs"].append({"pid": p.pid, "exit": p.returncode, "stdout": o[-2000:], "stderr": e[-2000:]})
    # Stopped with SIGTERM once every connection it opened has closed (at most 10 s): the jobs start
    # at different moments, so --exit-when-idle could stop it between a quick job and a slow one.
    log_path = os.path.join(out, "collector.log")
    deadline = time.monotonic() + min(10.0, left())
    while time.monotonic() < deadline:
        with open(log_path) as f:
            text = f.read()
        if text.count(": closed (") >= text.count(": opened, writing "):
            break
        time.sleep(0.1)
    collector.terminate()
    result["collector_exit"] = collector.wait(timeout=10)
    for name in sorted(n for n in os.listdir(recordings) if n.endswith(".gwt")):
        path = os.path.join(recordings, name)
        entry = {"file": name}
        d = subprocess.run([args.gapwatch, "dump", "--json", path], capture_output=True, text=True, timeout=left())
        counts, bye = {}, None
        for line in d.stdout.splitlines():
            e = json.loads(line)
            counts[e["type"]] = counts.get(e["type"], 0) + 1
            if e["type"] == "goodbye":
                bye = e
        entry["counts"] = counts
        entry["dump_exit"] = d.returncode
        if bye:
            entry["goodbye_totals"] = {k: bye.get(k) for k in ("api_calls", "activities", "nccl_calls", "markers")}
            entry["counts_match_goodbye"] = all(
                counts.get(t, 0) == bye.get(k, 0)
                for t, k in (("api_call", "api_calls"), ("activity", "activities"), ("nccl_call", "nccl_calls"),
                             ("marker", "markers")))
        # Run where the collector wrote it, with the bare name: its live report names the file so.
        r = subprocess.run([args.gapwatch, "report", "--json", name], capture_output=True, text=True, timeout=left(),
                           cwd=recordings)
        entry["report_exit"] = r.returncode
        live = os.path.join(recordings, name[:-len(".gwt")] + ".report.json")
        if os.path.exists(live):
            with open(live) as f:
                entry["live_report_equals_offline"] = f.read() == r.stdout
        result["recordings"].append(entry)
    result["seconds"] = round(time.monotonic() - start, 1)
    with open(os.path.join(out, "collector_check.json"), "w") as f:
        json.dump(result, f, indent=1)
    ok = [r for r in result["recordings"] if r.get("counts_match_goodbye") and r["report_exit"] == 0]
    same = [r for r in result["recordings"] if r.get("live_report_equals_offline")]
    result["run_report_written"] = os.path.exists(os.path.join(recordings, "gapwatch-report.json"))
    print("collector_check: %d job(s), %d recording(s), %d whole and readable, %d live report(s) equal to "
          "the offline one, run report %s, collector exit %s, %.1f s" %
          (len(jobs), len(result["recordings"]), len(ok), len(same),
           "written" if result["run_report_written"] else "missing", result["collector_exit"], result["seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
