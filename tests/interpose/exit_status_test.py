"""The exit status a program passes to exit() is recorded and reported as it is, in the text and the
JSON report, by either way of loading the library; a recording that does not carry one (written
before gapwatch recorded it) says "unknown", never 0."""
import json
import os
import subprocess
import tempfile
import unittest

import gwtest

EXITS_WITH = os.path.join(gwtest.BUILD, "bin", "exits_with")
OLD_RECORDING = os.path.join(gwtest.REPO, "tests", "golden", "healthy.gwt")  # recorded without it


def report(path, *args):
    r = subprocess.run([gwtest.GAPWATCH, "report", *args, path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("gapwatch report failed: " + r.stderr)
    return r.stdout


class ExitStatus(unittest.TestCase):
    def record(self, mode, status, workdir):
        out = os.path.join(workdir, "r.gwt")
        r = gwtest.run([EXITS_WITH, str(status)], gwtest.gapwatch_env(mode, out), cwd=workdir)
        self.assertEqual(r.returncode, status, r.stderr)  # gapwatch does not change it
        return out

    def test_exit_status_3_is_reported_as_3_in_text_and_json(self):
        for mode in ("preload", "injection"):
            with self.subTest(mode=mode), tempfile.TemporaryDirectory() as d:
                out = self.record(mode, 3, d)
                self.assertIn("ended normally (exit status 3)", report(out))
                process = json.loads(report(out, "--json"))["processes"][0]
                self.assertEqual(process["ended"], "normal")
                self.assertEqual(process["exit_status"], 3)

    def test_exit_status_0_is_reported_as_0(self):
        with tempfile.TemporaryDirectory() as d:
            out = self.record("preload", 0, d)
            self.assertIn("ended normally (exit status 0)", report(out))
            self.assertEqual(json.loads(report(out, "--json"))["processes"][0]["exit_status"], 0)

    def test_a_recording_without_an_exit_status_says_unknown(self):
        self.assertIn("ended normally (exit status unknown)", report(OLD_RECORDING))
        self.assertIsNone(json.loads(report(OLD_RECORDING, "--json"))["processes"][0]["exit_status"])


if __name__ == "__main__":
    gwtest.main(__name__)
