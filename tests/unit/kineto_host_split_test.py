"""The report's split of host time agrees with the trace's own host events, on every real trace.

For each PyTorch profiler trace of ../shared/data/kineto/, this script computes a reference from the
trace alone (Python's json and gzip, none of gapwatch's code): for every idle gap of the device, the
time the launching thread spent outside any CUDA call and outside c10d's NCCL ranges (host time,
docs/analysis.md "Causes"), and what that thread was inside meanwhile, by its own `cpu_op`,
`user_annotation` and `python_function` events:
  - input_pipeline: a range or frame named for data loading (the DataLoader's own
    "enumerate(DataLoader)#...__next__", torch/utils/data/, "## load_batch ##"...);
  - framework: else any cpu_op;
  - other: else (Python outside any op), where the trace holds host events;
  - unknown: where it holds none, or the gap's work has no launching call.
It then checks `gapwatch report --json` against it:
  - each part of the report's host_cpu_by_part is within 5 % of the trace's idle time of the
    reference's (the issue's bar; the two usually agree to a few microseconds);
  - no input_pipeline finding where the reference finds data loading under 5 % of the window (the
    diagnosis's threshold), and so no data-pipeline fix for a trace without data-loader activity
    in its idle time;
  - where the verdict names host time, it names the largest part the reference has evidence for.
The same on a copy of train_control without its host events (cpu_op, user_annotation but the steps,
python_function), as a trace of a GPU-only profile is: all its host time must be unknown, and it
must get no input-pipeline, framework or other-host finding.
A table of every number is printed, passing or not.

    kineto_host_split_test.py GAPWATCH REPO_ROOT

The traces are found at REPO_ROOT/../shared/data/kineto (or where GAPWATCH_KINETO_DATA points);
without them the test exits 77 (skipped). The data-loading names are the definition's
(reader/kineto_host_ranges.cpp), written out again here on purpose.
"""
import bisect
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kineto_categories import category, is_step  # noqa: E402

GAPWATCH, REPO_ROOT = sys.argv[1], sys.argv[2]
DATA = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(REPO_ROOT, "..", "shared", "data", "kineto")
LAUNCH_THRESHOLD_NS = 30_000
TOLERANCE = 0.05       # of idle, per part
MIN_WINDOW_SHARE = 0.05  # a finding's threshold (DiagnosisThresholds::min_window_share)
INPUT_NAMES = ("dataloader", "torch/utils/data/", "data_load", "dataload", "load_batch", "wait_for_batch",
               "next_batch", "get_batch", "fetch_batch")
QUERY_NAMES = {"cudaEventQuery", "cudaStreamQuery", "cuEventQuery", "cuStreamQuery"}
NOT_NCCL = {"", "wait", "barrier", "coalesced", "init", "split"}
PARTS = ["input_pipeline", "framework", "other", "unknown"]
HOST_FINDINGS = {"input_pipeline": "input_pipeline", "framework_overhead": "framework", "host_other": "other",
                 "host_unknown": "unknown"}


def ns(value):
    """A trace time in microseconds, as text or number, to integer nanoseconds."""
    text = repr(value) if isinstance(value, float) else str(value)
    whole, _, frac = text.partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def base_name(name):
    name = re.sub(r"_(ptsz|ptds).*$", "", name)
    return re.sub(r"_v[0-9]+$", "", name)


def is_input(name):
    low = name.lower()
    return any(n in low for n in INPUT_NAMES)


def merge(intervals):
    out = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def subtract(lo, hi, covered):
    """[lo, hi) less the merged intervals `covered`: a list of pieces."""
    pieces, cursor = [], lo
    i = bisect.bisect_left(covered, [lo, lo]) - 1
    i = max(i, 0)
    while i < len(covered) and covered[i][0] < hi:
        a, b = covered[i]
        if b > cursor and a < hi:
            if a > cursor:
                pieces.append((cursor, min(a, hi)))
            cursor = max(cursor, b)
        i += 1
    if cursor < hi:
        pieces.append((cursor, hi))
    return pieces


def overlap(lo, hi, covered):
    """Length of [lo, hi) covered by the merged intervals `covered`."""
    return (hi - lo) - sum(b - a for a, b in subtract(lo, hi, covered))


def without_host_events(path, out_path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if not (
        category(e) == "python_function" or
        (category(e) in ("cpu_op", "user_annotation") and not is_step(e.get("name", ""))))]
    with gzip.open(out_path, "wt", encoding="utf-8") as f:
        json.dump(trace, f)


def reference(path):
    # Times as their text: a double holds a microsecond timestamp of today (1.7e15) only to a
    # quarter microsecond, and ns() reads the text exactly, as gapwatch does.
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events = json.load(f, parse_float=str)["traceEvents"]
    work, calls_by_corr = [], {}
    cuda = {}       # tid -> intervals inside CUDA calls (polls merged) or c10d's NCCL ranges
    ops, inputs, annotated = {}, {}, {}   # tid -> intervals
    any_host = False
    polls = {}      # tid -> (name, start, end) of the open polling run
    for e in sorted((e for e in events if e.get("ph") == "X"), key=lambda e: ns(e["ts"])):
        cat, name, tid = category(e), e.get("name", ""), e.get("tid")
        start = ns(e["ts"])
        end = start + ns(e.get("dur", 0))
        args = e.get("args", {})
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            if end > start:
                work.append((start, end, args.get("correlation", 0) or 0, args.get("device", e.get("pid"))))
        elif cat in ("cuda_runtime", "cuda_driver"):
            if args.get("correlation"):
                calls_by_corr[args["correlation"]] = (tid, start, end)
            # A thread's run of polls of one API is one call, first entry to last exit (the recorder's
            # QUERY call): the time between polls is in a CUDA call too.
            run = polls.get(tid)
            if run and base_name(name) in QUERY_NAMES and name == run[0] and run[2] <= start <= run[2] + 100_000:
                polls[tid] = (name, run[1], max(run[2], end))
                continue
            if run:
                cuda.setdefault(tid, []).append((run[1], run[2]))
                del polls[tid]
            if base_name(name) in QUERY_NAMES:
                polls[tid] = (name, start, end)
            else:
                cuda.setdefault(tid, []).append((start, end))
        elif cat == "cpu_op":
            if is_step(name):
                continue
            any_host = True
            (inputs if is_input(name) else ops).setdefault(tid, []).append((start, end))
            collective = args.get("Collective name", "")
            if name == "record_param_comms" and collective.lstrip("_") not in NOT_NCCL:
                cuda.setdefault(tid, []).append((start, end))
        elif cat == "user_annotation":
            if is_step(name):
                continue
            if name.startswith("nccl:"):
                cuda.setdefault(tid, []).append((start, end))
                continue
            any_host = True
            (inputs if is_input(name) else annotated).setdefault(tid, []).append((start, end))
        elif cat == "python_function" and is_input(name):
            any_host = True
            inputs.setdefault(tid, []).append((start, end))
    for tid, (_, start, end) in polls.items():
        cuda.setdefault(tid, []).append((start, end))
    cuda = {t: merge(v) for t, v in cuda.items()}
    ops = {t: merge(v) for t, v in ops.items()}
    inputs = {t: merge(v) for t, v in inputs.items()}

    parts = dict.fromkeys(PARTS, 0)
    idle = window = 0
    by_device = {}
    for w in work:
        by_device.setdefault(w[3], []).append(w)
    for device_work in by_device.values():
        device_work.sort(key=lambda w: (w[0], w[2]))
        window += max(w[1] for w in device_work) - device_work[0][0]
        frontier = device_work[0][1]
        for start, end, correlation, _ in device_work[1:]:
            if start > frontier:
                g0, g1 = frontier, start
                idle += g1 - g0
                call = calls_by_corr.get(correlation)
                if call is None:
                    if g1 - g0 >= LAUNCH_THRESHOLD_NS:
                        parts["unknown"] += g1 - g0
                elif call[2] > g0 and g1 - g0 >= LAUNCH_THRESHOLD_NS:
                    tid = call[0]
                    for a, b in subtract(g0, g1, cuda.get(tid, [])):
                        if not any_host:
                            parts["unknown"] += b - a
                            continue
                        in_input = overlap(a, b, inputs.get(tid, []))
                        rest = subtract(a, b, inputs.get(tid, []))
                        in_ops = sum(overlap(x, y, ops.get(tid, [])) for x, y in rest)
                        parts["input_pipeline"] += in_input
                        parts["framework"] += in_ops
                        parts["other"] += (b - a) - in_input - in_ops
            frontier = max(frontier, end)
    return {"parts": parts, "idle": idle, "window": window}


def main():
    if not os.path.isdir(DATA):
        print(f"no shared traces at {DATA}: skipped")
        return 77
    traces = sorted(os.path.join(DATA, f) for f in os.listdir(DATA) if f.endswith(".json.gz"))
    failures = []
    tmp = tempfile.TemporaryDirectory()
    gpu_only = os.path.join(tmp.name, "train_control_gpu_only.json.gz")
    if os.path.join(DATA, "train_control.json.gz") in traces:
        without_host_events(os.path.join(DATA, "train_control.json.gz"), gpu_only)
        traces.append(gpu_only)
    print(f"{'trace':28} {'part':15} {'report ms':>10} {'reference ms':>13} {'diff % idle':>11}")
    for path in traces:
        name = os.path.basename(path)
        ref = reference(path)
        out = subprocess.run([GAPWATCH, "report", "--json", path], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            failures.append(f"{name}: gapwatch report exited {out.returncode}: {out.stderr.strip()}")
            continue
        process = json.loads(out.stdout)["processes"][0]
        reported = process["host_cpu_by_part"]
        idle = process["idle_ns"]
        if idle != ref["idle"]:
            failures.append(f"{name}: idle {idle} ns, the reference's {ref['idle']} ns")
        for part in PARTS:
            diff = abs(reported[part] - ref["parts"][part])
            share = diff / idle if idle else 0.0
            print(f"{name:28} {part:15} {reported[part] / 1e6:10.3f} {ref['parts'][part] / 1e6:13.3f} {100 * share:10.2f}%")
            if share > TOLERANCE:
                failures.append(f"{name}: {part} {reported[part]} ns, reference {ref['parts'][part]} ns "
                                f"({100 * share:.1f}% of idle apart)")
        findings = [f["id"] for f in process["findings"]]
        if ref["parts"]["input_pipeline"] < MIN_WINDOW_SHARE * ref["window"] and "input_pipeline" in findings:
            failures.append(f"{name}: an input_pipeline finding, but data loading covers only "
                            f"{ref['parts']['input_pipeline'] / 1e6:.3f} ms of its idle time")
        host = [f for f in process["findings"] if f["id"] in HOST_FINDINGS]
        evidenced = {p: v for p, v in ref["parts"].items() if p != "unknown"}
        if host and process["findings"][0]["id"] in HOST_FINDINGS and max(evidenced.values()) > 0:
            largest = max(evidenced, key=evidenced.get)
            said = HOST_FINDINGS[process["findings"][0]["id"]]
            if said != largest:
                failures.append(f"{name}: the verdict names {said}, the reference's largest part is {largest}")
        if path == gpu_only:
            if ref["parts"]["unknown"] == 0 or any(ref["parts"][p] for p in PARTS if p != "unknown"):
                failures.append(f"{name}: the reference itself should find only unknown host time: {ref['parts']}")
            told = [f for f in findings if f in HOST_FINDINGS and f != "host_unknown"]
            if told:
                failures.append(f"{name}: no host events, yet the findings {told}")
        print(f"{name:28} verdict: {process['verdict']}")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(traces) - len({f.split(':')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0] for f in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
