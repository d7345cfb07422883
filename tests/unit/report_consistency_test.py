"""A verdict never contradicts its own lines: every report the suite makes, checked for findings
whose evidence says otherwise than their title.

Usage: report_consistency_test.py GAPWATCH REPO_ROOT

Reports: the goldens' recordings (tests/golden, one per scenario), the generated Kineto corpus
(tests/data/kineto, with its short data-bound trace and its compile twin) and the shared real
traces (../shared/data/kineto, both old-schema samples among them; where the shared data is not
beside the repository those are left out and the test says so). For each process's findings, from
`gapwatch report --json`:

- the verdict names the top finding, and findings are ranked by the idle they explain, which is
  within the process's idle time, as is their sum;
- input_pipeline explains no more than its part's host time; the host between kernels (framework,
  other, unknown and launch overhead: one finding titled by its largest part) no more than those
  together, its launch overhead no more than the gaps under 1.024 ms;
- sync_points explains no more than the host and launch time of after-sync gaps outside the data
  loader (time in the loader after a sync is the input pipeline's: docs/analysis.md);
- a warmup finding carries warm-up evidence: gaps with warm-up evidence (warmup_gaps) or slow
  first launches (long_call_ns); in a trace (no process start) it explains no more than the warm-up
  evidence the engine measured (devices[].warmup_evidence);
- every share is within 0..1;
and on every report: idle parts sum to idle, host parts to host time, no device idle beyond its
window, waits within the waiting ranks' windows, each process in one job and each rank once in its
job's comparison, and in the terminal's cross-rank table no two values run together. Besides each file alone, the shared
directory is given whole (traces of different jobs) and two runs' recordings together.

Each finding within its class: launch overhead no more than the gaps under 1.024 ms, the first pass
no more than its idle, a steady-state finding no more than the steady state's idle; first_pass last,
the findings before it ranked by idle; a bottleneck (gpu_bound, no idle) said in the verdict.

Then the two corpus traces made for this: short_data_bound's verdict is input_pipeline, and
short_compile_warmup's is gpu_bound after a first pass (its compile). Exit 0 when all hold, 1 with one line per failure.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HOST_PARTS = {"input_pipeline": "input_pipeline", "framework_overhead": "framework", "host_other": "other",
              "host_unknown": "unknown"}
SLACK_NS = 1000  # rounding between the engine's sums and the diagnosis's


def report(gapwatch, paths):
    run = subprocess.run([gapwatch, "report", "--json", *paths], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        return None, f"exit {run.returncode}: {run.stderr.strip()[:300]}"
    return json.loads(run.stdout), None


def check_process(where, p):
    failures = []
    findings = p.get("findings") or []
    idle = p.get("idle_ns") or 0
    verdict = p.get("verdict") or ""
    # The verdict names the top finding (after the bottleneck, where the GPU is one); a first pass
    # alone is named as one ("first pass").
    if p.get("bottleneck"):
        pass
    elif findings and findings[0]["id"] == "first_pass":
        if "first pass" not in verdict:
            failures.append(f"{where}: the verdict {verdict!r} does not name the first pass it leads with")
    elif findings and findings[0]["title"] not in verdict:
        failures.append(f"{where}: the verdict {verdict!r} does not name the top finding, {findings[0]['title']!r}")
    if any(f["id"] == "first_pass" for f in findings) and "first pass" not in verdict:
        failures.append(f"{where}: the verdict {verdict!r} does not say the window has a first pass")
    # The first pass comes last: the steady state's findings before it are ranked by the idle each
    # explains. A GPU-bound steady state is the verdict's news, ahead of any finding.
    ranked = [f for f in findings if f["id"] != "first_pass"]
    for i in range(1, len(ranked)):
        if ranked[i]["idle_ns"] > ranked[i - 1]["idle_ns"]:
            failures.append(f"{where}: {ranked[i]['id']} explains more than {ranked[i - 1]['id']} above it")
    bottleneck = p.get("bottleneck")
    if bottleneck and bottleneck["title"] not in verdict:
        failures.append(f"{where}: the verdict {verdict!r} does not say the GPU is the bottleneck")
    if bottleneck and (bottleneck["idle_ns"] != 0 or bottleneck["id"] != "gpu_bound"):
        failures.append(f"{where}: the bottleneck is not a gpu_bound that explains no idle: {bottleneck['id']}")
    if any(f["id"] == "first_pass" for f in findings[:-1]):
        failures.append(f"{where}: first_pass is not the last finding")
    total = 0
    for i, f in enumerate(findings):
        total += f["idle_ns"]
        if not 0 <= f.get("idle_share", 0) <= 1:
            failures.append(f"{where}: {f['id']} idle_share {f['idle_share']}")
        if f["idle_ns"] > idle + SLACK_NS:
            failures.append(f"{where}: {f['id']} explains {f['idle_ns']} ns of {idle} ns idle")
        failures += check_finding(where, p, f)
    if total > idle + SLACK_NS * max(1, len(findings)):
        failures.append(f"{where}: findings explain {total} ns of {idle} ns idle")
    return failures


def check_finding(where, p, f):
    failures = []
    parts = p.get("host_cpu_by_part") or {}
    devices = p.get("devices") or []
    fid = f["id"]
    # The input pipeline within its part; the host between kernels (framework, other, unknown and
    # launch overhead: one cause, one finding, whichever part titles it) within those together.
    if fid == "input_pipeline":
        own = parts.get("input_pipeline", 0)
        if f["idle_ns"] > own + SLACK_NS:
            failures.append(f"{where}: {fid} explains {f['idle_ns']} ns, its part holds {own} ns")
    elif fid in HOST_PARTS or fid == "launch_overhead":
        own = sum(parts.get(q, 0) for q in ("framework", "other", "unknown")) + \
            (p.get("idle_by_cause") or {}).get("launch_overhead", 0)
        if f["idle_ns"] > own + SLACK_NS:
            failures.append(f"{where}: {fid} explains {f['idle_ns']} ns, the host between kernels holds {own} ns")
    if fid == "sync_points":
        pool = 0
        for d in devices:
            after = d.get("after_sync") or {}
            by_cause = after.get("by_cause") or {}
            by_part = after.get("host_cpu_by_part") or {}
            pool += by_cause.get("host_cpu", 0) - by_part.get("input_pipeline", 0) + by_cause.get("launch_overhead", 0)
        # A storm also holds the idle inside its sync calls (cuda_api) and, when its blocking copies
        # are reads of values, theirs (sync_copy): each within its cause.
        numbers = f.get("numbers") or {}
        by_cause = p.get("idle_by_cause") or {}
        in_calls, in_reads = numbers.get("sync_storm_in_sync_calls_ns", 0), numbers.get("sync_storm_in_reads_ns", 0)
        if in_calls > by_cause.get("cuda_api", 0) + SLACK_NS or in_reads > by_cause.get("sync_copy", 0) + SLACK_NS:
            failures.append(f"{where}: the storm takes {in_calls} ns of cuda_api and {in_reads} ns of sync_copy, "
                            f"more than they hold ({by_cause.get('cuda_api', 0)}, {by_cause.get('sync_copy', 0)})")
        if f["idle_ns"] > pool + in_calls + in_reads + SLACK_NS:
            failures.append(f"{where}: sync_points explains {f['idle_ns']} ns, but after-sync host and launch time "
                            f"outside the data loader is {pool} ns (and the storm's sync calls and reads "
                            f"{in_calls + in_reads} ns)")
    # Each finding within its class (docs/analysis.md, "Each finding within its class"): launch
    # overhead is the short gaps' (under 1.024 ms) and no more than they add up to; the first pass
    # no more than its windows' idle, and a steady-state finding no more than the steady state's.
    short_gaps = sum(b["total_ns"] for d in devices for b in d.get("histogram") or [] if b["lo_ns"] < 1024000)
    first_pass_idle = sum((d.get("first_pass") or {}).get("idle_ns", 0) for d in devices)
    launch_part = (f.get("numbers") or {}).get("host_bound_launch_ns", 0)
    if launch_part > short_gaps + SLACK_NS:
        failures.append(f"{where}: {fid}'s launch overhead is {launch_part} ns, the gaps under 1.024 ms add up "
                        f"to {short_gaps} ns")
    if fid == "launch_overhead" and launch_part == 0 and f["idle_ns"] > short_gaps + SLACK_NS:
        failures.append(f"{where}: launch_overhead explains {f['idle_ns']} ns, the gaps under 1.024 ms add up "
                        f"to {short_gaps} ns")
    if fid == "first_pass" and f["idle_ns"] > first_pass_idle + SLACK_NS:
        failures.append(f"{where}: first_pass explains {f['idle_ns']} ns, the first passes hold {first_pass_idle} ns")
    if fid not in ("first_pass", "straggler") and f["idle_ns"] > (p.get("idle_ns") or 0) - first_pass_idle + SLACK_NS:
        failures.append(f"{where}: {fid} explains {f['idle_ns']} ns, more than the steady state's idle")
    if fid == "warmup":
        numbers = f.get("numbers") or {}
        if not (numbers.get("warmup_gaps", 0) >= 1 or numbers.get("long_call_ns", 0) > 0):
            failures.append(f"{where}: a warmup finding without warm-up evidence: {f['title']!r} "
                            f"({[e['name'] for e in f.get('evidence', [])]})")
        if (p.get("source") or "") == "kineto_trace":
            measured = 0
            for d in devices:
                by_cause = (d.get("warmup_evidence") or {}).get("by_cause") or {}
                measured += sum(by_cause.get(c, 0) for c in ("host_cpu", "cuda_api", "launch_overhead"))
            if f["idle_ns"] > measured + SLACK_NS:
                failures.append(f"{where}: warmup explains {f['idle_ns']} ns, the evidence covers {measured} ns")
    return failures


def check_invariants(where, doc):
    """No impossible number: shares within 0..1, idle parts summing to idle, waits within the
    waiting ranks' windows, each process in one job, each rank once in its job's comparison."""
    failures = []
    processes = doc.get("processes", [])
    for i, p in enumerate(processes):
        here = f"{where} process {i}"
        if not 0 <= (p.get("idle_fraction") or 0) <= 1:
            failures.append(f"{here}: idle_fraction {p['idle_fraction']}")
        by_cause = p.get("idle_by_cause") or {}
        if by_cause and abs(sum(by_cause.values()) - (p.get("idle_ns") or 0)) > SLACK_NS:
            failures.append(f"{here}: idle by cause sums to {sum(by_cause.values())}, idle is {p.get('idle_ns')}")
        parts = p.get("host_cpu_by_part") or {}
        if parts and abs(sum(parts.values()) - by_cause.get("host_cpu", 0)) > SLACK_NS:
            failures.append(f"{here}: host parts sum to {sum(parts.values())}, host_cpu is {by_cause.get('host_cpu')}")
        for d in p.get("devices") or []:
            if d.get("idle_ns", 0) > d.get("window_ns", 0):
                failures.append(f"{here}: device idle {d['idle_ns']} over its window {d['window_ns']}")
    in_jobs = [i for job in doc.get("jobs") or [] for i in job]
    if sorted(in_jobs) != list(range(len(processes))) and doc.get("jobs"):
        failures.append(f"{where}: jobs {doc['jobs']} are not each process once")
    for k, comparison in enumerate(doc.get("rank_comparisons") or []):
        compared = comparison.get("processes") or []
        if compared not in (doc.get("jobs") or []):
            failures.append(f"{where}: rank comparison {k} ({compared}) is not one of the jobs")
        ranks = [processes[i].get("rank") for i in compared]
        if len(ranks) != len(set(ranks)):
            failures.append(f"{where}: ranks {ranks} compared across ranks, one of them twice")
        windows = {processes[i].get("rank"): processes[i].get("window_ns") or 0 for i in compared}
        for w in comparison.get("rank_waits") or []:
            others = sum(v for r, v in windows.items() if r != w["rank"])
            if w["waited_for_ns"] > others + SLACK_NS or w["waited_ns"] > windows.get(w["rank"], 0) + SLACK_NS:
                failures.append(f"{where}: rank {w['rank']}'s waits ({w['waited_ns']} ns, waited for "
                                f"{w['waited_for_ns']} ns) exceed the windows ({windows})")
    return failures


def check_rank_table(where, text, paths):
    """The terminal's cross-rank table: every value in its own column (a wide value pushes the row
    on; it never runs into the value before it, as "608 ms46194 h" did). File names are left out
    of the check: a temporary directory's random name ("gw-patterns-mgtn94h7") is not a value."""
    failures = []
    for line in text.splitlines():
        for path in paths:
            line = line.replace(path, "")
        if re.search(r"\d(ns|us|ms|s|min|h|%)\d", line):
            failures.append(f"{where}: values run together: {line.strip()!r}")
    return failures


def inputs(repo_root):
    """(name, [paths]) for every report: goldens (the recordings of one scenario together), the
    corpus, the shared traces (each alone)."""
    golden = os.path.join(repo_root, "tests", "golden")
    by_scenario = {}
    for name in sorted(os.listdir(golden)):
        if name.endswith(".gwt"):
            by_scenario.setdefault(name.split(".")[0], []).append(os.path.join(golden, name))
    runs = [(f"golden {s}", paths) for s, paths in sorted(by_scenario.items())]
    corpus = os.path.join(repo_root, "tests", "data", "kineto")
    runs += [(f"corpus {n}", [os.path.join(corpus, n)]) for n in sorted(os.listdir(corpus)) if n.endswith(".json.gz")]
    shared = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(repo_root, "..", "shared", "data", "kineto")
    if os.path.isdir(shared):
        runs += [(f"shared {n}", [os.path.join(shared, n)]) for n in sorted(os.listdir(shared)) if n.endswith(".json.gz")]
        # The whole directory at once, as a user gives it: traces of different jobs.
        runs.append(("shared, all together", [os.path.join(shared, n) for n in sorted(os.listdir(shared))
                                               if n.endswith(".json.gz")]))
    else:
        print(f"note: no shared traces at {os.path.normpath(shared)}: goldens and corpus only")
    # The expert's patterns (issue 35), generated: each alone, and the 8 ranks together.
    patterns = tempfile.mkdtemp(prefix="gw-patterns-")
    subprocess.run([sys.executable, os.path.join(repo_root, "tests", "data", "kineto-patterns", "make_patterns.py"),
                    patterns], check=True, capture_output=True, timeout=300)
    runs += [(f"pattern {n}", [os.path.join(patterns, n)]) for n in sorted(os.listdir(patterns)) if n.endswith(".json.gz")]
    ranks = os.path.join(patterns, "all_to_all_8_ranks")
    runs.append(("pattern all_to_all_8_ranks", [os.path.join(ranks, n) for n in sorted(os.listdir(ranks))]))
    # Two runs' recordings given together (the README's `gapwatch report gapwatch-*.gwt`).
    runs.append(("two runs together", [os.path.join(golden, "data-bound.gwt"), os.path.join(golden, "healthy.gwt")]))
    return runs


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    gapwatch, repo_root = argv[1], argv[2]
    failures = []
    verdicts = {}
    all_ids = {}
    for name, paths in inputs(repo_root):
        doc, error = report(gapwatch, paths)
        if error:
            failures.append(f"{name}: {error}")
            continue
        failures += check_invariants(name, doc)
        if len(paths) > 1:
            text = subprocess.run([gapwatch, "report", *paths], capture_output=True, text=True, timeout=600).stdout
            failures += check_rank_table(name, text, paths)
        for p in doc.get("processes", []):
            where = f"{name} (pid {p.get('pid')}, rank {p.get('rank')})"
            failures += check_process(where, p)
            findings = p.get("findings") or []
            verdicts[name] = "gpu_bound" if p.get("bottleneck") else findings[0]["id"] if findings else None
            all_ids[name] = [f["id"] for f in findings]
        print(f"{name}: {verdicts.get(name)}")
    # The compile twin: its 400 ms compile is a one-time first pass, after which its FP32
    # convolutions keep the GPU busy (docs/analysis.md, "First pass and steady state").
    for name, expected in (("corpus short_data_bound.json.gz", "input_pipeline"),
                           ("corpus short_compile_warmup.json.gz", "gpu_bound")):
        if verdicts.get(name) != expected:
            failures.append(f"{name}: the verdict is {verdicts.get(name)}, not {expected}")
    compile_ids = all_ids.get("corpus short_compile_warmup.json.gz", [])
    if "first_pass" not in compile_ids:
        failures.append(f"corpus short_compile_warmup.json.gz: no first_pass finding ({compile_ids})")
    # PyTorch 1.8's TensorBoard samples (old schema): the single-process DataLoader's is the input
    # pipeline (72 % of its idle in enumerate(DataLoader) ranges); with 4 workers it is not.
    if "shared tb_resnet50_workers0.json.gz" in verdicts:
        if verdicts["shared tb_resnet50_workers0.json.gz"] != "input_pipeline":
            failures.append(f"tb_resnet50_workers0: the verdict is {verdicts['shared tb_resnet50_workers0.json.gz']}, "
                            "not input_pipeline")
        if verdicts.get("shared tb_resnet50_workers4.json.gz") in (None, "input_pipeline"):
            failures.append(f"tb_resnet50_workers4: the verdict is {verdicts.get('shared tb_resnet50_workers4.json.gz')}")
    for f in failures:
        print("FAIL " + f)
    print(f"{len(verdicts)} reports checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
