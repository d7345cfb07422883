"""Each pattern an expert reads differently from a naive profiler (issue 35) gets the verdict it
must: generated PyTorch profiler traces (tests/data/kineto-patterns/make_patterns.py) read through
the Kineto reader, the report's JSON checked as an expert would read it.

Usage: kineto_patterns_test.py GAPWATCH REPO_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile


def report(gapwatch, files):
    run = subprocess.run([gapwatch, "report", "--json"] + files, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise AssertionError(f"gapwatch report exited {run.returncode}: {run.stderr.strip()[:300]}")
    return json.loads(run.stdout)


def ids(p):
    return [f["id"] for f in p.get("findings") or []]


def number(finding, name):
    return (finding.get("numbers") or {}).get(name)


def evidence(finding, name):
    for e in finding.get("evidence") or []:
        if e["name"] == name:
            return e["value"]
    return ""


def first_pass_fp32_gemm(gapwatch, out):
    """A first pass of lazy loading and library set-up, then GPU-bound FP32 GEMMs: the verdict says
    both, the one-time costs are their own finding, and no steady-state finding takes them."""
    p = report(gapwatch, [os.path.join(out, "first_pass_fp32_gemm.json.gz")])["processes"][0]
    failures = []
    verdict = p["verdict"]
    if "a first pass of" not in verdict or "then steady state" not in verdict:
        failures.append(f"the verdict does not split first pass and steady state: {verdict!r}")
    b = p.get("bottleneck")
    if not b or "FP32 GEMMs" not in b["title"] or "set_float32_matmul_precision" not in b["fix"]:
        failures.append(f"no GPU-bound bottleneck of FP32 GEMMs with the TF32 lever: {b and b['title']!r}")
    if ids(p) != ["first_pass"]:
        failures.append(f"findings {ids(p)}: the steady state is GPU-bound, only the first pass is a finding")
    fp = p["findings"][0] if p.get("findings") else {}
    one_time = evidence(fp, "one-time evidence")
    if "lazy kernel loading" not in one_time or "library set-up in CUDA calls" not in one_time:
        failures.append(f"the one-time evidence does not name lazy loading and library set-up: {one_time!r}")
    if "CUDA_MODULE_LOADING=EAGER" not in fp.get("fix", ""):
        failures.append("the first pass's fix does not name CUDA_MODULE_LOADING=EAGER")
    # The terminal's start-up line points at the first pass rather than saying only "not in trace".
    text = subprocess.run([gapwatch, "report", os.path.join(out, "first_pass_fp32_gemm.json.gz")],
                          capture_output=True, text=True, timeout=600).stdout
    startup = [line for line in text.splitlines() if line.startswith("start-up")]
    if not startup or "first pass" not in startup[0]:
        failures.append(f"the start-up line does not name the first pass: {startup}")
    return failures


def copy_behind_stream_wait(gapwatch, out):
    """A 60-byte synchronous copy held 493 ms right after a stream wait: a dependency, naming the
    wait and that the event was recorded before the window; not a copy to pin, not a stall."""
    p = report(gapwatch, [os.path.join(out, "copy_behind_stream_wait.json.gz")])["processes"][0]
    failures = []
    if ids(p)[:1] != ["dependency"]:
        return [f"first finding {ids(p)[:1]}, not dependency; verdict {p['verdict']!r}"]
    f = p["findings"][0]
    if "pageable_copies" in ids(p) or "slow_launch_calls" in ids(p) or "first_pass" in ids(p):
        failures.append(f"the wait is also read as a copy, a slow call or a first pass: {ids(p)}")
    if (number(f, "copy_waits") or 0) < 1 or (number(f, "copy_wait_longest_ns") or 0) < 480e6:
        failures.append(f"the copy's wait is not counted: {f.get('numbers')}")
    longest = evidence(f, "longest")
    if "hipMemcpyWithStream" not in longest or "hipStreamWaitEvent" not in longest:
        failures.append(f"the evidence does not name the copy and the wait: {longest!r}")
    if "recorded before the window" not in evidence(f, "the event it waited for"):
        failures.append(f"the event is not said to be from before the window: {evidence(f, 'the event it waited for')!r}")
    if "pinned memory or non_blocking=True would not shorten it" not in f["fix"]:
        failures.append(f"the fix does not say pinning would not help: {f['fix'][:200]!r}")
    return failures


def copy_behind_named_event(gapwatch, out):
    """The trace's stream-wait record names the event: the dependency names its record call and the
    stream it was recorded on, not a guess."""
    p = report(gapwatch, [os.path.join(out, "copy_behind_named_event.json.gz")])["processes"][0]
    if ids(p)[:1] != ["dependency"]:
        return [f"first finding {ids(p)[:1]}, not dependency; verdict {p['verdict']!r}"]
    f = p["findings"][0]
    failures = []
    event = evidence(f, "the event it waited for")
    if "cudaEventRecord" not in event or "on stream 20" not in event or "names it" not in event:
        failures.append(f"the named event's record and stream are not given: {event!r}")
    if number(f, "copy_wait_event_named") != 1:
        failures.append(f"copy_wait_event_named is {number(f, 'copy_wait_event_named')}")
    return failures


def all_to_all_8_ranks(gapwatch, out):
    """Rank 7 late to every all_to_all: the job's finding names it, and rank 0 (busy in NCCL kernels
    that waited) is told it waits for rank 7, not that communication is its bottleneck."""
    directory = os.path.join(out, "all_to_all_8_ranks")
    files = sorted(os.path.join(directory, n) for n in os.listdir(directory))
    r = report(gapwatch, files)
    failures = []
    job = [f for f in r.get("findings") or [] if f["id"] == "straggler"]
    if not job or "rank 7" not in job[0]["title"]:
        failures.append(f"no straggler finding naming rank 7: {[f['title'] for f in r.get('findings') or []]}")
    by_rank = {p["rank"]: p for p in r["processes"]}
    for rank in range(7):
        p = by_rank[rank]
        if "waiting for rank 7" not in p["verdict"]:
            failures.append(f"rank {rank}'s verdict does not say it waits for rank 7: {p['verdict']!r}")
        for f in (p.get("findings") or []) + (p.get("notes") or []) + ([p["bottleneck"]] if p.get("bottleneck") else []):
            if ("bucket_cap_mb" in f["fix"] or "no_sync()" in f["fix"]) and "would not" not in f["fix"]:
                failures.append(f"rank {rank}'s {f['id']} still advises bucketing: {f['fix'][:160]!r}")
    if "waiting for rank" in by_rank[7]["verdict"]:
        failures.append(f"rank 7 is told it waits: {by_rank[7]['verdict']!r}")
    return failures


def sync_storm(gapwatch, out):
    """A post-processing loop of nonzero and .item(): one sync-storm finding holding the syncs'
    whole cost, naming the loop's line, with the fix for data-dependent shapes."""
    p = report(gapwatch, [os.path.join(out, "sync_storm.json.gz")])["processes"][0]
    failures = []
    if ids(p)[:1] != ["sync_points"]:
        return [f"first finding {ids(p)[:1]}, not sync_points; verdict {p['verdict']!r}"]
    f = p["findings"][0]
    if "sync storm" not in f["title"]:
        failures.append(f"not called a storm: {f['title']!r}")
    if "CUDA graphs cannot capture them" not in f["fix"] or "nonzero_static" not in f["fix"]:
        failures.append(f"the fix is not the one for data-dependent shapes: {f['fix'][:200]!r}")
    if "postprocess.py:57" not in f["fix"]:
        failures.append("the fix does not start at the loop's line (postprocess.py:57)")
    others = [i for i in ids(p)[1:] if i in ("pageable_copies", "cuda_api", "launch_overhead", "framework_overhead",
                                              "host_other")]
    if others:
        failures.append(f"the storm's own cost is split into more findings: {ids(p)}")
    if f["idle_share"] < 0.9:
        failures.append(f"the storm explains only {f['idle_share']:.0%} of idle")
    return failures


def compiled_region_host(gapwatch, out):
    """Host time inside an already compiled region: one host-bound finding whose fix is what comes
    after compiling (reduce-overhead, cpp_wrapper), not "use torch.compile"."""
    p = report(gapwatch, [os.path.join(out, "compiled_region_host.json.gz")])["processes"][0]
    failures = []
    host = ("framework_overhead", "host_other", "host_unknown", "launch_overhead")
    if ids(p)[:1] != [] and ids(p)[0] not in host:
        return [f"first finding {ids(p)[0]}, not host-bound; verdict {p['verdict']!r}"]
    if not ids(p):
        return [f"no finding; verdict {p['verdict']!r}"]
    if len([i for i in ids(p) if i in host]) != 1:
        failures.append(f"host-bound time in more than one finding: {ids(p)}")
    f = p["findings"][0]
    if "already runs compiled" not in f["fix"] or 'mode="reduce-overhead"' not in f["fix"] or "cpp_wrapper" not in f["fix"]:
        failures.append(f"the fix is not the one for compiled code: {f['fix'][:200]!r}")
    if "Torch-Compiled Region" not in evidence(f, "already compiled") and "CompiledFunction" not in evidence(f, "already compiled"):
        failures.append(f"the evidence of compiled code is not named: {evidence(f, 'already compiled')!r}")
    return failures


PATTERNS = [first_pass_fp32_gemm, copy_behind_stream_wait, copy_behind_named_event, all_to_all_8_ranks, sync_storm,
            compiled_region_host]


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    gapwatch, repo = argv[1], argv[2]
    out = tempfile.mkdtemp(prefix="gw-patterns-")
    subprocess.run([sys.executable, os.path.join(repo, "tests", "data", "kineto-patterns", "make_patterns.py"), out],
                   check=True, capture_output=True, timeout=300)
    failures = []
    for pattern in PATTERNS:
        got = pattern(gapwatch, out)
        print(f"{pattern.__name__}: {'as an expert reads it' if not got else 'NOT as an expert reads it'}")
        failures += [f"{pattern.__name__}: {g}" for g in got]
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
