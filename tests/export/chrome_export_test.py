"""gapwatch export --format chrome of every shipped single-process scenario, read back by gapwatch
report (its Kineto reader reads the Chrome trace JSON), gives the numbers the recording gave: per
device busy time, kernel, copy and memset counts, idle time and its split by cause, gap count.
Written plain (.json) and compressed (.json.gz). The same for the real PyTorch profiler traces of
../shared/data/kineto (GAPWATCH_KINETO_DATA), where present: a trace exported and read back. Also: the file is JSON with a traceEvents array
whose complete events all have a non-negative duration, and bad input gives one line and exit 2."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_trace  # noqa: E402
import gwtest  # noqa: E402

KINETO_DATA = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(gwtest.REPO, "..", "shared", "data", "kineto")
DEVICE_NUMBERS = ("busy_ns", "kernels", "memcpys", "memsets", "idle_ns", "idle_by_cause", "gap_count", "window_ns")


def device_numbers(doc):
    return {(i, d["device"]): {k: d[k] for k in DEVICE_NUMBERS}
            for i, p in enumerate(doc["processes"]) for d in p["devices"]}


class ChromeExportTest(unittest.TestCase):
    def test_read_back_gives_the_same_numbers(self):
        for scenario in export_trace.scenarios():
            name = os.path.basename(scenario)[:-len(".json")]
            with self.subTest(scenario=name), tempfile.TemporaryDirectory() as workdir:
                recordings = export_trace.record(scenario, workdir)
                # One process per file: the Kineto reader reads one process per trace.
                for recording in recordings:
                    expected = device_numbers(export_trace.report([recording]))
                    for suffix in (".json", ".json.gz"):
                        trace = os.path.join(workdir, os.path.basename(recording) + suffix)
                        export_trace.export([recording], "chrome", trace)
                        opener = gzip.open if suffix.endswith(".gz") else open
                        with opener(trace, "rt") as f:
                            doc = json.load(f)
                        complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
                        self.assertTrue(complete, "%s: no slices" % trace)
                        self.assertTrue(all(float(e["dur"]) >= 0 for e in complete))
                        self.assertTrue(any(e["cat"] == "idle_gap" for e in complete) or
                                        all(v["idle_ns"] == 0 for v in expected.values()), "%s: no gaps" % trace)
                        got = device_numbers(export_trace.report([trace]))
                        self.assertEqual(got, expected, "%s read back" % trace)

    def test_real_kineto_traces_read_back(self):
        import glob
        traces = sorted(glob.glob(os.path.join(KINETO_DATA, "*.json.gz")))
        if not traces:
            self.skipTest("no Kineto traces in %s" % KINETO_DATA)
        for trace in traces:
            name = os.path.basename(trace)
            with self.subTest(trace=name), tempfile.TemporaryDirectory() as workdir:
                exported = os.path.join(workdir, name)
                export_trace.export([trace], "chrome", exported)
                self.assertEqual(device_numbers(export_trace.report([exported])),
                                 device_numbers(export_trace.report([trace])), "%s read back" % name)

    def test_bad_input_is_one_line(self):
        with tempfile.TemporaryDirectory() as workdir:
            bad = os.path.join(workdir, "not-a-recording.gwt")
            with open(bad, "wb") as f:
                f.write(b"this is not a recording")
            out = subprocess.run([gwtest.GAPWATCH, "export", "--format", "chrome", bad, "-o",
                                  os.path.join(workdir, "out.json")], capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
            self.assertIn("not-a-recording.gwt", out.stderr)
            out = subprocess.run([gwtest.GAPWATCH, "export", "--format", "perfetto", bad, "-o",
                                  os.path.join(workdir, "no-such-dir", "out.pftrace")],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 4, out.stderr)
            self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)


if __name__ == "__main__":
    gwtest.main(__name__)
