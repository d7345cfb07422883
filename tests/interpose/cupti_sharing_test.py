"""A profiler of the program's own (torch.profiler's Kineto, in both of its ways of using CUPTI:
kineto_like_client.cpp) while gapwatch records: the user's profile is complete or the user is told
why not, and gapwatch's recording has every record or marks the span it could not see.

Under LD_PRELOAD gapwatch stands in front of libcupti and shares it (cupti_sharing.h): both get
every kernel, each in its own clock. Through CUDA_INJECTION64_PATH alone it cannot: the current
Kineto takes the process-wide activity API (gapwatch detects it, warns and marks the span blind),
and the older one is refused a subscription and traces CPU only (gapwatch warned at start)."""
import json
import os
import re
import subprocess
import tempfile
import unittest

import gwtest

CLIENT = os.path.join(gwtest.BUILD, "bin", "kineto_like_client")
BEFORE, DURING, AFTER = 5, 10, 5
KERNEL_NS = 2_000_000


def run(flavour, mode, workdir):
    out = os.path.join(workdir, "r.gwt")
    r = gwtest.run([CLIENT, flavour], gwtest.gapwatch_env(mode, out), cwd=workdir)
    if r.returncode != 0:
        raise AssertionError("the program failed (%d): %s" % (r.returncode, r.stderr))
    profile = dict(kv.split("=") for kv in re.search(r"^profile (.*)$", r.stdout, re.M).group(1).split())
    session = dict(kv.split("=") for kv in re.search(r"^session (.*)$", r.stdout, re.M).group(1).split())
    return {k: int(v) for k, v in profile.items()}, {k: int(v) for k, v in session.items()}, out, r.stderr


def kernels(out):
    return [e for e in gwtest.dump(out) if e["type"] == "activity" and e["kind"] == "kernel"]


def report(out):
    r = subprocess.run([gwtest.GAPWATCH, "report", "--json", out], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("gapwatch report failed: " + r.stderr)
    return json.loads(r.stdout)


def spans(out):
    return report(out)["processes"][0]["activity_api_spans"]


class SharedUnderPreload(unittest.TestCase):
    def check_both_complete(self, flavour):
        with tempfile.TemporaryDirectory() as d:
            profile, session, out, stderr = run(flavour, "preload", d)
            # The user's profile: every kernel of its session, in its own (TSC) clock.
            self.assertEqual(profile["gpu"], 1, stderr)
            self.assertEqual(profile["kernels"], DURING, stderr)
            self.assertEqual(profile["right_length"], DURING)
            self.assertEqual(profile["inside"], DURING)
            self.assertEqual(profile["unknown_buffers"], 0)
            self.assertNotIn("failed", stderr)
            # gapwatch's: every kernel of the run, in CLOCK_MONOTONIC, the session's where it was.
            ks = kernels(out)
            self.assertEqual(len(ks), BEFORE + DURING + AFTER)
            for k in ks:
                self.assertAlmostEqual(k["end_ns"] - k["start_ns"], KERNEL_NS, delta=2000)
            in_session = [k for k in ks if session["start"] <= k["start_ns"] and k["end_ns"] <= session["end"]]
            self.assertEqual(len(in_session), DURING)
            shared = spans(out)
            self.assertEqual([s["state"] for s in shared], ["shared"])
            self.assertFalse(shared[0]["open"])
            return profile

    def test_current_kineto_and_gapwatch_both_get_every_record(self):
        self.check_both_complete("current")

    def test_legacy_kineto_gets_a_subscription_of_its_own(self):
        profile = self.check_both_complete("legacy")
        self.assertEqual(profile["launch_callbacks"], DURING)


class NoOtherClient(unittest.TestCase):
    def test_a_job_that_waits_for_every_kernel_is_never_called_blind(self):
        # The same launches and waits, 40 ms apart and with pauses, with nobody taking CUPTI: the
        # detection must not mistake a quiet device for a stolen activity API.
        for mode in ("injection", "preload"):
            with tempfile.TemporaryDirectory() as d:
                _, _, out, stderr = run("none", mode, d)
                self.assertNotIn("stopped arriving", stderr, mode)
                self.assertEqual(spans(out), [], mode)
                self.assertEqual(len(kernels(out)), BEFORE + DURING + AFTER, mode)


class NotSharedUnderInjectionAlone(unittest.TestCase):
    def test_current_kineto_takes_the_activity_api_and_gapwatch_marks_the_span_blind(self):
        with tempfile.TemporaryDirectory() as d:
            profile, session, out, stderr = run("current", "injection", d)
            # The user's profiler works: gapwatch does not fight it for CUPTI.
            self.assertEqual(profile["kernels"], DURING, stderr)
            self.assertEqual(profile["right_length"], DURING)
            # gapwatch said so, named itself and how to share or step aside.
            self.assertIn("gapwatch: device records stopped arriving", stderr)
            self.assertIn("LD_PRELOAD", stderr)
            self.assertIn("GAPWATCH_DISABLE=1", stderr)
            blind = spans(out)
            self.assertEqual([s["state"] for s in blind], ["blind"])
            # The span begins at the first kernel gapwatch missed, in the session, and is open (the
            # other client never gave the activity API back).
            self.assertTrue(blind[0]["open"])
            self.assertGreaterEqual(blind[0]["start_ns"], session["start"])
            self.assertLessEqual(blind[0]["start_ns"], session["end"])
            ks = kernels(out)
            self.assertGreaterEqual(len(ks), BEFORE)
            for k in ks:  # what it has is right: nothing in another client's clock slipped in
                self.assertAlmostEqual(k["end_ns"] - k["start_ns"], KERNEL_NS, delta=2000)
            text = subprocess.run([gwtest.GAPWATCH, "report", out], capture_output=True, text=True, timeout=120).stdout
            self.assertIn("CUPTI blind", text)

    def test_legacy_kineto_is_refused_and_gapwatch_has_said_why(self):
        with tempfile.TemporaryDirectory() as d:
            profile, _, out, stderr = run("legacy", "injection", d)
            self.assertEqual(profile["gpu"], 0)
            self.assertIn("CUDA profiler activities will be missing", stderr)
            # The user is told who holds CUPTI and what to do about it.
            self.assertIn("gapwatch: this process loaded libcupti before gapwatch", stderr)
            self.assertIn("LD_PRELOAD", stderr)
            self.assertIn("GAPWATCH_DISABLE=1", stderr)
            self.assertEqual(len(kernels(out)), BEFORE + DURING + AFTER)
            self.assertEqual(spans(out), [])


REENTRANT = os.path.join(gwtest.BUILD, "bin", "cupti_reentrant_client")


class ClientCallingBack(unittest.TestCase):
    def test_client_calling_cupti_from_its_callbacks(self):
        """Issue 21, item 9: the other client's buffer callbacks may call into CUPTI (a flush,
        reading records) while CUPTI's delivery waits to copy records for it: no deadlock. The
        program's alarm (exit status 3) and the timeout bound a hang; nothing here is timed."""
        with tempfile.TemporaryDirectory() as d:
            r = gwtest.run([REENTRANT, "60"], gwtest.gapwatch_env("preload", os.path.join(d, "r.gwt")), cwd=d,
                           timeout=180)
            self.assertNotIn("deadlock", r.stderr)
            self.assertEqual(r.returncode, 0, r.stderr)
            m = re.search(r"^reentrant rounds=(\d+) records=(\d+) buffers=(\d+)$", r.stdout, re.M)
            self.assertIsNotNone(m, r.stdout + r.stderr)
            self.assertGreater(int(m.group(2)), 0, "the client got no record: " + r.stdout)
            self.assertGreater(len(kernels(os.path.join(d, "r.gwt"))), 0)


if __name__ == "__main__":
    gwtest.main(__name__)
