"""One process, one recording (issue 36, item 8): when the collector stops taking a process's stream,
the library writes the rest to a file of its own, from a copy of the Hello and the first frame the
collector had not acknowledged. The collector's recording and that file are then one process in two
files, and every reader takes them (or their directory) as one: `gapwatch report`, `diff`, `export`,
the Python API and `import` (which writes them as one recording), with the batches both hold read once and the seam noted. The library's exit
line names both files. Before, `report` showed two processes for one rank, `diff` refused ("rank 0
twice"), `export` refused the directory, and the exit line named the file with the tail alone.

The job is exits_on_cue on the simulated stack, rank 0, its fallback file in the collector's
output directory; the collector is stopped (SIGSTOP) for the job's last phase, so that its
recording has the start, the file the rest, and both (after SIGCONT) the frames it read but had not
acknowledged."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import gwtest
from fault_injection_test import HANG, Collector, Job

LAUNCHES = 300
PHASES = 3


def gapwatch(*args):
    return subprocess.run([gwtest.GAPWATCH] + list(args), capture_output=True, text=True, timeout=HANG)


class RecordingParts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gw-parts-")
        collector = Collector(cls.dir)
        cls.out = collector.output
        cls.rest = os.path.join(cls.out, "rest.gwt")
        env = gwtest.gapwatch_env("preload", cls.rest, {"GAPWATCH_SOCKET": collector.socket, "RANK": "0",
                                                         "WORLD_SIZE": "1"})
        job = Job(env, launches=LAUNCHES)
        job.next_phase()
        # The collector acknowledges the first phases: its receipts come as frames do, and the
        # library's heartbeat (once a second) is a frame when the job is quiet.
        time.sleep(1.5)
        collector.proc.send_signal(signal.SIGSTOP)
        job.next_phase()
        cls.status, cls.stderr = job.finish()
        cls.pid = job.proc.pid
        collector.proc.send_signal(signal.SIGCONT)
        collector.wait_log("closed (")
        collector.end(signal.SIGTERM)
        cls.parts = sorted(f for f in os.listdir(cls.out) if f.endswith(".gwt"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def report(self, *operands):
        r = gapwatch("report", "--json", *operands)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def assert_one_process(self, doc):
        self.assertEqual(len(doc["processes"]), 1, [p["file"] for p in doc["processes"]])
        p = doc["processes"][0]
        self.assertEqual((p["pid"], p["rank"]), (self.pid, 0))
        self.assertEqual(p["events"]["launches"], LAUNCHES * PHASES)
        self.assertEqual(p["ended"], "normal")
        self.assertEqual(p["drops"]["batches_missing"], 0)
        return p

    def test_the_job_fell_back_and_its_exit_line_names_both_files(self):
        self.assertEqual(self.status, 0, self.stderr)
        self.assertIn("stopped taking the stream", self.stderr)
        collectors = [f for f in self.parts if f.startswith("gapwatch-")]
        self.assertEqual(len(collectors), 1, self.parts)
        self.assertIn("gapwatch report DIR/%s %s" % (collectors[0], self.rest), self.stderr)

    def test_report_of_the_directory_and_of_both_files_is_one_process_with_the_seam_noted(self):
        self.assertEqual(len(self.parts), 2, self.parts)
        for operands in ([self.out], [os.path.join(self.out, f) for f in self.parts],
                         [os.path.join(self.out, f) for f in reversed(self.parts)]):
            p = self.assert_one_process(self.report(*operands))
            self.assertEqual(len(p["parts"]), 2)
            first, second = p["parts"]
            self.assertTrue(first["file"].endswith(".gwt") and os.path.basename(first["file"]).startswith("gapwatch-"))
            self.assertEqual(second["file"], self.rest)
            self.assertEqual(first["first_sequence"], 0)
            self.assertTrue(second["goodbye"])
            # The file begins at the collector's first unacknowledged batch: no gap, and what both
            # hold is read once.
            self.assertEqual(second["missing_before"], 0)
            self.assertEqual(second["duplicate_batches"], max(0, first["last_sequence"] - second["first_sequence"] + 1))
            self.assertIn("one process in 2 files", p["parts_note"])
        text = gapwatch("report", self.out)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("one process in 2 files, read as one", text.stdout)
        self.assertEqual(text.stdout.count("\n== "), 0, "one process block only")

    def test_the_tail_alone_is_still_read_as_what_it_is(self):
        p = self.report(self.rest)["processes"][0]
        self.assertIsNone(p["parts"])
        self.assertLess(p["events"]["launches"], LAUNCHES * PHASES)

    def test_diff_pairs_the_rank_once(self):
        r = gapwatch("diff", "--json", self.out, self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("twice", r.stderr)

    def test_export_takes_the_directory_as_one_process(self):
        for fmt in ("chrome", "kineto"):
            out = os.path.join(self.dir, "export-%s.json" % fmt)
            r = gapwatch("export", "--format", fmt, "-o", out, self.out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                doc = json.load(f)
            events = doc["traceEvents"] if isinstance(doc, dict) else doc
            kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
            self.assertEqual(len(kernels), LAUNCHES * PHASES, fmt)
            self.assertEqual(len({e.get("pid") for e in kernels}), 1, fmt)

    def test_import_writes_them_as_one_recording_that_reports_the_same(self):
        merged = os.path.join(self.dir, "merged.gwt")
        r = gapwatch("import", self.out, "-o", merged)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("one process from 2 files", r.stdout)

        def without_files(doc):
            for p in doc["processes"]:
                for key in ("file", "parts", "parts_note"):
                    p.pop(key)
            doc.pop("inputs")
            return doc

        one = self.report(merged)
        self.assertIsNone(one["processes"][0]["parts"])
        self.assertEqual(without_files(one), without_files(self.report(self.out)))
        # Two processes are not one: refused with one line, nothing written.
        other = os.path.join(gwtest.REPO, "tests", "golden", "healthy.gwt")
        bad = os.path.join(self.dir, "bad.gwt")
        r = gapwatch("import", self.rest, other, "-o", bad)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("are not parts of one process", r.stderr)
        self.assertFalse(os.path.exists(bad))

    def test_the_python_api_reads_them_as_one_process(self):
        sys.path.insert(0, os.path.join(gwtest.BUILD, "python"))
        try:
            import gapwatch as api
        except ImportError as e:
            self.skipTest("the Python module is not built: %s" % e)
        report = api.analyze(self.out)
        self.assertEqual(len(json.loads(report.json)["processes"]), 1)
        kernels = report.kernels(frame=False)
        self.assertEqual(len(kernels), LAUNCHES * PHASES)
        self.assertEqual({(row["process"], row["rank"]) for row in kernels}, {(0, 0)})


if __name__ == "__main__":
    gwtest.main(__name__)
