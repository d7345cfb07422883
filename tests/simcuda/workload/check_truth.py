#!/usr/bin/env python3
"""Checks a gapwatch-sim truth file against its scenario, independently of gapwatch-sim's code.

usage: check_truth.py [--run GAPWATCH_SIM [--attempts N]] SCENARIO.json TRUTH.json

With --run, first runs `GAPWATCH_SIM SCENARIO.json --truth TRUTH.json`. Then, from the timeline in
the truth file and from the scenario file alone (python3 standard library only):
  - recomputes window, busy, idle, gaps, histogram and the cause of every idle nanosecond with the
    definitions of docs/scenarios.md, and compares them with the file's numbers;
  - checks busy + idle == window and that causes sum to idle;
  - checks every blocked call returned after the device work it had to wait for, and that its
    waited_until_ns is exactly the end of that work;
  - recomputes the sync-point statistics;
  - predicts from the scenario how many calls of each API name the run made, and compares;
  - asserts the scenario's "expect" block (dominant cause, idle-fraction bounds...).
The simulated GPU runs on the host's clock, so a loaded machine (a thread descheduled for
milliseconds) really moves idle time between causes. The truth must always agree with itself; only
when nothing but an "expect" assertion fails is the run repeated, up to N attempts in all (3).
How starved each run was is measured from its host work: the time host spans overran what the
scenario asked for by more than 20 us (a preemption, not clock noise), as a share of the window.
Exit status: 0 when everything holds; 77 (a skip) when only expectations missed and every attempt
that missed was starved (over 1%); otherwise 1, with each problem printed.
"""
import bisect
import json
import subprocess
import sys

CAUSES = ["host_cpu", "launch_overhead", "sync_copy", "cuda_api", "nccl_host", "dependency"]
SYNC_TYPES = ["device_sync", "stream_sync", "event_sync", "sync_copy", "pageable_async_copy", "memset",
              "malloc_free", "other"]
ACTIVITY_KINDS = ("kernel", "memcpy", "memset")
# Host work labels as gapwatch's host parts (docs/scenarios.md); any other label is "other".
HOST_PART_OF_LABEL = {"data": "input_pipeline", "fork_workers": "input_pipeline", "python": "framework"}
COPY_KINDS = ("memcpy", "memcpy_async", "memset", "memset_async")
LAUNCH_LIKE = ("launch", "graph_launch", "event_record", "stream_wait_event")
LAUNCH_ENTRY_API = {"chevron": "__cudaLaunchKernel", "launch_kernel": "cudaLaunchKernel",
                    "launch_kernel_ex": "cudaLaunchKernelExC"}
NCCL_API = {"all_reduce": "ncclAllReduce", "broadcast": "ncclBroadcast", "reduce": "ncclReduce",
            "all_gather": "ncclAllGather", "reduce_scatter": "ncclReduceScatter"}


class Problems:
    def __init__(self):
        self.items = []
        self.only_expectations = True  # all problems so far are missed "expect" assertions

    def add(self, where, message):
        self.items.append("%s: %s" % (where, message))
        if where != "expect":
            self.only_expectations = False

    def equal(self, where, what, got, want):
        if got != want:
            self.add(where, "%s is %r, recomputed %r" % (what, got, want))


def rows(table):
    fields = table["fields"]
    return [dict(zip(fields, row)) for row in table["rows"]]


# ---- the scenario, read the way docs/scenarios.md describes it -----------------------------------

class ScenarioModel:
    def __init__(self, doc):
        self.doc = doc
        self.processes = doc.get("processes", 1)
        self.steps = doc["steps"]["count"]
        self.kernels = doc.get("kernels", {})
        self.streams = doc.get("streams", [])
        self.events = doc.get("events", [])
        steps = doc["steps"]
        self.thread_lists = [steps["ops"]] if "ops" in steps else [t["ops"] for t in steps["threads"]]
        self.warmup = doc.get("warmup")
        self.recompiles = doc.get("recompiles", [])
        self.expect = doc.get("expect", {})

    def all_lists(self):
        """Every op list once, whether or not it runs."""
        if self.warmup:
            yield self.warmup.get("ops", [])
        for r in self.recompiles:
            yield r.get("ops", [])
        for ops in self.thread_lists:
            yield ops

    def all_ops(self):
        def walk(ops):
            for op in ops:
                yield op
                if "repeat" in op:
                    yield from walk(op["ops"])
        for ops in self.all_lists():
            yield from walk(ops)

    def executions(self):
        """(op, times it runs, thread index) for every op of the run; step lists step by step."""
        out = []

        def walk_once(ops, times, thread):
            for op in ops:
                out.append((op, times, thread))
                if "repeat" in op:
                    walk_once(op["ops"], times * op["repeat"], thread)

        def runs_at(op, step):
            lo, hi, every = op.get("from_step", 0), op.get("until_step", self.steps), op.get("every", 1)
            return lo <= step < hi and (step - lo) % every == 0

        def walk_step(ops, times, thread, step):
            for op in ops:
                if runs_at(op, step):
                    out.append((op, times, thread))
                    if "repeat" in op:
                        walk_step(op["ops"], times * op["repeat"], thread, step)

        if self.warmup:
            walk_once(self.warmup.get("ops", []), 1, 0)
        for r in self.recompiles:
            walk_once(r.get("ops", []), 1, 0)
        for t, ops in enumerate(self.thread_lists):
            for step in range(self.steps):
                walk_step(ops, 1, t, step)
        return out


def expected_api_counts(model, world_size):
    """How many calls of each name a rank makes, from the scenario alone (docs/scenarios.md,
    "What the run calls")."""
    counts = {}

    def add(name, n=1):
        if n:
            counts[name] = counts.get(name, 0) + n

    ops = list(model.all_ops())
    needs_device_buffer = any(k in op for op in ops for k in ("copy", "memset", "nccl")) or any(
        op.get("sync") == "item" for op in ops)
    needs_pinned = any("copy" in op and op["copy"] != "d2d" and op.get("memory", "pinned") == "pinned" for op in ops)
    uses_nccl = any("nccl" in op for op in ops)

    add("cudaGetDeviceCount")
    add("cudaSetDevice", len(model.thread_lists))
    add("cudaStreamCreateWithFlags", len(model.streams))
    add("cudaStreamDestroy", len(model.streams))
    add("cudaEventCreateWithFlags", len(model.events))
    add("cudaEventDestroy", len(model.events))
    if needs_device_buffer:
        add("cudaMalloc")
        add("cudaFree")
    if needs_pinned:
        add("cudaMallocHost")
        add("cudaFreeHost")
    if uses_nccl:
        for name, n in nccl_setup_calls(world_size).items():
            add(name, n)
    add("cudaDeviceSynchronize")  # the final one

    chevron_kernels = set()
    mallocs = frees = 0
    for op, n, _thread in model.executions():
        if n == 0:
            continue
        if "kernel" in op:
            k = model.kernels[op["kernel"]]
            entry = op.get("launch", k.get("launch", "chevron"))
            c = n * op.get("count", 1)
            add(LAUNCH_ENTRY_API[entry], c)
            if entry == "chevron" and c:
                chevron_kernels.add(op["kernel"])
        elif "copy" in op:
            add("cudaMemcpyAsync" if op.get("async", False) else "cudaMemcpy", n * op.get("count", 1))
        elif "memset" in op:
            add("cudaMemsetAsync" if op.get("async", False) else "cudaMemset", n * op.get("count", 1))
        elif "sync" in op:
            kind = op["sync"]
            if kind == "device":
                add("cudaDeviceSynchronize", n)
            elif kind == "stream":
                add("cudaStreamSynchronize", n)
            elif kind == "event":
                add("cudaEventSynchronize", n)
            else:
                add("cudaMemcpyAsync", n)
                add("cudaStreamSynchronize", n)
        elif "record_event" in op:
            add("cudaEventRecord", n)
        elif "wait_event" in op:
            add("cudaStreamWaitEvent", n)
        elif "malloc" in op:
            add("cudaMalloc", n * op.get("count", 1))
            mallocs += n * op.get("count", 1)
        elif "free" in op:
            add("cudaFree", n * op["free"])
            frees += n * op["free"]
        elif "nccl" in op:
            for name, per in nccl_op_calls(op["nccl"]).items():
                add(name, n * op.get("count", 1) * per)
    add("__cudaGetKernel", len(chevron_kernels))
    add("cudaFree", mallocs - frees)  # what is still allocated is freed at teardown
    # A recompile that loads kernels loads their cubin as Triton's launcher does (docs/scenarios.md).
    add("cuModuleLoadData", sum(1 for r in model.recompiles if r.get("load")))
    return counts


def nccl_setup_calls(world_size):
    # ncclGetUniqueId is made too (by the launcher when there are several ranks) but the simulated
    # libnccl does not log it: it is not a call on a communicator.
    return {"ncclCommInitRank": 1, "ncclCommDestroy": 1}


def nccl_op_calls(kind):
    """Calls logged for one NCCL op: the NCCL host call(s) and the driver launch of its one kernel
    (a group of send and recv on one communicator and stream is one kernel)."""
    if kind == "send_recv":
        return {"ncclGroupStart": 1, "ncclSend": 1, "ncclRecv": 1, "ncclGroupEnd": 1, "cuLaunchKernelEx": 1}
    return {NCCL_API[kind]: 1, "cuLaunchKernelEx": 1}


def expected_op_counts(model):
    """Device ops by kind that are certain from the scenario (kernels: at least the launches)."""
    counts = {"kernel": 0, "memcpy": 0, "memset": 0, "marker": 0}
    nccl_kernels = 0
    for op, n, _thread in model.executions():
        if "kernel" in op:
            counts["kernel"] += n * op.get("count", 1)
        elif "copy" in op:
            counts["memcpy"] += n * op.get("count", 1)
        elif "memset" in op:
            counts["memset"] += n * op.get("count", 1)
        elif op.get("sync") == "item":
            counts["memcpy"] += n
        elif "record_event" in op or "wait_event" in op:
            counts["marker"] += n
        elif "nccl" in op:
            nccl_kernels += n * op.get("count", 1)
    return counts, nccl_kernels


# ---- the timeline's numbers, recomputed -----------------------------------------------------------

def bucket_of(ns):
    if ns < 1000:
        return 0
    if ns >= 1000000000:
        return 21
    return min(20, (ns // 1000).bit_length())


def call_category(c):
    """0 sync_copy, 1 nccl_host, 2 launch_overhead, 3 cuda_api: the lowest wins where calls nest."""
    if c["kind"] in COPY_KINDS and c["blocked"]:
        return 0
    if c["kind"] == "nccl":
        return 1
    if c["kind"] in COPY_KINDS or c["kind"] in LAUNCH_LIKE:
        return 2
    return 3


CATEGORY_CAUSE = ["sync_copy", "nccl_host", "launch_overhead", "cuda_api"]


class ProcessTimeline:
    def __init__(self, proc):
        self.ops = rows(proc["timeline"]["ops"])
        self.calls = rows(proc["timeline"]["api_calls"])
        self.host_work = rows(proc["host_work"])
        self.calls_by_tid = {}
        for c in self.calls:
            self.calls_by_tid.setdefault(c["tid"], []).append(c)
        self.enter_index = {}
        for tid, cs in self.calls_by_tid.items():
            cs.sort(key=lambda c: c["enter_ns"])
            running, maxima = 0, []
            for c in cs:
                running = max(running, c["exit_ns"])
                maxima.append(running)
            self.enter_index[tid] = maxima
        self.by_op = {}
        self.launch_by_corr = {}
        for c in self.calls:
            if c["op_index"] >= 0:
                self.by_op.setdefault(c["op_index"], []).append(c)
            if c["kind"] == "launch" and c["correlation_id"]:
                self.launch_by_corr.setdefault(c["correlation_id"], []).append(c)
        self.sync_ends = {c["waited_until_ns"] for c in self.calls
                          if c["blocked"] and c["waited_until_ns"] > c["enter_ns"]}
        self.spans_by_tid = {}
        for s in self.host_work:
            self.spans_by_tid.setdefault(s["tid"], []).append(s)
        for spans in self.spans_by_tid.values():
            spans.sort(key=lambda s: s["start_ns"])

    def queuing_call(self, op):
        cands = self.by_op.get(op["index"])
        if not cands and op["correlation_id"]:
            cands = self.launch_by_corr.get(op["correlation_id"])
        if not cands:
            return None
        return max(cands, key=lambda c: c["exit_ns"])

    def overlapping_calls(self, tid, g0, g1):
        cs = self.calls_by_tid.get(tid, [])
        maxima = self.enter_index.get(tid, [])
        i = bisect.bisect_right(maxima, g0)
        out = []
        while i < len(cs) and cs[i]["enter_ns"] < g1:
            c = cs[i]
            if c["exit_ns"] > g0 and c["enter_ns"] < g1:
                out.append(c)
            i += 1
        return out

    def attribute(self, g0, g1, nxt, threshold_ns, labels):
        causes = dict.fromkeys(CAUSES, 0)
        queued = self.queuing_call(nxt)
        if queued is not None and queued["exit_ns"] <= g0:
            causes["dependency"] = g1 - g0
            return causes
        calls = self.overlapping_calls(nxt["tid"], g0, g1)
        points = sorted({g0, g1} | {max(g0, c["enter_ns"]) for c in calls} | {min(g1, c["exit_ns"]) for c in calls})
        outside = "launch_overhead" if g1 - g0 < threshold_ns else "host_cpu"
        for a, b in zip(points, points[1:]):
            cats = [call_category(c) for c in calls if c["enter_ns"] <= a and c["exit_ns"] >= b]
            if cats:
                causes[CATEGORY_CAUSE[min(cats)]] += b - a
            else:
                causes[outside] += b - a
                if outside == "host_cpu":
                    covered = 0
                    for s in self.spans_by_tid.get(nxt["tid"], []):
                        lo, hi = max(a, s["start_ns"]), min(b, s["end_ns"])
                        if lo < hi:
                            labels[s["label"]] = labels.get(s["label"], 0) + hi - lo
                            covered += hi - lo
                    if b - a > covered:
                        labels["unlabeled"] = labels.get("unlabeled", 0) + (b - a - covered)
        return causes


def check_device(problems, where, dev, tl, threshold_ns, main_start_ns):
    work = [o for o in tl.ops if o["device"] == dev["device"] and o["kind"] in ACTIVITY_KINDS
            and o["end_ns"] > o["start_ns"]]
    work.sort(key=lambda o: (o["start_ns"], o["index"]))
    nccl_ns = sum(o["end_ns"] - o["start_ns"] for o in tl.ops if o["device"] == dev["device"] and
                  o["kind"] == "kernel" and "ncclDevKernel_" in o["name"])
    problems.equal(where, "nccl_kernel_ns", dev["nccl_kernel_ns"], nccl_ns)
    result = {"causes": dict.fromkeys(CAUSES, 0), "window": 0, "idle": 0, "after_sync_ns": 0, "labels": {}}
    if not work:
        problems.equal(where, "busy_ns", dev["busy_ns"], 0)
        return result
    # Busy: the measure of the union, by merging sorted intervals.
    merged = []
    gaps = []
    for o in work:
        if merged and o["start_ns"] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], o["end_ns"])
        else:
            if merged:
                gaps.append((merged[-1][1], o["start_ns"], o))
            merged.append([o["start_ns"], o["end_ns"]])
    busy = sum(b - a for a, b in merged)
    w0, w1 = merged[0][0], merged[-1][1]
    window = w1 - w0
    idle = window - busy
    problems.equal(where, "window.start_ns", dev["window"]["start_ns"], w0)
    problems.equal(where, "window.end_ns", dev["window"]["end_ns"], w1)
    problems.equal(where, "window.ns", dev["window"]["ns"], window)
    problems.equal(where, "busy_ns", dev["busy_ns"], busy)
    problems.equal(where, "idle_ns", dev["idle_ns"], idle)
    if dev["busy_ns"] + dev["idle_ns"] != dev["window"]["ns"]:
        problems.add(where, "busy + idle != window in the file")
    if sum(g1 - g0 for g0, g1, _ in gaps) != idle:
        problems.add(where, "recomputed gaps do not add up to idle")
    problems.equal(where, "leading_ns", dev["leading_ns"], w0 - main_start_ns)
    if window and abs(dev["idle_fraction"] - idle / window) > 1e-9:
        problems.add(where, "idle_fraction %r, recomputed %r" % (dev["idle_fraction"], idle / window))
    problems.equal(where, "gap_count", dev["gap_count"], len(gaps))

    file_gaps = rows(dev["gaps"])
    if len(file_gaps) != len(gaps):
        problems.add(where, "%d gap rows, recomputed %d gaps" % (len(file_gaps), len(gaps)))
    totals = dict.fromkeys(CAUSES, 0)
    labels = {}
    after_ns = after_gaps = 0
    histogram = [[0, 0] for _ in range(22)]
    mismatched = 0
    for i, (g0, g1, nxt) in enumerate(gaps):
        causes = tl.attribute(g0, g1, nxt, threshold_ns, labels)
        if sum(causes.values()) != g1 - g0:
            problems.add(where, "gap %d: recomputed causes do not sum to its length" % i)
        after = g0 in tl.sync_ends
        if after:
            after_ns += g1 - g0
            after_gaps += 1
        for c in CAUSES:
            totals[c] += causes[c]
        b = bucket_of(g1 - g0)
        histogram[b][0] += 1
        histogram[b][1] += g1 - g0
        if i < len(file_gaps):
            fg = file_gaps[i]
            if sum(fg[c] for c in CAUSES) != fg["end_ns"] - fg["start_ns"]:
                problems.add(where, "gap row %d: causes do not sum to its length" % i)
            want = (g0, g1, nxt["index"], 1 if after else 0) + tuple(causes[c] for c in CAUSES)
            got = (fg["start_ns"], fg["end_ns"], fg["next_op"], fg["after_sync"]) + tuple(fg[c] for c in CAUSES)
            if got != want:
                mismatched += 1
                if mismatched <= 5:
                    problems.add(where, "gap row %d is %r, recomputed %r" % (i, got, want))
    if mismatched > 5:
        problems.add(where, "%d gap rows differ in all" % mismatched)
    for c in CAUSES:
        problems.equal(where, "idle_by_cause.%s" % c, dev["idle_by_cause"][c], totals[c])
    if sum(dev["idle_by_cause"].values()) != dev["idle_ns"]:
        problems.add(where, "idle_by_cause sums to %d, idle_ns is %d" % (sum(dev["idle_by_cause"].values()),
                                                                         dev["idle_ns"]))
    problems.equal(where, "host_cpu_by_label", dev["host_cpu_by_label"], labels)
    parts = {"input_pipeline": 0, "framework": 0, "other": 0}
    for label, ns in labels.items():
        parts[HOST_PART_OF_LABEL.get(label, "other")] += ns
    problems.equal(where, "host_cpu_by_part", dev["host_cpu_by_part"], parts)
    problems.equal(where, "after_sync", dev["after_sync"], {"ns": after_ns, "gaps": after_gaps})
    for b, bucket in enumerate(dev["histogram"]):
        problems.equal(where, "histogram[%d]" % b, [bucket["count"], bucket["total_ns"]], histogram[b])
    want_lo = [0] + [1000 << (k - 1) for k in range(1, 21)] + [1000000000]
    if [b["lo_ns"] for b in dev["histogram"]] != want_lo:
        problems.add(where, "histogram bucket bounds differ from the documented ones")
    result.update(causes=totals, window=window, idle=idle, after_sync_ns=after_ns, labels=labels)
    return result


def nearest_rank(sorted_values, percent):
    if not sorted_values:
        return 0
    rank = -(-percent * len(sorted_values) // 100)
    return sorted_values[max(rank, 1) - 1]


def sync_type(c):
    k = c["kind"]
    return {"device_sync": "device_sync", "stream_sync": "stream_sync", "event_sync": "event_sync",
            "memcpy": "sync_copy", "memcpy_async": "pageable_async_copy", "memset": "memset",
            "memset_async": "memset", "malloc": "malloc_free", "free": "malloc_free",
            "host_alloc": "malloc_free", "host_free": "malloc_free"}.get(k, "other")


def check_blocked_calls(problems, where, tl):
    ops_by_index = {o["index"]: o for o in tl.ops}
    for c in tl.calls:
        if not c["blocked"]:
            continue
        here = "%s: blocked %s (call %d)" % (where, c["name"], c["index"])
        if c["exit_ns"] < c["waited_until_ns"]:
            problems.add(here, "returned at %d, before the device time it waited for (%d)" %
                         (c["exit_ns"], c["waited_until_ns"]))
        kind = c["kind"]
        if kind in COPY_KINDS:
            op = ops_by_index.get(c["op_index"])
            if op is None:
                problems.add(here, "names no device op")
                continue
            must_wait = [op]
        elif kind == "stream_sync":
            must_wait = [o for o in tl.ops if o["stream"] == c["stream"] and o["queued_ns"] < c["enter_ns"]]
        elif kind in ("device_sync", "malloc", "free", "host_free", "host_alloc"):
            must_wait = [o for o in tl.ops if o["queued_ns"] < c["enter_ns"]]
        elif kind == "event_sync":
            # The event's identity is not in the log: it waited for some marker queued before it.
            if c["waited_until_ns"] and not any(o["kind"] == "marker" and o["end_ns"] == c["waited_until_ns"] and
                                                o["queued_ns"] < c["enter_ns"] for o in tl.ops):
                problems.add(here, "waited_until_ns matches no event marker queued before it")
            continue
        else:
            continue
        latest = max((o["end_ns"] for o in must_wait), default=0)
        if c["exit_ns"] < latest:
            problems.add(here, "returned at %d, before work it had to wait for ended (%d)" % (c["exit_ns"], latest))
        if c["waited_until_ns"] != latest:
            # Another thread may queue on the same stream while the call starts; the call then
            # waits for that too.
            late = [o for o in tl.ops if c["enter_ns"] <= o["queued_ns"] < c["exit_ns"] and o["tid"] != c["tid"]
                    and o["end_ns"] == c["waited_until_ns"]]
            if not late:
                problems.add(here, "waited_until_ns %d, but the work queued before it ends at %d" %
                             (c["waited_until_ns"], latest))


def blocked_ns(c):
    """Time a blocked call waited for device work: entry to the end of that work, clipped to the call."""
    if c["waited_until_ns"] <= c["enter_ns"]:
        return 0
    return min(c["waited_until_ns"], c["exit_ns"]) - c["enter_ns"]


def check_sync_points(problems, where, proc, tl):
    values = {t: [] for t in SYNC_TYPES}
    for c in tl.calls:
        if c["blocked"]:
            values[sync_type(c)].append(blocked_ns(c))
    for t in SYNC_TYPES:
        v = sorted(values[t])
        want = {"count": len(v), "total_ns": sum(v), "p50_ns": nearest_rank(v, 50), "p99_ns": nearest_rank(v, 99)}
        problems.equal(where, "sync_points.%s" % t, proc["sync_points"].get(t), want)


def check_counts(problems, where, proc, tl, model):
    from_log = {}
    for c in tl.calls:
        from_log[c["name"]] = from_log.get(c["name"], 0) + 1
    problems.equal(where, "api_call_counts (against the timeline)", proc["api_call_counts"], from_log)
    want = expected_api_counts(model, proc["world_size"])
    if proc["api_call_counts"] != want:
        names = sorted(set(want) | set(proc["api_call_counts"]))
        diff = ["%s: ran %d, scenario says %d" % (n, proc["api_call_counts"].get(n, 0), want.get(n, 0))
                for n in names if proc["api_call_counts"].get(n, 0) != want.get(n, 0)]
        problems.add(where, "API call counts differ from the scenario: " + "; ".join(diff))
    want_ops, nccl_kernels = expected_op_counts(model)
    for dev in proc["devices"]:
        got = {k: 0 for k in ("kernel", "memcpy", "memset", "marker")}
        for o in tl.ops:
            if o["device"] == dev["device"]:
                got[o["kind"]] = got.get(o["kind"], 0) + 1
        problems.equal(where, "op_counts (against the timeline)", dev["op_counts"], got)
        want_dev = dict(want_ops)
        want_dev["kernel"] += nccl_kernels
        problems.equal(where, "device ops by kind (against the scenario)", got, want_dev)


def check_expectations(problems, model, per_process):
    expect = model.expect
    if not expect:
        return
    if "rank" in expect:
        chosen = [p for p in per_process if p[0] == expect["rank"]]
        scope = "rank %d" % expect["rank"]
    else:
        chosen = per_process
        scope = "all ranks"
    causes = dict.fromkeys(CAUSES, 0)
    labels = {}
    window = idle = after = 0
    for _rank, r in chosen:
        for k in CAUSES:
            causes[k] += r["causes"][k]
        for k, v in r["labels"].items():
            labels[k] = labels.get(k, 0) + v
        window += r["window"]
        idle += r["idle"]
        after += r["after_sync_ns"]
    fraction = idle / window if window else 0.0
    dominant = max(CAUSES, key=lambda k: (causes[k], -CAUSES.index(k))) if idle else "none"
    shares = ", ".join("%s %.1f%%" % (k, 100.0 * causes[k] / idle) for k in CAUSES if causes[k]) if idle else "no idle"
    after_fraction = after / idle if idle else 0.0
    top_label = max(sorted(labels), key=lambda k: labels[k]) if labels else "none"
    print("%s: idle fraction %.4f, dominant cause %s (%s); after a sync %.1f%% of idle; host_cpu mostly in %s" %
          (scope, fraction, dominant, shares, 100.0 * after_fraction, top_label))
    if "dominant_cause" in expect and dominant != expect["dominant_cause"]:
        problems.add("expect", "dominant cause on %s is %s, the scenario expects %s" %
                     (scope, dominant, expect["dominant_cause"]))
    if "idle_fraction_max" in expect and fraction > expect["idle_fraction_max"]:
        problems.add("expect", "idle fraction on %s is %.4f, above %s" % (scope, fraction, expect["idle_fraction_max"]))
    if "idle_fraction_min" in expect and fraction < expect["idle_fraction_min"]:
        problems.add("expect", "idle fraction on %s is %.4f, below %s" % (scope, fraction, expect["idle_fraction_min"]))
    if "after_sync_fraction_min" in expect and after_fraction < expect["after_sync_fraction_min"]:
        problems.add("expect", "%.4f of the idle time on %s follows a sync, below %s" %
                     (after_fraction, scope, expect["after_sync_fraction_min"]))
    if "dominant_host_label" in expect and top_label != expect["dominant_host_label"]:
        problems.add("expect", "host_cpu time on %s falls mostly in %s, the scenario expects %s" %
                     (scope, top_label, expect["dominant_host_label"]))


def check(scenario_doc, truth):
    problems = Problems()
    model = ScenarioModel(scenario_doc)
    threshold_ns = truth["definitions"]["launch_threshold_ns"]
    problems.equal("definitions", "launch_threshold_ns", threshold_ns,
                   round(scenario_doc.get("launch_threshold_us", 30) * 1000))
    problems.equal("definitions", "causes", truth["definitions"]["causes"], CAUSES)
    procs = truth["processes"]
    problems.equal("processes", "ranks", [p["rank"] for p in procs], list(range(model.processes)))
    per_process = []
    sums = {"window_ns": 0, "busy_ns": 0, "idle_ns": 0}
    total_causes = dict.fromkeys(CAUSES, 0)
    for p in procs:
        where = "rank %d" % p["rank"]
        problems.equal(where, "world_size", p["world_size"], model.processes)
        tl = ProcessTimeline(p)
        rank = {"causes": dict.fromkeys(CAUSES, 0), "window": 0, "idle": 0, "after_sync_ns": 0, "labels": {}}
        for dev in p["devices"]:
            dwhere = "%s device %d" % (where, dev["device"])
            r = check_device(problems, dwhere, dev, tl, threshold_ns, p["main_start_ns"])
            for k in CAUSES:
                rank["causes"][k] += r["causes"][k]
                total_causes[k] += r["causes"][k]
            for k, v in r["labels"].items():
                rank["labels"][k] = rank["labels"].get(k, 0) + v
            for k in ("window", "idle", "after_sync_ns"):
                rank[k] += r[k]
            sums["window_ns"] += r["window"]
            sums["busy_ns"] += r["window"] - r["idle"]
            sums["idle_ns"] += r["idle"]
        per_process.append((p["rank"], rank))
        check_blocked_calls(problems, where, tl)
        check_sync_points(problems, where, p, tl)
        check_counts(problems, where, p, tl, model)
    total = truth["total"]
    for k, v in sums.items():
        problems.equal("total", k, total[k], v)
    problems.equal("total", "idle_by_cause", total["idle_by_cause"], total_causes)
    check_expectations(problems, model, per_process)
    return problems


# Timing. A slower machine does not move a scenario's causes: host work spans are sleeps or spins
# of the requested length, and the calls between them take microseconds, a few more on a machine
# half as fast. Preemption does (the simulated GPU keeps running while the host is descheduled),
# and it is measured rather than guessed: a span that overran by more than PREEMPTION_NS (far more
# than any machine's own overhead for a span) was preempted. An expectation may miss only in a
# run that lost more than STARVED_SHARE of its window that way, and then the test is a skip, not a
# pass; everything else checked here is arithmetic on the truth file and cannot depend on timing.
STARVED_SHARE = 0.01
PREEMPTION_NS = 20000


def starvation(truth):
    """Host-work overrun from preemption, as a share of the summed windows."""
    overrun = 0
    for p in truth["processes"]:
        for span in rows(p["host_work"]):
            late = span["end_ns"] - span["start_ns"] - span["requested_ns"]
            if late > PREEMPTION_NS:
                overrun += late
    window = truth["total"]["window_ns"]
    return overrun / window if window else 0.0


def usage():
    print(__doc__.strip().splitlines()[2], file=sys.stderr)
    return 2


def main(argv):
    args = argv[1:]
    sim, attempts = None, 1
    if args[:1] == ["--run"]:
        if len(args) < 2:
            return usage()
        sim, args, attempts = args[1], args[2:], 3
        if args[:1] == ["--attempts"]:
            if len(args) < 2 or not args[1].isdigit() or int(args[1]) < 1:
                return usage()
            attempts, args = int(args[1]), args[2:]
    if len(args) != 2:
        return usage()
    scenario_path, truth_path = args
    with open(scenario_path) as f:
        scenario_doc = json.load(f)
    misses_all_starved = True
    for attempt in range(1, attempts + 1):
        if sim:
            proc = subprocess.run([sim, scenario_path, "--truth", truth_path], timeout=100)
            if proc.returncode != 0:
                print("FAIL: gapwatch-sim exited with status %d" % proc.returncode)
                return 1
        with open(truth_path) as f:
            truth = json.load(f)
        problems = check(scenario_doc, truth)
        starved = starvation(truth)
        print("host work lost to preemption: %.2f%% of the window" % (100.0 * starved))
        for item in problems.items:
            print("FAIL: " + item)
        if not problems.items:
            print("ok: %s agrees with %s%s" % (truth_path, scenario_path,
                                                " (attempt %d)" % attempt if attempt > 1 else ""))
            return 0
        print("%d problem(s) in %s" % (len(problems.items), truth_path))
        if not problems.only_expectations:
            return 1
        misses_all_starved &= starved > STARVED_SHARE
        if attempt < attempts:
            print("only expectations missed (a loaded machine?): running the scenario again")
    if misses_all_starved:
        print("SKIP: the machine was too busy for this scenario's expectations (over %.0f%% of each window "
              "lost to preemption); the truth itself is consistent" % (100 * STARVED_SHARE))
        return 77
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
