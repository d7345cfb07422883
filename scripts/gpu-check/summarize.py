#!/usr/bin/env python3
"""scripts/gpu-check/summarize.py: turn one GPU-check results folder into runs.jsonl and a summary.

Standard library only: it runs on the GPU machine right after the jobs, and again on the
development machine over an unpacked archive (python3 scripts/gpu-check/summarize.py DIR).

Input, one folder per run under DIR/runs/<run>/ (written by scripts/gpu-check.sh and jobs.py):
  meta.txt       key=value lines from the shell: job, mode, rc, timed_out, wall_s, skipped, ...
  steps.jsonl    jobs.py's start / step / end (or error) lines
  log.txt        the run's stdout and stderr
  trace.json.gz  the Kineto trace (torch.profiler runs)
  *.gwt          the gapwatch recording (gapwatch runs)
  smi.csv        nvidia-smi samples taken during the run (timestamp, GPU-Util %, memory MiB)

Output in DIR: runs.jsonl (one JSON object per run: per-step wall times, medians, exit code,
stderr tail, what the trace and the recording contain), summary.json, summary.txt (also printed):
the overhead ratios side by side (median step time of gapwatch and of torch.profiler over plain,
per job) and the checks of cupti-facts section 6 that these runs answer.

The .gwt check here is shallow on purpose (file header, frame walk, Hello and Goodbye fields):
the real reader is `gapwatch report`. It follows docs/recording-format.md and
proto/gapwatch/v1/stream.proto.

  summarize.py DIR            summarise
  summarize.py --self-test    build a synthetic results folder in a temporary folder and check
"""

import gzip
import json
import os
import statistics
import sys
import tempfile
import time

GWT_MAGIC = b"\x89GWT\r\n\x1a\n"
FRAME_LIMIT = 16 * 1024 * 1024
LAUNCH_THRESHOLD_US = 30.0
KNOWN_FILES = {"meta.txt", "steps.jsonl", "log.txt", "trace.json.gz", "trace.json", "smi.csv",
               "cmd.txt", "gapwatch-report.txt", "gapwatch-report-trace.txt", "trace.dropped.txt"}
PROBES = {1: "cupti_runtime_callbacks", 2: "cupti_driver_callbacks", 3: "cupti_activity",
          4: "cudart_hooks", 5: "nccl_hooks", 6: "nvtx"}
EXIT_REASONS = {0: "unspecified", 1: "normal", 2: "signal", 3: "exec", 4: "stopped", 5: "internal_error"}


# ------------------------------------------------------------------------------------------------
# small helpers


def median(xs):
    return statistics.median(xs) if xs else None


def pct(xs, q):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def read_kv(path):
    out = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    out[k.strip()] = v
    except OSError:
        pass
    return out


def read_jsonl(path):
    rows = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        rows.append({"type": "unparsable", "text": line[:200]})
    except OSError:
        pass
    return rows


def tail_text(path, max_lines=40, max_chars=4000):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = text.splitlines()[-max_lines:]
    return "\n".join(lines)[-max_chars:]


def grep_lines(path, needles, limit=12, max_len=300):
    hits = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                low = line.lower()
                if any(n in low for n in needles):
                    line = line.rstrip("\n")[:max_len]
                    if line not in hits:
                        hits.append(line)
                        if len(hits) >= limit:
                            break
    except OSError:
        pass
    return hits


def fnum(x, fmt="%.2f"):
    return "-" if x is None else fmt % x


# ------------------------------------------------------------------------------------------------
# .gwt: a shallow walk (header, frames, Hello and Goodbye scalar fields)


def read_varint(buf, pos, end):
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("varint runs past the end")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def parse_fields(buf, start, end):
    """Top-level fields of one protobuf message: yields (field, wire_type, value)."""
    pos = start
    while pos < end:
        key, pos = read_varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = read_varint(buf, pos, end)
        elif wt == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wt == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        elif wt == 2:
            n, pos = read_varint(buf, pos, end)
            if pos + n > end:
                raise ValueError("field runs past the end")
            val, pos = (pos, pos + n), pos + n
        else:
            raise ValueError("wire type %d" % wt)
        yield field, wt, val


def scan_hello(buf, start, end):
    h = {"probes": [], "command_line": []}
    for field, wt, val in parse_fields(buf, start, end):
        if wt == 0 and field in (1, 2, 8, 11, 12, 13, 14, 15, 4, 5, 6):
            name = {1: "wire_version", 2: "pid", 8: "clock", 11: "cupti_version",
                    12: "cuda_driver_version", 13: "start_time_ns", 14: "process_start_ns",
                    15: "start_unix_ns", 4: "rank", 5: "local_rank", 6: "world_size"}[field]
            h[name] = val
        elif field == 9 and wt == 0:
            h["probes"].append(PROBES.get(val, str(val)))
        elif field == 9 and wt == 2:  # packed
            p, e = val
            while p < e:
                v, p = read_varint(buf, p, e)
                h["probes"].append(PROBES.get(v, str(v)))
        elif wt == 2 and field in (3, 7, 10):
            s = bytes(buf[val[0]:val[1]]).decode("utf-8", errors="replace")[:200]
            if field == 7:
                if len(h["command_line"]) < 12:
                    h["command_line"].append(s)
            else:
                h["host" if field == 3 else "library_version"] = s
    return h


def scan_goodbye(buf, start, end):
    names = {1: "end_time_ns", 2: "exit_reason", 3: "exit_status", 4: "signal", 5: "batches",
             6: "api_calls", 7: "activities", 8: "nccl_calls", 9: "markers", 10: "events_dropped",
             11: "cupti_records_dropped"}
    g = {}
    for field, wt, val in parse_fields(buf, start, end):
        if wt == 0 and field in names:
            g[names[field]] = val
    if "exit_reason" in g:
        g["exit_reason"] = EXIT_REASONS.get(g["exit_reason"], str(g["exit_reason"]))
    return g


def scan_gwt(path):
    info = {"file": os.path.basename(path)}
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError as e:
        return dict(info, error=str(e))
    info["bytes"] = len(buf)
    if len(buf) < 12 or buf[:8] != GWT_MAGIC:
        return dict(info, error="not a gapwatch recording (short file or wrong magic)",
                    head_hex=buf[:16].hex())
    info["format_version"] = int.from_bytes(buf[8:12], "little")
    pos, end = 12, len(buf)
    counts = {"hello": 0, "batch": 0, "goodbye": 0, "heartbeat": 0, "other": 0}
    mv = memoryview(buf)
    try:
        while pos < end:
            frame_start = pos
            try:
                n, body = read_varint(mv, pos, end)
            except ValueError:
                info["truncated_bytes"] = end - frame_start
                break
            if n > FRAME_LIMIT:
                info["corrupt_at"] = frame_start
                break
            if body + n > end:
                info["truncated_bytes"] = end - frame_start
                break
            for field, wt, val in parse_fields(mv, body, body + n):
                if wt != 2:
                    continue
                if field == 1:
                    counts["hello"] += 1
                    if counts["hello"] == 1:
                        info["hello"] = scan_hello(mv, val[0], val[1])
                elif field == 2:
                    counts["batch"] += 1
                elif field == 3:
                    counts["goodbye"] += 1
                    info["goodbye"] = scan_goodbye(mv, val[0], val[1])
                elif field == 4:
                    counts["heartbeat"] += 1
                else:
                    counts["other"] += 1
            pos = body + n
    except ValueError as e:
        info["corrupt_at"] = pos
        info["error"] = "frame does not parse: %s" % e
    info["frames"] = counts
    return info


# ------------------------------------------------------------------------------------------------
# Kineto trace


def analyse_trace(path):
    t0 = time.perf_counter()
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            doc = json.load(f)
    except (OSError, ValueError, EOFError) as e:
        return {"file": os.path.basename(path), "error": "unreadable: %s" % e}
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    info = {"file": os.path.basename(path), "bytes": os.path.getsize(path), "events": len(events)}
    gpu, kernels, steps = [], [], 0
    memcpy, runtime = {}, {}
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        try:
            ts, dur = float(e.get("ts", 0)), float(e.get("dur", 0))
        except (TypeError, ValueError):
            continue
        name = str(e.get("name", ""))
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            gpu.append((ts, ts + dur))
            if cat == "kernel":
                kernels.append(dur)
            else:
                m = memcpy.setdefault(name, {"count": 0, "bytes": 0, "us": 0.0})
                m["count"] += 1
                m["us"] += dur
                args = e.get("args") or {}
                if isinstance(args.get("bytes"), (int, float)):
                    m["bytes"] += int(args["bytes"])
        elif cat in ("cuda_runtime", "cuda_driver"):
            r = runtime.setdefault(name, [0, 0.0])
            r[0] += 1
            r[1] += dur
        elif cat == "user_annotation" and name.startswith("ProfilerStep#"):
            steps += 1
    info["profiler_steps"] = steps
    info["kernels"] = len(kernels)
    if kernels:
        info["kernel_median_us"] = round(median(kernels), 2)
        info["kernels_under_20us_frac"] = round(sum(1 for d in kernels if d < 20) / len(kernels), 3)
        if steps:
            info["kernels_per_step"] = round(len(kernels) / steps, 1)
    info["memcpy"] = {k: dict(v, us=round(v["us"], 1)) for k, v in sorted(memcpy.items())}
    top = sorted(runtime.items(), key=lambda kv: -kv[1][0])[:10]
    info["runtime_calls"] = {k: {"count": c, "us": round(us, 1)} for k, (c, us) in top}
    info["sync_calls"] = sum(c for k, (c, _) in runtime.items() if "Synchronize" in k)
    if gpu:
        gpu.sort()
        start, end = gpu[0][0], max(b for _, b in gpu)
        busy, gaps = 0.0, []
        cur_s, cur_e = gpu[0]
        for s, e in gpu[1:]:
            if s > cur_e:
                busy += cur_e - cur_s
                gaps.append(s - cur_e)
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        busy += cur_e - cur_s
        window = max(end - start, 1e-9)
        short = [g for g in gaps if g < LAUNCH_THRESHOLD_US]
        info["gpu_window_ms"] = round(window / 1000, 3)
        info["gpu_busy_frac"] = round(busy / window, 4)
        info["gaps"] = len(gaps)
        info["gaps_short"] = {"count": len(short), "ms": round(sum(short) / 1000, 3),
                              "threshold_us": LAUNCH_THRESHOLD_US}
        info["gaps_long"] = {"count": len(gaps) - len(short),
                             "ms": round((sum(gaps) - sum(short)) / 1000, 3)}
        info["largest_gap_ms"] = round(max(gaps) / 1000, 3) if gaps else 0.0
    info["analyse_s"] = round(time.perf_counter() - t0, 2)
    return info


# ------------------------------------------------------------------------------------------------
# nvidia-smi samples


def smi_mean(path, t_start, t_end):
    """Mean GPU-Util % of the samples taken between t_start and t_end (Unix seconds)."""
    vals = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) < 2:
                    continue
                try:
                    stamp = parts[0]
                    frac = 0.0
                    if "." in stamp:
                        stamp, ms = stamp.rsplit(".", 1)
                        frac = float("0." + ms)
                    t = time.mktime(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + frac
                    util = float(parts[1].rstrip("%").strip())
                except ValueError:
                    continue
                if t_start is None or t_start <= t <= t_end:
                    vals.append(util)
    except OSError:
        return None
    if not vals:
        return None
    return {"samples": len(vals), "gpu_util_mean_pct": round(sum(vals) / len(vals), 1)}


# ------------------------------------------------------------------------------------------------
# one run


def summarise_run(run_dir):
    meta = read_kv(os.path.join(run_dir, "meta.txt"))
    r = {"run": meta.get("run", os.path.basename(run_dir)), "job": meta.get("job"),
         "mode": meta.get("mode"), "order": int(meta.get("order", "0") or 0)}
    for k in ("rc", "timeout_s"):
        if meta.get(k, "") != "":
            try:
                r[k] = int(float(meta[k]))
            except ValueError:
                r[k] = meta[k]
    if meta.get("wall_s"):
        try:
            r["wall_s"] = round(float(meta["wall_s"]), 3)
        except ValueError:
            pass
    r["timed_out"] = meta.get("timed_out") == "1"
    r["cmd"] = meta.get("cmd", "")
    if meta.get("skipped"):
        r["status"] = "skipped"
        r["skipped"] = meta["skipped"]
        return r

    rows = read_jsonl(os.path.join(run_dir, "steps.jsonl"))
    start = next((x for x in rows if x.get("type") == "start"), {})
    end = next((x for x in rows if x.get("type") == "end"), None)
    err = next((x for x in rows if x.get("type") == "error"), None)
    steps = [x for x in rows if x.get("type") == "step"]
    warm = int(start.get("warmup", 0) or 0)
    r["steps_planned"] = start.get("steps")
    r["steps_done"] = len(steps)
    r["pid"] = start.get("pid")
    for k in ("device", "device_name", "torch", "torch_cuda", "fake", "setup_s",
              "import_and_setup_s", "loader", "prof_schedule", "harness_sync"):
        if k in start:
            r[k] = start[k]
    r["step_s"] = [round(x.get("s", 0.0), 6) for x in steps]
    timed = [x for x in steps if x.get("i", 0) >= warm and not x.get("export")]
    ss = [x["s"] for x in timed]
    r["step_median_s"] = median(ss)
    r["step_p90_s"] = pct(ss, 0.9)
    r["step_mean_s"] = (sum(ss) / len(ss)) if ss else None
    r["data_median_s"] = median([x.get("data_s", 0.0) for x in timed])
    r["sync_median_s"] = median([x.get("sync_s", 0.0) for x in timed])
    phases = {}
    for ph in ("wait", "warmup", "active", "after"):
        v = [x["s"] for x in timed if x.get("phase") == ph]
        if v:
            phases[ph] = median(v)
    if phases:
        r["phase_median_s"] = phases
    exp = [x for x in steps if x.get("export")]
    if exp:
        r["export_step_s"] = exp[0]["s"]
    if end:
        for k in ("loop_s", "last_loss", "trace", "worker_pids", "warnings", "fork_warnings"):
            if k in end:
                r[k] = end[k]
    if err:
        r["error"] = err.get("error")

    log = os.path.join(run_dir, "log.txt")
    r["stderr_tail"] = tail_text(log)
    r["gapwatch_lines"] = grep_lines(log, [".gwt", "gapwatch:", "gapwatch]", "[gapwatch"])
    r["cupti_lines"] = grep_lines(log, ["cupti", "kineto", "subscriber"])

    files = sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else []
    gwts = [f for f in files if f.endswith(".gwt")]
    r["gwt"] = [scan_gwt(os.path.join(run_dir, f)) for f in gwts]
    r["other_files"] = [f for f in files if f not in KNOWN_FILES and not f.endswith(".gwt")]
    tr = [f for f in files if f.startswith("trace.json")]
    if tr:
        r["trace_analysis"] = analyse_trace(os.path.join(run_dir, tr[0]))
    if end and end.get("unix_time") and end.get("loop_s"):
        r["smi"] = smi_mean(os.path.join(run_dir, "smi.csv"), end["unix_time"] - end["loop_s"],
                            end["unix_time"])

    if r["timed_out"]:
        r["status"] = "timeout"
    elif "rc" not in r:
        r["status"] = "interrupted"  # the whole check was stopped while this run went on
    elif r.get("rc") == 0 and end is not None and r["steps_done"] == r["steps_planned"]:
        r["status"] = "ok"
    else:
        r["status"] = "failed"
    return r


# ------------------------------------------------------------------------------------------------
# checks and the summary


def checks(runs, smoke=None):
    """The questions of cupti-facts section 6 (and the issue) that these runs answer."""
    out = []

    def add(state, what, detail):
        out.append({"state": state, "check": what, "detail": detail})

    by = {(r.get("job"), r.get("mode")): r for r in runs}
    if smoke:
        bad = [ln for ln in smoke if "rc=" in ln and not ln.rstrip(";").endswith("rc=0")]
        left = [ln for ln in smoke if ln.startswith("files left:") and ln.split(":", 1)[1].strip()]
        add("FAIL" if bad or left else "PASS", "library in processes that never use CUDA",
            "; ".join(smoke))
    for r in runs:
        mode = r.get("mode")
        if mode not in ("gapwatch", "both", "inject", "both_inject"):
            continue
        name = r["run"]
        if r.get("status") == "skipped":
            add("SKIP", "%s recorded" % name, r.get("skipped", ""))
            continue
        add("PASS" if r.get("status") == "ok" else "FAIL", "%s: training finished unchanged" % name,
            "status %s, rc %s, %s/%s steps" % (r.get("status"), r.get("rc"), r.get("steps_done"),
                                               r.get("steps_planned")))
        if r.get("fake"):
            add("INFO", "%s: recording" % name, "fake job: it never initialises CUDA, so no .gwt is "
                "expected (found %d)" % len(r.get("gwt") or []))
            continue
        g = r.get("gwt") or []
        if not g:
            add("FAIL", "%s: a .gwt recording was written" % name, "no .gwt file in the run folder")
            continue
        first = g[0]
        ok = "error" not in first and first.get("frames", {}).get("hello") == 1
        add("PASS" if ok else "FAIL", "%s: recording readable" % name,
            "%s: %s bytes, frames %s%s" % (first.get("file"), first.get("bytes"), first.get("frames"),
                                          (", " + first["error"]) if "error" in first else ""))
        if len(g) > 1:
            add("FAIL", "%s: one recording per CUDA process" % name,
                "%d .gwt files: %s" % (len(g), ", ".join(x["file"] for x in g)))
        hello = first.get("hello") or {}
        if hello:
            pid_ok = hello.get("pid") == r.get("pid")
            add("PASS" if pid_ok else "FAIL", "%s: recording is the training process's" % name,
                "Hello.pid %s, job pid %s; probes %s; cupti %s; driver %s"
                % (hello.get("pid"), r.get("pid"), ",".join(hello.get("probes", [])),
                   hello.get("cupti_version"), hello.get("cuda_driver_version")))
        if mode == "inject":
            want = "-%s.gwt" % r.get("pid")
            add("PASS" if first.get("file", "").startswith("gapwatch-") and first.get("file", "").endswith(want)
                else "FAIL", "%s: default output name gapwatch-<host>-<pid>.gwt" % name,
                "found %s" % first.get("file"))
        gb = first.get("goodbye")
        add("PASS" if gb else "FAIL", "%s: Goodbye written at exit" % name,
            json.dumps(gb) if gb else "no Goodbye frame (cut short, or not written yet)")
        if gb and (gb.get("events_dropped") or gb.get("cupti_records_dropped")):
            add("INFO", "%s: drops" % name, "events_dropped %s, cupti_records_dropped %s"
                % (gb.get("events_dropped"), gb.get("cupti_records_dropped")))
        add("PASS" if r.get("gapwatch_lines") else "FAIL", "%s: exit line on stderr" % name,
            " | ".join(r.get("gapwatch_lines", [])[:3]) or "no line mentioning gapwatch")
        if r.get("worker_pids"):
            add("INFO", "%s: forked DataLoader workers" % name,
                "worker pids %s, fork warnings %s; recordings: %s"
                % (r["worker_pids"], r.get("fork_warnings"), [x.get("file") for x in g]))
        if mode in ("both", "both_inject"):
            # both: LD_PRELOAD, gapwatch shares CUPTI (cupti_sharing.h): Kineto's trace has its
            # kernels and gapwatch's report a "shared" span. both_inject: no sharing possible; current
            # Kineto takes the activity API (gapwatch's report: a "blind" span and a warning), older
            # Kineto is refused (error 39, CPU-only trace, gapwatch's warning at start).
            ta = r.get("trace_analysis") or {}
            expect = ("kernels > 0 (shared)" if mode == "both"
                      else "kernels > 0 with current Kineto, 0 with older Kineto")
            add("INFO", "%s: torch.profiler beside gapwatch" % name,
                "trace kernels %s (expect %s); Kineto said: %s; gapwatch said: %s"
                % (ta.get("kernels"), expect, " | ".join(r.get("cupti_lines", [])[:4]) or "nothing about CUPTI",
                   " | ".join(r.get("gapwatch_lines", [])[:3])))
    for job in sorted({r.get("job") for r in runs if r.get("job")}):
        tp = by.get((job, "torchprof"))
        if tp and tp.get("trace_analysis"):
            ta = tp["trace_analysis"]
            add("INFO", "%s: torch.profiler reference" % job,
                "busy %s of the GPU window, %s kernels (%s/step, median %s us), gaps short/long %s/%s, memcpy %s"
                % (ta.get("gpu_busy_frac"), ta.get("kernels"), ta.get("kernels_per_step"),
                   ta.get("kernel_median_us"), (ta.get("gaps_short") or {}).get("count"),
                   (ta.get("gaps_long") or {}).get("count"),
                   {k: v["count"] for k, v in (ta.get("memcpy") or {}).items()}))
    return out


def overhead_table(runs):
    by = {(r.get("job"), r.get("mode")): r for r in runs}
    rows = []
    for job in sorted({r.get("job") for r in runs if r.get("job")}):
        plain = by.get((job, "plain"))
        base = plain.get("step_median_s") if plain else None
        row = {"job": job, "plain_ms": base * 1e3 if base else None}
        for mode in ("gapwatch", "torchprof", "both", "inject", "both_inject"):
            r = by.get((job, mode))
            med = r.get("step_median_s") if r else None
            row[mode + "_ms"] = med * 1e3 if med else None
            row[mode + "_x"] = (med / base) if (med and base) else None
            if r and r.get("wall_s") and plain and plain.get("wall_s"):
                row[mode + "_wall_x"] = r["wall_s"] / plain["wall_s"]
        tp = by.get((job, "torchprof"))
        if tp and base:
            for ph in ("active", "after"):
                v = (tp.get("phase_median_s") or {}).get(ph)
                row["torchprof_%s_x" % ph] = (v / base) if v else None
        rows.append(row)
    return rows


def render(env, runs, table, chk):
    L = []
    L.append("gapwatch GPU check: summary")
    if env:
        t = env.get("torch", {})
        dv = t.get("device", {}) if isinstance(t, dict) else {}
        L.append("device: %s | driver %s | torch %s (CUDA %s) | python %s"
                 % (dv.get("name", "?"), (env.get("cuda_driver") or {}).get("cuda_driver_version", "?"),
                    t.get("version", "not importable"), t.get("cuda", "?"),
                    str(env.get("python", "?")).split()[0]))
        tc = env.get("torch_cupti")
        if tc:
            L.append("libcupti (torch's): %s [%s]" % (tc.get("path"), tc.get("origin")))
        g = env.get("gapwatch_lib") or {}
        L.append("libgapwatch.so: %s" % (g.get("path") if g.get("exists") else "NOT FOUND (%s)" % g.get("path")))
    if any(r.get("fake") for r in runs):
        L.append("NOTE: fake jobs (--self-test): these numbers mean nothing")
    L.append("")
    L.append("runs (median step over steps after warm-up; wall = whole process):")
    L.append("  %-28s %-8s %4s %7s %9s %9s %9s %8s" % ("run", "status", "rc", "steps", "median_ms",
                                                      "p90_ms", "data_ms", "wall_s"))
    for r in sorted(runs, key=lambda x: x.get("order", 0)):
        L.append("  %-28s %-8s %4s %7s %9s %9s %9s %8s"
                 % (r["run"][:28], r.get("status"), r.get("rc", "-"),
                    "%s/%s" % (r.get("steps_done", "-"), r.get("steps_planned", "-")),
                    fnum(r.get("step_median_s") and r["step_median_s"] * 1e3),
                    fnum(r.get("step_p90_s") and r["step_p90_s"] * 1e3),
                    fnum(r.get("data_median_s") and r["data_median_s"] * 1e3),
                    fnum(r.get("wall_s"), "%.1f")))
        if r.get("skipped"):
            L.append("      skipped: %s" % r["skipped"])
        if r.get("error"):
            L.append("      error: %s" % str(r["error"])[:200])
    L.append("")
    L.append("overhead, median step time over plain (x1.00 = no overhead):")
    L.append("  %-15s %9s %10s %10s %10s %10s %10s %10s" % ("job", "plain_ms", "gapwatch", "torchprof",
                                                          "tp_active", "tp_after", "both", "inject"))
    for row in table:
        def x(k):
            v = row.get(k)
            return "-" if v is None else "x%.2f" % v
        L.append("  %-15s %9s %10s %10s %10s %10s %10s %10s"
                 % (row["job"], fnum(row.get("plain_ms")), x("gapwatch_x"), x("torchprof_x"),
                    x("torchprof_active_x"), x("torchprof_after_x"), x("both_x"), x("inject_x")))
    L.append("  (torchprof = all steps after warm-up; tp_active = the profiler's recording window;")
    L.append("   tp_after = steps after the window, profiler finished. Process wall-time ratios are in summary.json.)")
    L.append("")
    L.append("checks:")
    for c in chk:
        L.append("  [%s] %s: %s" % (c["state"], c["check"], c["detail"][:400]))
    return "\n".join(L) + "\n"


# What each field check (gpu-check.sh, "field checks") wrote as its result, verbatim: each says
# what its numbers mean (scripts/gpu-check/README.md, "Field checks").
FIELD_RESULTS = [("python_lines", "python_lines.txt"),
                 ("live_records", "live_records/live_records.txt"), ("launch_cost", "launch_cost.txt"),
                 ("nccl", "nccl_check.json"), ("cupti12", "cupti12/result.txt"),
                 ("collector", "collector_check.json")]


def field_checks_text(d):
    out = []
    for name, rel in FIELD_RESULTS:
        base = os.path.join(d, "field", name)
        if not os.path.isdir(base):
            continue
        found = None
        for root, _, files in os.walk(base):
            if os.path.basename(rel) in files and (root + "/").endswith(os.path.dirname(rel) + "/" if os.path.dirname(rel) else "/"):
                found = os.path.join(root, os.path.basename(rel))
                break
        out.append("\nfield check %s:" % name)
        if not found:
            out.append("  no %s (see field/%s/output.txt)" % (rel, name))
            continue
        with open(found, encoding="utf-8", errors="replace") as f:
            body = f.read()
        if found.endswith(".json"):
            body = body[:1500]
        out.extend("  " + ln for ln in body.splitlines()[:25])
    return "\n".join(out) + ("\n" if out else "")


def summarise(d):
    runs_dir = os.path.join(d, "runs")
    runs = []
    if os.path.isdir(runs_dir):
        for name in sorted(os.listdir(runs_dir)):
            p = os.path.join(runs_dir, name)
            if os.path.isdir(p):
                try:
                    runs.append(summarise_run(p))
                except Exception as e:  # one broken run must not hide the others
                    runs.append({"run": name, "status": "summary-error", "error": repr(e)[:300]})
    runs.sort(key=lambda r: r.get("order", 0))
    env = {}
    try:
        with open(os.path.join(d, "env.json"), encoding="utf-8") as f:
            env = json.load(f)
    except (OSError, ValueError):
        pass
    with open(os.path.join(d, "runs.jsonl"), "w", encoding="utf-8") as f:
        for r in runs:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    table = overhead_table(runs)
    smoke = []
    try:
        with open(os.path.join(d, "smoke", "smoke.txt"), encoding="utf-8", errors="replace") as f:
            smoke = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError:
        pass
    chk = checks(runs, smoke)
    text = render(env, runs, table, chk) + field_checks_text(d)
    with open(os.path.join(d, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"overhead": table, "checks": chk,
                   "runs": [{k: r.get(k) for k in ("run", "job", "mode", "status", "rc", "timed_out",
                                                   "steps_done", "steps_planned", "step_median_s",
                                                   "wall_s", "skipped", "error")} for r in runs]},
                  f, indent=1, sort_keys=True)
    with open(os.path.join(d, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    return text, runs, table, chk


# ------------------------------------------------------------------------------------------------
# self-test: a synthetic results folder


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_varint(f, v):
    return _varint(f << 3) + _varint(v)


def _field_bytes(f, b):
    return _varint((f << 3) | 2) + _varint(len(b)) + b


def _frame(field, body):
    msg = _field_bytes(field, body)
    return _varint(len(msg)) + msg


def self_test():
    d = tempfile.mkdtemp(prefix="gpu-check-selftest-")
    plan = [("data_bound", "plain", 0.030), ("data_bound", "gapwatch", 0.031),
            ("data_bound", "torchprof", 0.036), ("launch_bound", "plain", 0.020),
            ("launch_bound", "gapwatch", None)]
    for order, (job, mode, step) in enumerate(plan):
        rd = os.path.join(d, "runs", "%02d-%s-%s" % (order, job, mode))
        os.makedirs(rd)
        with open(os.path.join(rd, "meta.txt"), "w") as f:
            f.write("run=%s\njob=%s\nmode=%s\norder=%d\nrc=%d\ntimed_out=%d\nwall_s=5.0\n"
                    % (os.path.basename(rd), job, mode, order, 0 if step else 124, 0 if step else 1))
        with open(os.path.join(rd, "steps.jsonl"), "w") as f:
            f.write(json.dumps({"type": "start", "job": job, "pid": 4242, "steps": 10, "warmup": 2}) + "\n")
            for i in range(10 if step else 3):
                rec = {"type": "step", "i": i, "s": (step or 0.02) * (3 if i == 0 else 1), "data_s": 0.001}
                if mode == "torchprof":
                    rec["phase"] = "active" if 3 <= i < 6 else ("after" if i >= 6 else "wait")
                    if i == 5:
                        rec["export"] = True
                        rec["s"] = 2.0
                f.write(json.dumps(rec) + "\n")
            if step:
                f.write(json.dumps({"type": "end", "steps_done": 10, "loop_s": 0.3,
                                    "unix_time": time.time(), "worker_pids": []}) + "\n")
        with open(os.path.join(rd, "log.txt"), "w") as f:
            f.write("hello\ngapwatch: wrote rec.gwt (gapwatch report rec.gwt)\n" if mode == "gapwatch" else "x\n")
        if mode == "gapwatch" and step:
            hello = (_field_varint(1, 1) + _field_varint(2, 4242) + _field_bytes(3, b"host")
                     + _field_bytes(9, bytes([1, 3])) + _field_varint(11, 130001))
            goodbye = _field_varint(2, 1) + _field_varint(6, 1000) + _field_varint(7, 900)
            with open(os.path.join(rd, "rec.gwt"), "wb") as f:
                f.write(GWT_MAGIC + (1).to_bytes(4, "little") + _frame(1, hello)
                        + _frame(2, _field_varint(1, 0)) + _frame(3, goodbye))
        if mode == "torchprof":
            ev = [{"ph": "X", "cat": "kernel", "name": "k", "ts": 100.0 * k, "dur": 10.0} for k in range(10)]
            ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 1000})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 5, "dur": 3})
            with gzip.open(os.path.join(rd, "trace.json.gz"), "wt") as f:
                json.dump({"traceEvents": ev}, f)
    # a truncated copy of the recording must be reported as truncated
    src = os.path.join(d, "runs", "01-data_bound-gapwatch", "rec.gwt")
    with open(src, "rb") as f:
        whole = f.read()
    cut = os.path.join(d, "cut.gwt")
    with open(cut, "wb") as f:
        f.write(whole[:-3])
    text, runs, table, chk = summarise(d)
    print(text)
    by = {(r["job"], r["mode"]): r for r in runs}
    assert by[("data_bound", "plain")]["status"] == "ok"
    assert abs(by[("data_bound", "plain")]["step_median_s"] - 0.030) < 1e-9
    tp = by[("data_bound", "torchprof")]
    assert tp["step_median_s"] == 0.036 and tp["phase_median_s"]["active"] == 0.036, tp
    assert tp["trace_analysis"]["kernels"] == 10 and tp["trace_analysis"]["gaps"] == 9
    assert abs(tp["trace_analysis"]["gpu_busy_frac"] - 100.0 / 910.0) < 1e-3
    assert by[("launch_bound", "gapwatch")]["status"] == "timeout"
    g = by[("data_bound", "gapwatch")]["gwt"][0]
    assert g["hello"]["pid"] == 4242 and g["hello"]["probes"] == ["cupti_runtime_callbacks", "cupti_activity"], g
    assert g["goodbye"]["exit_reason"] == "normal" and g["frames"]["batch"] == 1, g
    row = [t for t in table if t["job"] == "data_bound"][0]
    assert abs(row["gapwatch_x"] - 31 / 30) < 1e-9 and abs(row["torchprof_x"] - 1.2) < 1e-9, row
    c = scan_gwt(cut)
    assert c.get("truncated_bytes", 0) > 0 and "goodbye" not in c, c
    assert any(x["state"] == "PASS" and "pid" not in x["check"] and "readable" in x["check"] for x in chk)
    import shutil
    shutil.rmtree(d, ignore_errors=True)
    print("summarize.py self-test: OK")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__)
        return 2
    text, _, _, _ = summarise(argv[1])
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
