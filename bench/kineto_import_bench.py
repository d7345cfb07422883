#!/usr/bin/env python3
"""Kineto (PyTorch profiler) trace import: gapwatch against HTA and against simdjson alone, side by side
in one run on one machine (issue 11: at least 20x HTA's speed, at least 0.5x simdjson's).

For each trace of ../shared/data/kineto (or GAPWATCH_KINETO_DATA):
  HTA       TraceAnalysis(trace_dir) with its defaults + temporal breakdown + idle breakdown + launch
            stats, timed inside a fresh Python process each time (imports not counted), best of
            --hta-repeats. Skipped, and said so, where HTA cannot be imported (scripts/install-hta.sh
            puts it in <build>/hta-venv; GAPWATCH_HTA_PYTHON names another Python).
  gapwatch  read + analyse (hta_view on) + format the text report, in-process (kineto_import_bench),
            best of --repeats (more runs on small files, up to 1 s), on the .json.gz and on the
            decompressed .json; and the wall time and
            peak RSS of the process `gapwatch report --hta FILE.json.gz`, best of --repeats.
  simdjson  the decompressed .json loaded and parsed by the DOM parser (the implementation simdjson
            picks for this CPU), and by On-Demand reading ph and ts of every traceEvents element.
Then a large trace (train_control's events repeated with shifted times and correlation ids, about
--large-mb MB, written beside the build and deleted after): gapwatch's peak RSS at 1/8 of the size
and at the full size, to show whether memory stays flat. --large-mb 0 leaves it out.

A benchmark, not a test: it prints, it asserts nothing.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HTA_TIMING = r"""
import logging, sys, time, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
start = time.perf_counter()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
loaded = time.perf_counter()
ranks = sorted(analysis.t.traces.keys())
analysis.get_temporal_breakdown(visualize=False)
analysis.get_idle_time_breakdown(ranks=ranks, show_idle_interval_stats=True, visualize=False)
analysis.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
done = time.perf_counter()
print("load_s=%.6f analysis_s=%.6f" % (loaded - start, done - loaded))
"""


def parse_fields(text):
    return dict(kv.split("=", 1) for kv in text.split())


GNU_TIME = "/usr/bin/time"


def run_child(argv, stdout=subprocess.DEVNULL):
    """Wall seconds, exit code, peak RSS (KiB) and stderr of one child process.

    The peak RSS is measured by GNU time, which forks the command from its own small process: a
    child forked from this Python would start with this Python's resident pages in its peak (Linux
    keeps the high-water mark across fork and exec; after writing the large trace that is hundreds
    of MiB that are not gapwatch's). Without /usr/bin/time the peak is None."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile(mode="r") as rss_out:
        wrapped = [GNU_TIME, "-f", "%M", "-o", rss_out.name, *argv] if os.path.exists(GNU_TIME) else argv
        start = time.perf_counter()
        child = subprocess.Popen(wrapped, stdout=stdout, stderr=err)
        _, status, _ = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        rss = None
        if wrapped is not argv:
            lines = [line for line in rss_out.read().split() if line.isdigit()]
            rss = int(lines[-1]) if lines else None
        return wall, child.returncode, rss, err.read().decode(errors="replace")


def hta_python(build):
    if os.environ.get("GAPWATCH_HTA_PYTHON"):
        return os.environ["GAPWATCH_HTA_PYTHON"]
    venv = os.path.join(build, "hta-venv", "bin", "python")
    return venv if os.path.exists(venv) else sys.executable


def hta_version(python):
    probe = subprocess.run([python, "-c", "import hta.trace_analysis, hta.version as v; "
                            "print('.'.join(map(str, v.__version_tuple__[:3])))"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        return None, (probe.stderr.strip().splitlines() or ["?"])[-1]
    return probe.stdout.strip(), None


def time_hta(python, trace_path, repeats):
    best = None
    with tempfile.TemporaryDirectory() as trace_dir:
        # HTA reads every trace of a directory as one job: this one alone.
        os.symlink(os.path.abspath(trace_path), os.path.join(trace_dir, os.path.basename(trace_path)))
        for _ in range(repeats):
            run = subprocess.run([python, "-c", HTA_TIMING, trace_dir], capture_output=True, text=True, timeout=1800)
            if run.returncode != 0:
                return None, (run.stderr.strip().splitlines() or ["?"])[-1]
            f = parse_fields(run.stdout.strip().splitlines()[-1])
            total = float(f["load_s"]) + float(f["analysis_s"])
            if best is None or total < best[0]:
                best = (total, float(f["load_s"]), float(f["analysis_s"]))
    return best, None


def bench(build, mode, path, repeats):
    out = subprocess.run([os.path.join(build, "bin", "kineto_import_bench"), mode, path, str(repeats)],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"kineto_import_bench {mode} {path}: {out.stderr.strip()}")
    return parse_fields(out.stdout)


def report_flags(gapwatch, path):
    """["--hta"] where this gapwatch has it, else [] (said once by the caller)."""
    _, code, _, err = run_child([gapwatch, "report", "--hta", path])
    if code != 0 and "--hta" in err:
        return []
    return ["--hta"]


def time_process(gapwatch, flags, path, repeats):
    best = None
    for _ in range(repeats):
        wall, code, rss, err = run_child([gapwatch, "report", *flags, path])
        if code != 0:
            raise SystemExit(f"gapwatch report {' '.join(flags)} {path}: exit {code}: {err.strip()}")
        if best is None or wall < best[0]:
            best = (wall, rss)
    return best


# --- the large trace -------------------------------------------------------------------------------

STEP = re.compile(r"^ProfilerStep#(\d+)$")


def write_large_trace(source, path, target_bytes):
    """train_control's events again and again, each copy shifted past the last in time, correlation
    ids and step numbers, so that it reads as one long run. Returns (bytes, copies)."""
    with gzip.open(source, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    first = min(e["ts"] for e in timed)
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed) - first + 1000
    max_id = 0
    steps = set()
    for e in events:
        args = e.get("args") or {}
        if isinstance(args.get("correlation"), int):
            max_id = max(max_id, args["correlation"])
        if e.get("ph") in ("s", "f") and isinstance(e.get("id"), int):
            max_id = max(max_id, e["id"])
        m = STEP.match(e.get("name") or "")
        if m:
            steps.add(int(m.group(1)))
    step_span = (max(steps) - min(steps) + 1) if steps else 0
    header = {k: v for k, v in trace.items() if k != "traceEvents"}
    per_copy, once = [], []  # metadata and the profiler's own span only once
    for e in events:
        (once if e.get("ph") == "M" or e.get("cat") == "Trace" else per_copy).append(e)

    def shifted(e, k):
        if k == 0:
            return e
        e = dict(e)
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = e["ts"] + k * span
        if e.get("ph") in ("s", "f") and isinstance(e.get("id"), int):
            e["id"] = e["id"] + k * (max_id + 1)
        args = e.get("args")
        if isinstance(args, dict) and isinstance(args.get("correlation"), int):
            e["args"] = dict(args, correlation=args["correlation"] + k * (max_id + 1))
        m = STEP.match(e.get("name") or "")
        if m:
            e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + k * step_span)
        return e

    dumps = json.JSONEncoder(separators=(",", ":")).encode
    written = 0
    copies = 0
    with open(path, "w", encoding="utf-8") as out:
        head = dumps(header)[:-1] + (',' if header else '') + '"traceEvents":['
        out.write(head)
        written += len(head)
        sep = ""
        for e in once:
            text = sep + dumps(e)
            out.write(text)
            written += len(text)
            sep = ","
        while written < target_bytes:
            chunk = sep + ",".join(dumps(shifted(e, copies)) for e in per_copy)
            out.write(chunk)
            written += len(chunk)
            copies += 1
            sep = ","
        out.write("]}")
    return os.path.getsize(path), copies


def large_trace_check(gapwatch, flags, data, build, target_mb):
    source = os.path.join(data, "train_control.json.gz")
    if not os.path.exists(source):
        print(f"large trace: left out, no {source}")
        return
    work = os.path.join(build, "bench-data")
    os.makedirs(work, exist_ok=True)
    free = shutil.disk_usage(work).free
    if free < 3 * target_mb * 1e6:
        smaller = int(free / 3e6)
        print(f"large trace: only {free / 1e9:.1f} GB free in {work}; {smaller} MB instead of {target_mb} MB")
        target_mb = smaller
    if target_mb < 64:
        print("large trace: left out (too little disk)")
        return
    tmp = tempfile.mkdtemp(prefix="kineto-large-", dir=work)
    try:
        print("large trace: train_control's events repeated, shifted in time, correlation ids and steps")
        print("%10s %8s %12s %12s %16s" % ("size MB", "copies", "write s", "gapwatch s", "peak RSS MiB"))
        for mb in (max(target_mb // 8, 32), target_mb):
            path = os.path.join(tmp, "large-%d.json" % mb)
            start = time.perf_counter()
            size, copies = write_large_trace(source, path, mb * 1_000_000)
            wrote = time.perf_counter() - start
            wall, code, rss, err = run_child([gapwatch, "report", *flags, path])
            status = "" if code == 0 else f"   exit {code}: {err.strip()[:200]}"
            print("%10.0f %8d %12.1f %12.2f %16.0f%s" % (size / 1e6, copies, wrote, wall, (rss or 0) / 1024, status))
            os.unlink(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(here, "..", "build"))
    ap.add_argument("--repeats", type=int, default=5, help="gapwatch and simdjson runs, best of")
    ap.add_argument("--hta-repeats", type=int, default=2, help="HTA runs, best of (0: leave HTA out)")
    ap.add_argument("--large-mb", type=int, default=1000, help="size of the large trace (0: leave it out)")
    ap.add_argument("--traces", default="", help="comma-separated trace names (default: all)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    gapwatch = os.path.join(build, "bin", "gapwatch")
    data = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(here, "..", "..", "shared", "data", "kineto")
    if not os.path.isdir(data):
        print(f"kineto_import_bench: no Kineto traces at {os.path.normpath(data)} (set GAPWATCH_KINETO_DATA): left out")
        return 0
    traces = all_traces = sorted(f for f in os.listdir(data) if f.endswith(".json.gz"))
    if args.traces:
        wanted = set(args.traces.split(","))
        traces = [t for t in traces if t[:-len(".json.gz")] in wanted]

    python = hta_python(build)
    version, why = (None, "--hta-repeats 0") if args.hta_repeats == 0 else hta_version(python)
    print(f"HTA: {version} ({python}), best of {args.hta_repeats}" if version else
          f"HTA: left out ({why}; scripts/install-hta.sh puts it in <build>/hta-venv)")
    flags = report_flags(gapwatch, os.path.join(data, all_traces[0])) if all_traces else []
    if not flags:
        print("gapwatch: this build has no `report --hta`: timed without it (no HTA view computed)")
    print(f"gapwatch and simdjson: best of at least {args.repeats} (more, up to 1 s, on small files); "
          "times in ms unless marked s")

    rows = []
    with tempfile.TemporaryDirectory(prefix="kineto-bench-") as tmp:
        for name in traces:
            gz = os.path.join(data, name)
            plain = os.path.join(tmp, name[:-len(".gz")])
            with gzip.open(gz, "rb") as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst, 4 << 20)
            row = {"name": name[:-len(".json.gz")], "gz_mb": os.path.getsize(gz) / 1e6,
                   "json_mb": os.path.getsize(plain) / 1e6}
            if version:
                best, why = time_hta(python, gz, args.hta_repeats)
                if best:
                    row["hta_s"], row["hta_load_s"], row["hta_analysis_s"] = best
                else:
                    print(f"{name}: HTA failed: {why}")
            g = bench(build, "gapwatch", gz, args.repeats)
            row["gw_gz"] = float(g["best_s"])
            row["gw_json"] = float(bench(build, "gapwatch", plain, args.repeats)["best_s"])
            row["gw_proc"], row["gw_rss"] = time_process(gapwatch, flags, gz, args.repeats)
            dom = bench(build, "simdjson-dom", plain, args.repeats)
            row["dom"], row["dom_warm"] = float(dom["best_s"]), float(dom["warm_parse_s"])
            od = bench(build, "simdjson-ondemand", plain, args.repeats)
            row["od"], row["od_warm"] = float(od["best_s"]), float(od["warm_parse_s"])
            row["impl"] = dom["implementation"]
            rows.append(row)
            os.unlink(plain)

    print()
    print("%-18s %6s %7s %8s %8s %8s %8s %8s %7s %7s %7s %7s %7s %7s %7s" % (
        "trace", "gz MB", "json MB", "HTA s", "gw .gz", "gw .json", "gw proc", "proc MiB",
        "dom", "dom mem", "od", "od mem", "HTA/gw", "gw/dom", "gw/dmem"))
    for r in rows:
        hta_s = "%8.3f" % r["hta_s"] if "hta_s" in r else "%8s" % "-"
        ratio = "%7.1f" % (r["hta_s"] / r["gw_gz"]) if "hta_s" in r else "%7s" % "-"
        print("%-18s %6.2f %7.1f %s %8.1f %8.1f %8.1f %8.0f %7.1f %7.1f %7.1f %7.1f %s %7.2f %7.2f" % (
            r["name"], r["gz_mb"], r["json_mb"], hta_s, r["gw_gz"] * 1e3, r["gw_json"] * 1e3, r["gw_proc"] * 1e3,
            (r["gw_rss"] or 0) / 1024, r["dom"] * 1e3, r["dom_warm"] * 1e3, r["od"] * 1e3, r["od_warm"] * 1e3, ratio,
            r["dom"] / r["gw_json"], r["dom_warm"] / r["gw_json"]))
    print()
    print("gw .gz, gw .json: gapwatch in-process (read, analyse with the HTA view, text report), ms;")
    print("gw proc: the `gapwatch report` process on the .json.gz, ms, and its peak RSS (proc MiB);")
    print("dom, od: simdjson DOM / On-Demand (ph, ts of every event) from the .json file, fresh parser, ms;")
    print("dom mem, od mem: the same parse alone, bytes in memory, parser buffers already allocated, ms.")
    print("HTA/gw: HTA's load + 3 analyses over gapwatch in-process on the .json.gz (target >= 20);")
    print("        over the `gapwatch report` process instead: " + ", ".join(
        "%s %.1f" % (r["name"], r["hta_s"] / r["gw_proc"]) for r in rows if "hta_s" in r))
    print("gw/dom: gapwatch's speed on the .json over simdjson DOM's from the same file (target >= 0.5);")
    print("        gw/dmem over DOM's parse alone; over On-Demand from the file instead: " + ", ".join(
        "%s %.2f" % (r["name"], r["od"] / r["gw_json"]) for r in rows))
    if rows:
        print(f"simdjson implementation: {rows[0]['impl']}")
    if args.large_mb > 0:
        print()
        large_trace_check(gapwatch, flags, data, build, args.large_mb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
