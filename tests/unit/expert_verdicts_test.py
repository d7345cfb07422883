"""The report agrees with an expert's verdict and first fix on every shared real trace
(tests/data/kineto-expert/README.md): the kind of verdict (a first pass, GPU-bound, or the first
finding's id) and what the first fix names.

Usage: expert_verdicts_test.py GAPWATCH REPO_ROOT

Where the shared traces are not beside the repository the test says so and skips (exit 77).
"""
import json
import os
import subprocess
import sys


def check(gapwatch, trace, expected):
    run = subprocess.run([gapwatch, "report", "--json", trace], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        return [f"exit {run.returncode}: {run.stderr.strip()[:200]}"]
    p = json.loads(run.stdout)["processes"][0]
    findings, bottleneck, verdict = p.get("findings") or [], p.get("bottleneck"), p.get("verdict") or ""
    expect = expected["expect"]
    kind = expect["kind"]
    failures = []
    if kind == "gpu_bound":
        if not bottleneck:
            return [f"no bottleneck; verdict {verdict!r}"]
        if not any(m in bottleneck["title"] for m in expect["bottleneck_mentions_any"]):
            failures.append(f"bottleneck {bottleneck['title']!r} names none of {expect['bottleneck_mentions_any']}")
        first = bottleneck
    else:
        if not findings:
            return [f"no finding; verdict {verdict!r}"]
        first = findings[0]
        wanted = expect["finding_ids"]
        if first["id"] not in wanted:
            failures.append(f"first finding {first['id']} ({first['title']!r}), the expert's: {wanted}")
        if kind == "first_pass" and "first pass" not in verdict:
            failures.append(f"the verdict {verdict!r} does not say first pass")
    if not any(m in first["fix"] for m in expect["fix_mentions_any"]):
        failures.append(f"first fix {first['fix'][:160]!r}... names none of {expect['fix_mentions_any']}")
    return failures


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    gapwatch, repo = argv[1], argv[2]
    shared = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(repo, "..", "shared", "data", "kineto")
    verdicts = os.path.join(repo, "tests", "data", "kineto-expert")
    if not os.path.isdir(shared):
        print(f"no shared traces at {os.path.normpath(shared)}: nothing to check")
        return 77
    names = sorted(n for n in os.listdir(verdicts) if n.endswith(".verdict.json"))
    traces = sorted(n for n in os.listdir(shared) if n.endswith(".json.gz"))
    failures = []
    for t in traces:
        if t.replace(".json.gz", ".verdict.json") not in names:
            failures.append(f"{t}: no expert verdict file in tests/data/kineto-expert")
    for n in names:
        with open(os.path.join(verdicts, n)) as f:
            expected = json.load(f)
        trace = os.path.join(shared, expected["trace"])
        if not os.path.exists(trace):
            failures.append(f"{n}: its trace {expected['trace']} is not in the shared directory")
            continue
        got = check(gapwatch, trace, expected)
        print(f"{expected['trace']}: {'agrees' if not got else 'DISAGREES'} ({expected['expect']['kind']})")
        failures += [f"{expected['trace']}: {g}" for g in got]
    for f in failures:
        print("FAIL " + f)
    print(f"{len(names)} verdicts checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
