"""Golden tests of `gapwatch report --json`: stored recordings and the report each must give.

    golden_report.py check GAPWATCH [SCENARIO...]   compare (exit 1 with a diff on a mismatch)
    golden_report.py write GAPWATCH [SCENARIO...]   rewrite the expected reports
    golden_report.py normalize < report.json        print the normalised form

The files live beside this script: <scenario>.gwt (or <scenario>.rank<R>.gwt, one per rank, for a
scenario of several processes) and <scenario>.report.json, the normalised report of them all
together. scripts/regenerate-goldens.sh makes both (README.md here says when to run it).

Normalisation keeps what the analysis decides and drops what changes from run to run or machine
to machine without meaning anything (docs/analysis.md, "Golden tests"):
  - dropped: "generator" (gapwatch's version), pid, host, command_line, and absolute timestamps
    (window_start_ns, window_end_ns, start_ns / end_ns of the longest gaps);
  - file names: their base name only;
  - every integer under a key ending in "ns" (durations): rounded to the microsecond;
  - every other non-integer number (fractions, shares, rates): rounded to 4 decimals.
Everything else, the order of keys and of findings included, must match exactly.
"""
import difflib
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DROPPED = {"generator", "pid", "host", "command_line", "window_start_ns", "window_end_ns", "start_ns", "end_ns"}
REGENERATE = "scripts/regenerate-goldens.sh"


def normalize(value, key=""):
    if isinstance(value, dict):
        return {k: normalize(v, k) for k, v in value.items() if k not in DROPPED}
    if isinstance(value, list):
        return [normalize(v, key) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        if key == "file" and isinstance(value, str):
            return os.path.basename(value)
        return value
    if isinstance(value, int):
        if key.endswith("ns"):
            return int(round(value / 1000.0)) * 1000
        return value
    if isinstance(value, float):
        if key.endswith("ns"):
            return int(round(value / 1000.0)) * 1000
        return round(value, 4)
    return value


def text_of(report):
    return json.dumps(normalize(report), indent=2) + "\n"


def scenarios():
    names = set()
    for path in glob.glob(os.path.join(HERE, "*.gwt")):
        names.add(os.path.basename(path).split(".")[0])
    return sorted(names)


def recordings(scenario):
    single = os.path.join(HERE, scenario + ".gwt")
    if os.path.exists(single):
        return [os.path.basename(single)]
    ranks = glob.glob(os.path.join(HERE, scenario + ".rank*.gwt"))
    return sorted((os.path.basename(p) for p in ranks), key=lambda n: int(n.split(".rank")[1].split(".")[0]))


def report_of(gapwatch, scenario):
    files = recordings(scenario)
    if not files:
        raise SystemExit("no recording for scenario %s in %s" % (scenario, HERE))
    out = subprocess.run([gapwatch, "report", "--json"] + files, cwd=HERE, capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise SystemExit("gapwatch report --json %s failed (%d): %s" % (" ".join(files), out.returncode, out.stderr))
    return text_of(json.loads(out.stdout))


def main(argv):
    if len(argv) >= 2 and argv[1] == "normalize":
        sys.stdout.write(text_of(json.load(sys.stdin)))
        return 0
    if len(argv) < 3 or argv[1] not in ("check", "write"):
        sys.stderr.write(__doc__)
        return 2
    mode, gapwatch, names = argv[1], argv[2], argv[3:] or scenarios()
    failed = []
    for name in names:
        expected_path = os.path.join(HERE, name + ".report.json")
        actual = report_of(gapwatch, name)
        if mode == "write":
            with open(expected_path, "w") as f:
                f.write(actual)
            print("wrote %s" % os.path.relpath(expected_path))
            continue
        if not os.path.exists(expected_path):
            failed.append(name)
            print("%s: no expected report %s; run %s" % (name, expected_path, REGENERATE))
            continue
        with open(expected_path) as f:
            expected = f.read()
        if expected == actual:
            print("%s: report matches" % name)
            continue
        failed.append(name)
        sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                                   name + ".report.json (expected)", "gapwatch report --json (actual)"))
        print("%s: the report changed. If the change is intended, run %s and review the diff." % (name, REGENERATE))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
