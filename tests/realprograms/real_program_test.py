"""Runs one program of tests/realprograms on the simulated CUDA stack: without gapwatch, under
LD_PRELOAD and under CUDA_INJECTION64_PATH. Each run must end with exit status 0 and print the
program's success line; each recording's counts must equal what the source does.

What the source does is written in the program's header, read here:
  // gapwatch-env: NAME=VALUE            environment for every run (e.g. kernel durations)
  // gapwatch-output: TEXT               a line the program prints when it ran to its end
  // gapwatch-expect: KEY=N KEY>=N ...   counts; KEY is
      api.<kind>      recorded API calls of that kind (gapwatch dump: api_call.kind)
      device.<kind>   device activities of that kind (kernel, memcpy, memset)
      report.launches, report.graph_launches, report.captured_calls
                      the report's launch statistics (launches.* in report --json): kernel and
                      graph launches, graph launches alone, calls captured into a graph
      report.polling_loops, report.polls
                      the query-polling sync type: loops, and the polls they made
      report.steps    the steps the report found (steps.steps)
Every recording must also report nothing dropped.

Usage: real_program_test.py PROGRAM SOURCE.cu
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

PROGRAM, SOURCE = sys.argv[1], sys.argv[2]
NAME = os.path.basename(PROGRAM)


def read_header(path):
    env, outputs, expects = {}, [], []
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*//\s*gapwatch-(env|output|expect):\s*(.*?)\s*$", line)
            if not m:
                continue
            what, text = m.groups()
            if what == "env":
                key, _, value = text.partition("=")
                env[key] = value
            elif what == "output":
                outputs.append(text)
            else:
                for item in text.split():
                    m2 = re.fullmatch(r"([a-z_]+\.[a-z_]+)(>=|=)(\d+)", item)
                    if not m2:
                        raise ValueError("%s: malformed gapwatch-expect item %r" % (path, item))
                    expects.append((m2.group(1), m2.group(2), int(m2.group(3))))
    if not outputs or not expects:
        raise ValueError("%s: needs gapwatch-output and gapwatch-expect lines" % path)
    return env, outputs, expects


ENV, OUTPUTS, EXPECTS = read_header(SOURCE)


def counts_of(recording):
    """The recording's numbers under the keys of gapwatch-expect."""
    counts = collections.Counter()
    dropped = 0
    for record in gwtest.dump(recording):
        if record["type"] == "api_call":
            counts["api." + record["kind"]] += 1
        elif record["type"] == "activity":
            counts["device." + record["kind"]] += 1
        elif record["type"] == "goodbye":
            dropped += record["events_dropped"] + record["cupti_records_dropped"]
        elif record["type"] == "batch":
            dropped += record["drops"]
    report = subprocess.run([gwtest.GAPWATCH, "report", "--json", recording], capture_output=True, text=True,
                            timeout=120)
    if report.returncode != 0:
        raise AssertionError("gapwatch report failed on %s: %s" % (recording, report.stderr.strip()))
    process = json.loads(report.stdout)["processes"][0]
    for key in ("launches", "graph_launches", "captured_calls"):
        counts["report." + key] = process["launches"][key]
    polling = [t for t in process["sync_points"] if t["type"] == "query_polling"]
    counts["report.polling_loops"] = sum(t["count"] for t in polling)
    counts["report.polls"] = sum(t["polls"] for t in polling)
    counts["report.steps"] = process["steps"]["steps"]
    return counts, dropped, process


class RealProgramTest(unittest.TestCase):
    def run_program(self, mode, output=None):
        env = gwtest.gapwatch_env(mode, output, ENV)
        # A real program takes well under a second here; the bound only stops a hang.
        result = gwtest.run([PROGRAM], env, timeout=120)
        where = "%s (%s)" % (NAME, mode or "without gapwatch")
        self.assertEqual(result.returncode, 0, "%s exited %d:\n%s%s" % (where, result.returncode, result.stdout,
                                                                          result.stderr))
        for text in OUTPUTS:
            self.assertIn(text, result.stdout, "%s did not print %r:\n%s" % (where, text, result.stdout))
        return result

    def check_recording(self, mode):
        with tempfile.TemporaryDirectory() as tmp:
            recording = os.path.join(tmp, NAME + ".gwt")
            self.run_program(mode, recording)
            counts, dropped, process = counts_of(recording)
            self.assertEqual(dropped, 0, "%s under %s: the recording dropped %d events" % (NAME, mode, dropped))
            self.assertEqual(process["ended"], "normal")
            self.assertEqual(process["exit_status"], 0)
            wrong = []
            for key, op, want in EXPECTS:
                got = counts.get(key, 0)
                if (op == "=" and got != want) or (op == ">=" and got < want):
                    wrong.append("%s: %d, the source does %s%d" % (key, got, "" if op == "=" else ">=", want))
            self.assertFalse(wrong, "%s under %s:\n  %s" % (NAME, mode, "\n  ".join(wrong)))

    def test_loads_the_simulated_libraries_not_the_toolkits(self):
        # The toolkit's real libcudart and libcuda are in ldconfig's cache on these machines: the
        # program's RPATH must win, or the test would run nothing it can check.
        out = subprocess.run(["ldd", PROGRAM], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        loaded = dict(re.findall(r"^\s*(libcuda(?:rt)?\.so\.\d+) => (\S+)", out.stdout, re.M))
        self.assertIn("libcudart.so.13", loaded, out.stdout)
        for lib, path in loaded.items():
            self.assertEqual(os.path.dirname(os.path.realpath(path)), os.path.realpath(gwtest.SIMLIB),
                             "%s loads %s from %s" % (NAME, lib, path))

    def test_runs_to_its_end_without_gapwatch(self):
        self.run_program(None)

    def test_recording_under_ld_preload_counts_what_the_source_does(self):
        self.check_recording("preload")

    def test_recording_under_cuda_injection64_path_counts_what_the_source_does(self):
        self.check_recording("injection")


if __name__ == "__main__":
    sys.argv[1:] = []
    gwtest.main(__name__)
