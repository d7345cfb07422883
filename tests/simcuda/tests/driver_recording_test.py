"""gapwatch on a program that uses only the CUDA driver API (driver_api_program): its recording
counts the program's launches, copies, memsets, event records and waits, allocations and syncs,
each an outermost driver call, and holds one kernel record per launch and a record per copy and
memset, under LD_PRELOAD and under CUDA_INJECTION64_PATH."""
import collections
import os
import sys
import tempfile
import unittest
import glob

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "interpose"))
import gwtest  # noqa: E402

PROGRAM = os.environ["DRIVER_API_PROGRAM"]


class DriverApiRecording(unittest.TestCase):
    def test_counts(self):
        for mode in ("preload", "injection"):
            with self.subTest(mode=mode), tempfile.TemporaryDirectory() as d:
                r = gwtest.run([PROGRAM, "20"], gwtest.gapwatch_env(mode, d + "/"), cwd=d)
                self.assertEqual(r.returncode, 0, r.stderr)
                want = collections.Counter()
                for line in r.stdout.splitlines():
                    name, count = line.split()
                    want[name] = int(count)
                paths = glob.glob(os.path.join(d, "*.gwt"))
                self.assertEqual(len(paths), 1, r.stderr)
                events = gwtest.dump(paths[0])
                calls = [e for e in events if e["type"] == "api_call"]
                got = collections.Counter(e["kind"] for e in calls)
                for kind, count in want.items():
                    self.assertEqual(got[kind], count, "%s: %s calls (recorded: %s)" % (mode, kind, dict(got)))
                # Each one is the driver entry point the program called (nothing of the runtime's).
                names = {e["name"] for e in calls if e["kind"] in want}
                self.assertTrue(names and all(n.startswith("cu") and not n.startswith("cuda") for n in names), names)
                kernels = [e for e in events if e["type"] == "activity" and e["kind"] == "kernel"]
                self.assertEqual(len(kernels), want["launch"])
                launch_ids = {e["correlation_id"] for e in calls if e["kind"] == "launch"}
                self.assertEqual({k["correlation_id"] for k in kernels}, launch_ids)
                copies = [e for e in events if e["type"] == "activity" and e["kind"] == "memcpy"]
                self.assertEqual(len(copies), want["memcpy"] + want["memcpy_async"])
                memsets = [e for e in events if e["type"] == "activity" and e["kind"] == "memset"]
                self.assertEqual(len(memsets), want["memset"] + want["memset_async"])


if __name__ == "__main__":
    gwtest.main(__name__)
