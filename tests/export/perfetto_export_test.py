"""gapwatch export --format perfetto of every shipped scenario (examples/scenarios/*.json, recorded
on the simulated CUDA stack) parses packet by packet against Perfetto's own schema (the PyPI
package `perfetto`, installed into <build>/perfetto-venv; skipped, exit 77, when it cannot be),
every track and slice is well formed (declared tracks, balanced slices, time never going back on a
track, every flow started once and ended once), and the busy time, kernel count and idle time
recomputed from the packets equal gapwatch report --json's, per input file and device. The same for
the real PyTorch profiler traces of ../shared/data/kineto (GAPWATCH_KINETO_DATA), where present."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_trace  # noqa: E402

PYTHON = None
KINETO_DATA = os.environ.get("GAPWATCH_KINETO_DATA") or os.path.join(export_trace.gwtest.REPO, "..", "shared", "data",
                                                                    "kineto")


class PerfettoExportTest(unittest.TestCase):
    def test_every_scenario(self):
        scenarios = export_trace.scenarios()
        self.assertTrue(scenarios, "no scenarios in examples/scenarios")
        for scenario in scenarios:
            name = os.path.basename(scenario)[:-len(".json")]
            with self.subTest(scenario=name), tempfile.TemporaryDirectory() as workdir:
                recordings = export_trace.record(scenario, workdir)
                self.assertTrue(recordings, "%s: no recording" % name)
                found = self.check_export(name, recordings, workdir)
                # The recordings' clock is CLOCK_MONOTONIC: every timed packet names it (Perfetto's
                # BUILTIN_CLOCK_MONOTONIC, 3), so the export lines up with a system trace.
                self.assertEqual(found["clocks"], [3], "%s: timestamp_clock_id" % name)

    def test_one_recording_twice_is_two_processes(self):
        # Two ranks with one pid (two hosts) must stay two processes: here the same file twice.
        with tempfile.TemporaryDirectory() as workdir:
            recording = export_trace.record(os.path.join(export_trace.gwtest.SCENARIOS, "healthy.json"), workdir)[0]
            twice = os.path.join(workdir, "twice.gwt")
            os.symlink(recording, twice)
            self.check_export("twice", [recording, twice], workdir)

    def test_real_kineto_traces(self):
        traces = sorted(glob.glob(os.path.join(KINETO_DATA, "*.json.gz")))
        if not traces:
            self.skipTest("no Kineto traces in %s" % KINETO_DATA)
        for trace in traces:
            name = os.path.basename(trace)
            with self.subTest(trace=name), tempfile.TemporaryDirectory() as workdir:
                found = self.check_export(name, [trace], workdir)
                # A trace's own clock is none of Perfetto's: no packet names one.
                self.assertEqual(found["clocks"], [0], "%s: timestamp_clock_id" % name)

    def check_export(self, name, inputs, workdir):
        expected = export_trace.report_numbers(export_trace.report(inputs))
        trace = os.path.join(workdir, name + ".pftrace")
        export_trace.export(inputs, "perfetto", trace)
        check = subprocess.run([PYTHON, os.path.join(os.path.dirname(__file__), "perfetto_check.py"), trace,
                                *[os.path.basename(r) for r in inputs]],
                               capture_output=True, text=True, timeout=600)
        self.assertIn(check.returncode, (0, 1), "%s: perfetto_check failed: %s" % (name, check.stderr))
        found = json.loads(check.stdout)
        self.assertEqual(found["problems"], [], "%s: the trace is not well formed" % name)
        for (file, device), numbers in expected.items():
            key = "%s/%d" % (file, device)
            self.assertEqual(found["busy_ns"].get(key, 0), numbers["busy_ns"], "%s %s: busy" % (name, key))
            self.assertEqual(found["kernels"].get(key, 0), numbers["kernels"], "%s %s: kernels" % (name, key))
            self.assertEqual(found["idle_ns"].get(key, 0), numbers["idle_ns"], "%s %s: idle" % (name, key))
        self.assertGreater(found["flows"], 0, "%s: no launch-to-kernel flow" % name)
        return found


if __name__ == "__main__":
    PYTHON = export_trace.perfetto_python()
    if PYTHON is None:
        print("SKIP: Perfetto's trace schema (PyPI package perfetto) could not be installed")
        sys.exit(export_trace.SKIP)
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
