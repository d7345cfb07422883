"""Nothing is left out of a trace, whatever its order: every trace of the corpus (tests/data/kineto)
and the shared real traces (../shared/data/kineto, where present), shuffled four ways, gives the
report of the original.

Usage: kineto_shuffled_traces_test.py GAPWATCH REPO_ROOT [TRACE...]

The four orders of traceEvents: by kind (every event of one category, then the next: the order
some writers use, which once left 43 % of a real trace's kernels out), by thread (pid, tid),
reversed, and random (a fixed seed per trace). `gapwatch report --json` of each must equal the
original's, except for what names the file and what says how the reader had to reorder
(`inputs`, `file`, `trace.reordered`-like reader counts: none are in the report's analysis).
Also checked: the original reports no late events. Exit 0 when all hold, 1 with one line per
difference (the first few differing paths of each).
"""
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile

# Keys that name the input, not what was in it.
IGNORED = {"inputs", "file", "generator"}


# A float is kept as its text: Python's float would drop a timestamp's nanoseconds
# (1712195495519689.047 us is 1712195495519689.0 as a double), and the copy must hold the same
# numbers as the original. The marker survives json.dumps as a string and is unquoted after.
FLOAT_MARK = "\x00F"
FLOAT_TEXT = re.compile(r'"\\u0000F([-+0-9.eE]+)"')


def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=lambda text: FLOAT_MARK + text)


def dumps(trace):
    return FLOAT_TEXT.sub(r"\1", json.dumps(trace))


def orders(events, seed):
    def kind(e):
        return (str(e.get("ph")), str(e.get("cat")))

    def thread(e):
        return (str(e.get("pid")), str(e.get("tid")))

    by_kind = sorted(events, key=kind)  # stable: each kind keeps the file's order
    by_thread = sorted(events, key=thread)
    rng = random.Random(seed)
    shuffled = list(events)
    rng.shuffle(shuffled)
    return {"by_kind": by_kind, "by_thread": by_thread, "reversed": list(reversed(events)), "random": shuffled}


def report(gapwatch, path):
    run = subprocess.run([gapwatch, "report", "--json", "--hta", path], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        return None, f"exit {run.returncode}: {run.stderr.strip()[:300]}"
    return json.loads(run.stdout), None


def differences(a, b, path="", out=None, limit=5):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in IGNORED:
                continue
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'the shuffled' if k not in a else 'the original'}")
            else:
                differences(a[k], b[k], f"{path}/{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items, shuffled {len(b)}")
        else:
            for i, (x, y) in enumerate(zip(a, b)):
                differences(x, y, f"{path}[{i}]", out, limit)
    elif a != b:
        out.append(f"{path}: {a!r}, shuffled {b!r}")
    return out


def traces(repo_root, named):
    if named:
        return named
    corpus = os.path.join(repo_root, "tests", "data", "kineto")
    found = [os.path.join(corpus, n) for n in sorted(os.listdir(corpus)) if n.endswith(".json.gz")]
    shared = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(repo_root, "..", "shared", "data", "kineto")
    if os.path.isdir(shared):
        found += [os.path.join(shared, n) for n in sorted(os.listdir(shared)) if n.endswith(".json.gz")]
    else:
        print(f"note: no shared traces at {os.path.normpath(shared)}: the corpus only")
    return found


def main(argv):
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    gapwatch, repo_root = argv[1], argv[2]
    failures = []
    checked = 0
    with tempfile.TemporaryDirectory() as scratch:
        for seed, path in enumerate(traces(repo_root, argv[3:])):
            name = os.path.basename(path)
            original, error = report(gapwatch, path)
            if error:
                failures.append(f"{name}: {error}")
                continue
            for p in original.get("processes", []):
                if p.get("late_events"):
                    failures.append(f"{name}: {p['late_events']} late events in the original's report")
            trace = load(path)
            for order, events in orders(trace["traceEvents"], seed).items():
                copy = dict(trace)
                copy["traceEvents"] = events
                out = os.path.join(scratch, f"{order}-{name}")
                with gzip.open(out, "wt", encoding="utf-8") as f:
                    f.write(dumps(copy))
                got, error = report(gapwatch, out)
                if error:
                    failures.append(f"{name} {order}: {error}")
                    continue
                diff = differences(original, got)
                checked += 1
                if diff:
                    failures.append(f"{name} {order}: differs from the original: " + "; ".join(diff))
                os.remove(out)
            print(f"{name}: 4 orders checked")
    for f in failures:
        print("FAIL " + f)
    print(f"{checked} shuffled reports compared, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
