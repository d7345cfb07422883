"""A program killed while it waits (SIGKILL, where no handler runs, or SIGTERM with its default
action) is reported as the hang it was: the call it was inside, for how long, and the kernel that
never finished, and the analysed window runs to the recording's real end, the recorder's last
heartbeat, not to the last work that finished."""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

import gwtest

HANGS_IN_SYNC = os.path.join(gwtest.BUILD, "bin", "hangs_in_sync")


def dump_so_far(path):
    """The events of a recording still being written (read up to its last whole frame)."""
    r = subprocess.run([gwtest.GAPWATCH, "dump", "--json", path], capture_output=True, text=True, timeout=120)
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def report(path, *args):
    r = subprocess.run([gwtest.GAPWATCH, "report", *args, path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("gapwatch report failed: " + r.stderr)
    return r.stdout


class Hang(unittest.TestCase):
    def kill_while_waiting(self, wait, sig, workdir):
        """Runs the program until its recording shows it waiting in `wait`, then kills it with
        `sig`. Returns the recording and how long the call had been in progress at the last
        heartbeat read before the kill."""
        out = os.path.join(workdir, "r.gwt")
        p = subprocess.Popen([HANGS_IN_SYNC, wait], env=gwtest.gapwatch_env("preload", out), cwd=workdir,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # Timing: polls until the in-progress snapshot is in the file, however slow the machine;
            # the program waits an hour, and the deadline only bounds a broken run.
            seen = None
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and p.poll() is None:
                beats = [e for e in dump_so_far(out) if e["type"] == "heartbeat" and e["calls"]]
                if beats:
                    seen = beats[-1]
                    if seen["time_ns"] - seen["calls"][0]["start_ns"] >= 500_000_000:
                        break
                time.sleep(0.05)
            self.assertIsNone(p.poll(), "the program ended on its own")
            self.assertIsNotNone(seen, "no heartbeat showed the call in progress")
        finally:
            p.send_signal(sig)
            p.communicate(timeout=120)
        self.assertEqual(p.returncode, -sig)  # gapwatch changed nothing about how it died
        call = seen["calls"][0]
        return out, call, seen["time_ns"] - call["start_ns"]

    def check_hang_report(self, out, api, observed_ns):
        text = report(out)
        self.assertIn("hung in %s for" % api.lower(), text.lower())
        self.assertIn("waiting for kernel _Z11endlessworkv (launched at +", text)
        self.assertIn("never finished", text)
        process = json.loads(report(out, "--json"))["processes"][0]
        self.assertEqual(process["ended"], "no_goodbye")
        # The verdict leads with the hang: it is what the user came for.
        self.assertTrue(process["verdict"].lower().startswith("hung in %s for" % api.lower()), process["verdict"])
        note = process["notes"][0]
        self.assertEqual(note["id"], "hang")
        self.assertTrue(note["title"].startswith("hung in %s for" % api), note["title"])
        self.assertGreaterEqual(note["numbers"]["in_call_ns"], observed_ns)
        self.assertEqual(note["numbers"]["unfinished_kernels"], 1)
        # The window runs to the end of the recording, not to the short kernel's end 20 us in.
        self.assertGreaterEqual(process["window_ns"], observed_ns)
        self.assertGreaterEqual(process["recorded_ns"], observed_ns)

    def test_sigkill_in_device_synchronize_names_the_call_and_the_unfinished_kernel(self):
        with tempfile.TemporaryDirectory() as d:
            out, call, observed = self.kill_while_waiting("sync", signal.SIGKILL, d)
            self.assertEqual(call["api_name"], "cudaDeviceSynchronize")
            self.check_hang_report(out, "cudaDeviceSynchronize", observed)

    def test_sigkill_in_memcpy_names_the_call_and_the_unfinished_kernel(self):
        with tempfile.TemporaryDirectory() as d:
            out, call, observed = self.kill_while_waiting("memcpy", signal.SIGKILL, d)
            self.assertEqual(call["api_name"], "cudaMemcpy")
            self.check_hang_report(out, "cudaMemcpy", observed)

    def test_sigkill_in_a_polling_loop_names_the_loop_as_the_call_in_progress(self):
        # A loop of cudaStreamQuery is one sync point (each poll returns at once): the heartbeat
        # shows it in progress from its first poll, so a program hung polling is reported too.
        with tempfile.TemporaryDirectory() as d:
            out, call, observed = self.kill_while_waiting("poll", signal.SIGKILL, d)
            self.assertEqual(call["api_name"], "cudaStreamQuery")
            self.check_hang_report(out, "cudaStreamQuery", observed)

    def test_sigterm_with_its_default_action_is_reported_the_same_way(self):
        with tempfile.TemporaryDirectory() as d:
            out, _, observed = self.kill_while_waiting("sync", signal.SIGTERM, d)
            self.check_hang_report(out, "cudaDeviceSynchronize", observed)

    def test_a_program_that_ends_normally_shows_no_hang(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            r = gwtest.run([os.path.join(gwtest.BUILD, "bin", "exits_with"), "0"],
                           gwtest.gapwatch_env("preload", out), cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            process = json.loads(report(out, "--json"))["processes"][0]
            self.assertNotIn("hang", [n["id"] for n in process["notes"]])


if __name__ == "__main__":
    gwtest.main(__name__)
