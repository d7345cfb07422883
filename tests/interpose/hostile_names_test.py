"""Names that are not UTF-8 (a kernel name with invalid bytes, a directory name with some; the
program also names its thread so) go through every output as valid UTF-8 a strict reader takes: the text
report, --json, --html, diff --json, the Chrome and Kineto exports, the Perfetto export (parsed with Perfetto's
own schema where its PyPI package can be had), and the Python API's tables. Each invalid byte is
U+FFFD in the recording (the recorder's rule, gapwatch/utf8_text.h) and in what is parsed, and \\xNN
in the text report (a path's bytes, which only the file system holds); the rest of each name is
kept (issue 36, item 9)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import gwtest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "export"))
import export_trace  # noqa: E402

PROGRAM = os.path.join(gwtest.BUILD, "bin", "hostile_names")
KEPT = "rn"  # from the kernel's name "_Z4k\xe9rn\x80...": the valid part is kept


def gapwatch(*args):
    r = subprocess.run([os.fsencode(gwtest.GAPWATCH), *[os.fsencode(a) if isinstance(a, str) else a for a in args]],
                       capture_output=True, timeout=300)
    return r


class HostileNames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.top = tempfile.mkdtemp(prefix="gw-hostile-")
        # A directory whose name is not UTF-8: the recording's path, which reports and exports name.
        cls.dir = os.path.join(os.fsencode(cls.top), b"run-\xff\xfe")
        os.mkdir(cls.dir)
        env = gwtest.gapwatch_env("preload", None)
        env = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
        env[b"GAPWATCH_OUTPUT"] = os.path.join(cls.dir, b"r.gwt")
        r = subprocess.run([PROGRAM], env=env, capture_output=True, timeout=120, cwd=cls.top)
        if r.returncode != 0:
            raise AssertionError("hostile_names exited %d: %r" % (r.returncode, r.stderr[-500:]))
        cls.recording = os.path.join(cls.dir, b"r.gwt")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.top, ignore_errors=True)

    def strict(self, data, what):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail("%s is not valid UTF-8: %s" % (what, e))

    def test_the_recording_holds_the_names_with_each_invalid_byte_replaced(self):
        r = gapwatch("dump", self.recording)
        self.assertEqual(r.returncode, 0, r.stderr)
        dump = self.strict(r.stdout, "the dump")
        self.assertIn("_Z4k\ufffdrn\ufffd", dump)  # the kernel: Latin-1 e acute, a lone continuation byte

    def test_text_report(self):
        r = gapwatch("report", "--top", "10", self.recording)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = self.strict(r.stdout, "the text report")
        self.assertIn("run-\\xff\\xfe", text)  # the path's invalid bytes by value, the rest kept
        self.assertIn("_Z4k\ufffdrn", text)

    def test_json_report(self):
        r = gapwatch("report", "--json", "--top", "10", self.recording)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(self.strict(r.stdout, "report --json"))
        names = [k["name"] for k in doc["processes"][0]["kernels"]["top_by_time"]]
        self.assertTrue(any(KEPT in n and "\ufffd" in n for n in names), names)
        self.assertIn("run-\ufffd\ufffd", doc["processes"][0]["file"])

    def test_diff_json(self):
        # The run compared with itself: its paths and kernel names are in the document.
        r = gapwatch("diff", "--json", self.recording, self.recording)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(self.strict(r.stdout, "diff --json"))
        self.assertIn("run-\ufffd\ufffd", json.dumps(doc, ensure_ascii=False))

    def test_html_report(self):
        out = os.path.join(self.dir, b"r.html")
        r = gapwatch("report", "--html", out, self.recording)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            page = self.strict(f.read(), "the HTML report")
        self.assertIn("_Z4k\ufffdrn", page)

    def test_chrome_and_kineto_exports(self):
        for fmt in ("chrome", "kineto"):
            out = os.path.join(self.dir, b"r-" + fmt.encode() + b".json")
            r = gapwatch("export", "--format", fmt, self.recording, "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                doc = json.loads(self.strict(f.read(), "the %s export" % fmt))
            names = {e.get("name", "") for e in doc["traceEvents"]}
            self.assertTrue(any(KEPT in n and "\ufffd" in n for n in names), "%s: %s" % (fmt, sorted(names)[:20]))
            if fmt == "kineto":
                # And it reads back: gapwatch's own reader takes what gapwatch wrote.
                back = gapwatch("report", "--json", out)
                self.assertEqual(back.returncode, 0, back.stderr)

    def test_perfetto_export(self):
        out = os.path.join(self.dir, b"r.pftrace")
        r = gapwatch("export", self.recording, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        python = export_trace.perfetto_python()
        if python is None:
            self.skipTest("Perfetto's trace schema (PyPI package perfetto) could not be installed")
        check = ("import sys\n"
                 "from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb\n"
                 "t = pb.Trace(); t.ParseFromString(open(sys.argv[1], 'rb').read())\n"
                 "names = [p.track_event.name for p in t.packet if p.HasField('track_event')]\n"
                 "names += [p.track_descriptor.thread.thread_name for p in t.packet if p.HasField('track_descriptor')]\n"
                 "print('\\n'.join(names))\n")
        parsed = subprocess.run([python, "-c", check, out], capture_output=True, timeout=300)
        self.assertEqual(parsed.returncode, 0, parsed.stderr[-1000:])
        self.assertIn(KEPT, self.strict(parsed.stdout, "Perfetto's strings"))

    def test_python_tables(self):
        sys.path.insert(0, os.path.join(gwtest.BUILD, "python"))
        try:
            import gapwatch as api
        except ImportError as e:
            self.skipTest("the Python API is not built: %s" % e)
        plain = os.path.join(self.top, "plain.gwt")  # the API takes str paths; the names are the test
        shutil.copy(self.recording, plain)
        report = api.analyze(plain)
        kernels = report.kernels(frame=False)
        names = [row["name"] for row in kernels]
        self.assertTrue(any(KEPT in n and "\ufffd" in n for n in names), names)
        self.assertTrue(report.gaps(frame=False) is not None)


if __name__ == "__main__":
    gwtest.main("hostile_names_test")
