"""`gapwatch import TRACE -o run.gwt`: the report of the imported recording equals the report of the
trace, as text and as --json (apart from the file names), for every trace in ../shared/data/kineto/.
First, with no data needed, on a small hand-written trace: an existing output is refused without
--force (exit 1, the file untouched) and replaced with it; a malformed trace is refused with exit 2,
one line, and no output file; a file that is not a trace is refused likewise.

    kineto_import_test.py GAPWATCH REPO_ROOT

The traces are found at REPO_ROOT/../shared/data/kineto (or where GAPWATCH_KINETO_DATA points). Where
that directory is missing, the test says so after the checks that need no data and exits 77, which
ctest reports as skipped.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

GAPWATCH, REPO_ROOT = sys.argv[1], sys.argv[2]
DATA = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(REPO_ROOT, "..", "shared", "data", "kineto")
TIMEOUT = 300

SMALL_TRACE = """{"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 5, "ts": 100, "dur": 5,
   "args": {"cbid": 211, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 110, "dur": 20,
   "args": {"device": 0, "stream": 7, "correlation": 1}}
]}"""


def run(*args):
    return subprocess.run([GAPWATCH, *args], capture_output=True, text=True, timeout=TIMEOUT)


def leftovers(directory, keep):
    return sorted(f for f in os.listdir(directory) if f not in keep)


def check_without_data():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "small.json")
        with open(trace, "w") as f:
            f.write(SMALL_TRACE)
        out = os.path.join(tmp, "run.gwt")
        first = run("import", trace, "-o", out)
        if first.returncode != 0 or not os.path.isfile(out) or len(first.stdout.splitlines()) != 1:
            failures.append(f"import of a small trace: exit {first.returncode}, stdout {first.stdout!r}, "
                            f"stderr {first.stderr!r}")
        with open(out, "rb") as f:
            written = f.read()
        again = run("import", trace, "-o", out)
        lines = again.stderr.splitlines()
        if again.returncode != 1 or len(lines) != 1 or "exists (give --force to replace it)" not in lines[0]:
            failures.append(f"import over an existing file: exit {again.returncode}, stderr {again.stderr!r}")
        with open(out, "rb") as f:
            if f.read() != written:
                failures.append("import over an existing file without --force changed it")
        forced = run("import", trace, "-o", out, "--force")
        if forced.returncode != 0:
            failures.append(f"import --force: exit {forced.returncode}, stderr {forced.stderr!r}")
        report = run("report", out)
        if report.returncode != 0 or "PyTorch profiler trace (Kineto)" not in report.stdout:
            failures.append(f"report of the imported file: exit {report.returncode}, stdout {report.stdout[:400]!r}")

        cut = os.path.join(tmp, "cut.json.gz")
        with gzip.open(cut, "wt") as f:
            f.write(SMALL_TRACE[:120])
        bad_out = os.path.join(tmp, "bad.gwt")
        bad = run("import", cut, "-o", bad_out)
        lines = bad.stderr.splitlines()
        if bad.returncode != 2 or len(lines) != 1 or not lines[0].startswith(cut + ": Kineto trace: "):
            failures.append(f"import of a truncated trace: exit {bad.returncode}, stderr {bad.stderr!r}")
        not_trace = run("import", out, "-o", bad_out)  # a .gwt is not a trace
        lines = not_trace.stderr.splitlines()
        if not_trace.returncode != 2 or len(lines) != 1 or "not a PyTorch profiler (Kineto) trace" not in lines[0]:
            failures.append(f"import of a .gwt: exit {not_trace.returncode}, stderr {not_trace.stderr!r}")
        left = leftovers(tmp, {"small.json", "run.gwt", "cut.json.gz"})
        if left:
            failures.append(f"refused imports left files behind: {left}")
    return failures


def without_file_names(report_json, name):
    doc = json.loads(report_json)
    for entry in doc["inputs"]:
        entry["file"] = name
    for p in doc["processes"]:
        p["file"] = name
    return doc


def compare_one(path, tmp):
    name = os.path.basename(path)
    failures = []
    out = os.path.join(tmp, name + ".gwt")
    imported = run("import", path, "-o", out)
    if imported.returncode != 0:
        return [f"{name}: import exit {imported.returncode}: {imported.stderr.strip()}"]
    print(imported.stdout.strip())
    for mode in ([], ["--json"]):
        direct = run("report", *mode, path)
        via = run("report", *mode, out)
        if direct.returncode != 0 or via.returncode != 0:
            failures.append(f"{name}: report {' '.join(mode)} exit {direct.returncode} / {via.returncode}")
            continue
        if mode:
            a, b = without_file_names(direct.stdout, "FILE"), without_file_names(via.stdout, "FILE")
            if a != b:
                keys = [k for k in a["processes"][0] if a["processes"][0][k] != b["processes"][0].get(k)]
                failures.append(f"{name}: report --json differs in {keys or 'the top level'}")
        else:
            a = direct.stdout.replace(path, "FILE")
            b = via.stdout.replace(out, "FILE")
            if a != b:
                diff = [f"{x!r} / {y!r}" for x, y in zip(a.splitlines(), b.splitlines()) if x != y][:3]
                failures.append(f"{name}: text report differs: {diff or 'in length'}")
    os.remove(out)
    return failures


def main():
    failures = check_without_data()
    if not os.path.isdir(DATA):
        for f in failures:
            print("FAIL " + f)
        if failures:
            return 1
        print(f"skipped: no Kineto traces at {os.path.normpath(DATA)} (the shared data sits beside the "
              "repository; set GAPWATCH_KINETO_DATA to point elsewhere)")
        return 77
    traces = sorted(f for f in os.listdir(DATA) if f.endswith((".json", ".json.gz")))
    if not traces and not failures:
        print(f"skipped: no .json or .json.gz files in {DATA}")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        for name in traces:
            failures += compare_one(os.path.join(DATA, name), tmp)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
