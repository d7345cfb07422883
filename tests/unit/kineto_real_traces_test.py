"""`gapwatch report --json` on the real PyTorch profiler (Kineto) traces of ../shared/data/kineto/:
each is read (no error, not truncated, no late events) and its event counts (kernels, memcpys,
memsets, launch calls; API calls once a thread's consecutive polls are merged; NCCL calls from
record_param_comms and nccl:* annotations) equal the counts Python's json and gzip find in the same
file by the rules of reader/kineto_host_events.h. First, with no data needed, malformed traces (cut
short, a gzip stream cut short, trailing data, nesting a million deep, ...) are refused with exit 2
and one line.

    kineto_real_traces_test.py GAPWATCH REPO_ROOT

The traces are found relative to the repository, at REPO_ROOT/../shared/data/kineto (or where
GAPWATCH_KINETO_DATA points). Where that directory is missing (a fresh clone elsewhere), the test
says so and exits 77, which ctest reports as skipped.
"""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kineto_categories import category  # noqa: E402

GAPWATCH, REPO_ROOT = sys.argv[1], sys.argv[2]
DATA = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(REPO_ROOT, "..", "shared", "data", "kineto")

# The launch calls gapwatch counts (events.launches: kernel and graph launches).
LAUNCH_NAMES = {
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
    "cudaLaunchCooperativeKernelMultiDevice", "cuLaunchKernel", "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel", "cudaGraphLaunch", "cuGraphLaunch", "__cudaLaunchKernel",
    # HIP (PyTorch on ROCm), as reader/kineto_api_table.cpp lists them.
    "hipLaunchKernel", "hipExtLaunchKernel", "hipLaunchCooperativeKernel",
    "hipLaunchCooperativeKernelMultiDevice", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
    "hipHccModuleLaunchKernel", "hipModuleLaunchCooperativeKernel", "hipGraphLaunch",
}


def base_name(name):
    name = re.sub(r"_(ptsz|ptds).*$", "", name)
    return re.sub(r"_v[0-9]+$", "", name)


# record_param_comms "Collective name"s that are NCCL operations (kineto_host_events.cpp's list).
NCCL_OPS = {
    "allreduce", "all_reduce", "allreduce_coalesced", "all_reduce_coalesced", "broadcast", "broadcast_oop",
    "reduce", "reduce_oop", "allgather", "all_gather", "allgather_base", "all_gather_base",
    "allgather_coalesced", "allgather_into_tensor_coalesced", "all_gather_into_tensor",
    "all_gather_into_tensor_coalesced", "reduce_scatter", "reduce_scatter_base", "reduce_scatter_tensor",
    "reduce_scatter_tensor_coalesced", "all_to_all", "all_to_allv", "alltoall", "alltoall_base", "send",
    "recv", "recv_anysource", "gather", "scatter",
}
QUERY_NAMES = {"cudaEventQuery", "cudaStreamQuery", "cuEventQuery", "cuStreamQuery"}


def nccl_op(name):
    return name[1:] if name.startswith("_") else name


def api_calls_after_merging(events):
    """Runtime and driver calls, a thread's consecutive polls of one API counted once."""
    calls = 0
    pending = {}  # tid -> (name, end)
    for e in events:
        if e.get("ph") != "X" or category(e) not in ("cuda_runtime", "cuda_driver"):
            continue
        tid, name = e.get("tid"), e.get("name", "")
        ts, dur = float(e["ts"]), float(e.get("dur", 0))
        run = pending.get(tid)
        if run and base_name(name) in QUERY_NAMES and name == run[0] and run[1] <= ts <= run[1] + 100:
            pending[tid] = (name, max(run[1], ts + dur))
            continue
        if run:
            calls += 1
            del pending[tid]
        if base_name(name) in QUERY_NAMES:
            pending[tid] = (name, ts + dur)
        else:
            calls += 1
    return calls + len(pending)


def nccl_calls(events):
    comms = [e for e in events if e.get("ph") == "X" and category(e) == "cpu_op" and e.get("name") == "record_param_comms"
             and nccl_op(e.get("args", {}).get("Collective name", "")) in NCCL_OPS]
    annotations = [e for e in events if e.get("ph") == "X" and category(e) == "user_annotation"
                   and e.get("name", "").startswith("nccl:") and nccl_op(e["name"][5:]) in NCCL_OPS]
    inside = sum(1 for a in annotations if any(
        c["tid"] == a["tid"] and float(c["ts"]) <= float(a["ts"]) and
        float(c["ts"]) + float(c["dur"]) >= float(a["ts"]) + float(a["dur"]) for c in comms))
    return len(comms) + len(annotations) - inside


def work_without_call(events):
    """Kernels, copies and memsets whose correlation id no runtime or driver call has."""
    calls = {e.get("args", {}).get("correlation") for e in events
             if e.get("ph") == "X" and category(e) in ("cuda_runtime", "cuda_driver")}
    return sum(1 for e in events if e.get("ph") == "X" and category(e) in ("kernel", "gpu_memcpy", "gpu_memset")
               and e.get("args", {}).get("correlation") not in calls)


def expected_counts(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    counts = {"kernels": 0, "memcpys": 0, "memsets": 0, "launches": 0,
              "rank": trace.get("distributedInfo", {}).get("rank"),
              "api_calls": api_calls_after_merging(trace["traceEvents"]),
              "nccl_calls": nccl_calls(trace["traceEvents"]),
              "without_call": work_without_call(trace["traceEvents"])}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat = category(e)
        if cat == "kernel":
            counts["kernels"] += 1
        elif cat == "gpu_memcpy":
            counts["memcpys"] += 1
        elif cat == "gpu_memset":
            counts["memsets"] += 1
        elif cat in ("cuda_runtime", "cuda_driver") and base_name(e.get("name", "")) in LAUNCH_NAMES:
            counts["launches"] += 1
    return counts


KERNEL = '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}'
WHOLE = gzip.compress(('{"traceEvents": [' + KERNEL + ']}').encode())
# Malformed traces (name, bytes, a part of the one line expected): needs no shared data.
MALFORMED = [
    ("cut.json.gz", gzip.compress(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1'), "cut short"),
    ("cut-in-string.json", b'{"traceEvents": [{"ph": "X", "cat": "ker', "in a string"),
    ("gzip-cut.json.gz", WHOLE[: len(WHOLE) - 9], "gzip stream is cut short"),
    ("trailing.json", ('{"traceEvents": [' + KERNEL + ']} {}').encode(), "trailing data"),
    ("deep.json", b'{"traceEvents": [' + b"[" * 1000000 + b"]" * 1000000 + b"]}", "nested deeper than 64 levels"),
    ("string-ts.json", b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "1"}]}', "traceEvents[0].ts is not a number"),
    ("no-events.json", b'{"schemaVersion": 1}', "no traceEvents"),
]


def check_refused_on_the_command_line():
    """Malformed traces: exit 2 and one line on stderr naming the file and what is wrong."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, data, expected in MALFORMED:
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            run = subprocess.run([GAPWATCH, "report", path], capture_output=True, text=True, timeout=60)
            lines = run.stderr.splitlines()
            if (run.returncode != 2 or len(lines) != 1 or not lines[0].startswith(path + ": Kineto trace: ")
                    or expected not in lines[0]):
                failures.append(f"{name}: exit {run.returncode}, stderr {run.stderr!r}")
    return failures


def main():
    refused = check_refused_on_the_command_line()
    for f in refused:
        print("FAIL " + f)
    if refused:
        return 1
    if not os.path.isdir(DATA):
        print(f"skipped: no Kineto traces at {os.path.normpath(DATA)} (the shared data sits beside the "
              "repository; set GAPWATCH_KINETO_DATA to point elsewhere)")
        return 77
    traces = sorted(f for f in os.listdir(DATA) if f.endswith((".json", ".json.gz")))
    if not traces:
        print(f"skipped: no .json or .json.gz files in {DATA}")
        return 77
    failures = []
    for name in traces:
        path = os.path.join(DATA, name)
        run = subprocess.run([GAPWATCH, "report", "--json", path], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            failures.append(f"{name}: exit {run.returncode}: {run.stderr.strip()}")
            continue
        report = json.loads(run.stdout)
        processes = report["processes"]
        if len(processes) != 1:
            failures.append(f"{name}: {len(processes)} processes in the report, expected 1")
            continue
        p = processes[0]
        want = expected_counts(path)
        got = {
            "kernels": sum(d["kernels"] for d in p["devices"]),
            "memcpys": sum(d["memcpys"] for d in p["devices"]),
            "memsets": sum(d["memsets"] for d in p["devices"]),
            "launches": p["events"]["launches"],
            "rank": p.get("rank"),
            "api_calls": p["events"]["api_calls"],
            "nccl_calls": p["events"]["nccl_calls"],
            "without_call": sum(d["work_without_call"] for d in p["devices"]),
        }
        line = f"{name}: " + ", ".join(f"{k} {got[k]}" for k in ("kernels", "memcpys", "memsets", "launches",
                                                                 "api_calls", "nccl_calls", "without_call"))
        print(line)
        for key in want:
            if got[key] != want[key]:
                failures.append(f"{name}: {key} {got[key]} in the report, {want[key]} in the trace")
        if p.get("truncated"):
            failures.append(f"{name}: reported as truncated")
        if p.get("source") != "kineto_trace":
            failures.append(f"{name}: source {p.get('source')!r}, expected 'kineto_trace'")
        if p.get("late_events", 0) != 0:
            failures.append(f"{name}: {p['late_events']} late events")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
