"""Outputs never half-exist (issue 37, item 2): every command that writes a file, given a bad
output path or a bad input, leaves nothing behind: no file at the output path, no temporary file
beside it, no directory it made. A bad output path is refused before any work (nothing printed,
no input read, no job run), in one line naming the path, with exit code 4; a bad input gives its
one-line error and exit code 2. A good case beside each shows the output is then written whole.

Usage: outputs_never_half_exist_test.py GAPWATCH REPO"""
import gzip
import os
import subprocess
import sys
import tempfile
import unittest

GAPWATCH, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
RECORDING = os.path.join(REPO, "tests", "golden", "healthy.gwt")
TRACE = os.path.join(REPO, "tests", "data", "kineto", "short_data_bound.json.gz")
EXIT_BAD_INPUT, EXIT_CANNOT_WRITE = 2, 4


def run(args, cwd):
    return subprocess.run([GAPWATCH] + args, cwd=cwd, capture_output=True, text=True, timeout=300)


class OutputsNeverHalfExist(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gw-outputs-")
        with open(os.path.join(self.dir, "picture.gwt"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + bytes(64))  # a PNG renamed to .gwt
        with open(TRACE, "rb") as f:
            whole = f.read()
        with open(os.path.join(self.dir, "cut.json.gz"), "wb") as f:
            f.write(whole[:len(whole) // 3])  # a trace cut short mid-stream
        with open(os.path.join(self.dir, "a-file"), "w") as f:
            f.write("not a directory\n")
        os.mkdir(os.path.join(self.dir, "a-directory"))
        self.before = self.listing()

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dir])

    def listing(self):
        found = set()
        for root, dirs, files in os.walk(self.dir):
            for name in dirs + files:
                found.add(os.path.relpath(os.path.join(root, name), self.dir))
        return found

    def assert_nothing_left(self, what):
        self.assertEqual(self.listing() - self.before, set(), "%s left these behind" % what)

    # Each writer: its arguments for an output path and inputs.
    WRITERS = {
        "export perfetto": lambda out, inputs: ["export", *inputs, "-o", out],
        "export chrome": lambda out, inputs: ["export", "--format", "chrome", *inputs, "-o", out],
        # A .gz output (gzip-compressed as it is written); the existing directory as it is.
        "export chrome gz": lambda out, inputs: ["export", "--format", "chrome", *inputs, "-o",
                                                 out if out == "a-directory" else out + ".gz"],
        "export kineto": lambda out, inputs: ["export", "--format", "kineto", *inputs, "-o", out],
        "report --html": lambda out, inputs: ["report", "--html", out, *inputs],
        "diff --html": lambda out, inputs: ["diff", "--html", out, inputs[0], inputs[0]],
    }

    def test_a_bad_output_path_is_refused_before_any_work(self):
        bad_outputs = {"in a missing directory": "missing/out.x", "an existing directory": "a-directory",
                       "under a regular file": "a-file/out.x"}
        for writer, args in self.WRITERS.items():
            for why, out in bad_outputs.items():
                with self.subTest(writer=writer, output=why):
                    r = run(args(out, [RECORDING]), self.dir)
                    self.assertEqual(r.returncode, EXIT_CANNOT_WRITE, r.stderr)
                    self.assertEqual(r.stdout, "", "%s printed its work before failing" % writer)
                    lines = r.stderr.splitlines()
                    self.assertEqual(len(lines), 1, r.stderr)
                    self.assertIn(out.split("/")[0], lines[0])
                    self.assert_nothing_left("%s to %s" % (writer, why))
        for why, out in bad_outputs.items():
            with self.subTest(writer="import", output=why):
                r = run(["import", TRACE, "-o", out], self.dir)
                self.assertEqual(r.returncode, EXIT_CANNOT_WRITE, r.stderr)
                self.assert_nothing_left("import to %s" % why)
            with self.subTest(writer="profile --html", output=why):
                marker = os.path.join(self.dir, "the-job-ran")
                r = run(["profile", "-o", "run", "--html", out, "--", "touch", marker], self.dir)
                self.assertEqual(r.returncode, EXIT_CANNOT_WRITE, r.stderr)
                self.assertFalse(os.path.exists(marker), "the job ran before --html was found unusable")
                self.assert_nothing_left("profile --html to %s" % why)

    def test_a_bad_input_leaves_no_output(self):
        for writer, args in self.WRITERS.items():
            if writer.endswith("--html"):
                continue  # a report of unreadable files is still a page saying so (below)
            for bad in ("picture.gwt", "cut.json.gz", "missing.gwt"):
                with self.subTest(writer=writer, input=bad):
                    r = run(args("out.x", [bad]), self.dir)
                    self.assertEqual(r.returncode, EXIT_BAD_INPUT, r.stderr)
                    self.assert_nothing_left("%s of %s" % (writer, bad))
        with self.subTest(writer="export kineto, one trace per input into a directory"):
            r = run(["export", "--format", "kineto", "picture.gwt", "cut.json.gz", "-o", "traces/"], self.dir)
            self.assertEqual(r.returncode, EXIT_BAD_INPUT, r.stderr)
            self.assert_nothing_left("export kineto of two bad inputs into traces/")  # the directory too
        for bad in ("picture.gwt", "cut.json.gz", "missing.json.gz"):
            with self.subTest(writer="import", input=bad):
                r = run(["import", bad, "-o", "out.gwt"], self.dir)
                self.assertEqual(r.returncode, EXIT_BAD_INPUT, r.stderr)
                self.assert_nothing_left("import of %s" % bad)

    def test_good_inputs_are_written_whole(self):
        # Not vacuous: the same commands with a good input and path write their output, and
        # nothing else is left beside it.
        for writer, args in self.WRITERS.items():
            with self.subTest(writer=writer):
                out = "good-" + writer.replace(" ", "-").replace("--", "")
                r = run(args(out, [RECORDING]), self.dir)
                self.assertEqual(r.returncode, 0, r.stderr)
                path = os.path.join(self.dir, out + (".gz" if writer.endswith("gz") else ""))
                self.assertTrue(os.path.isfile(path) and os.path.getsize(path) > 0, writer)
                if writer.endswith("gz"):
                    with gzip.open(path) as f:
                        f.read()  # whole: the gzip stream ends
        leftovers = [n for n in self.listing() if os.path.basename(n).startswith(".") and ".tmp-" in n]
        self.assertEqual(leftovers, [])
        r = run(["import", TRACE, "-o", "good.gwt"], self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.getsize(os.path.join(self.dir, "good.gwt")) > 0)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
