"""Which libcupti gapwatch loads when nothing names one: the one beside the CUDA runtime the process
loaded (on the simulated stack, build/simcuda/lib's, never the toolkit's real one that the default
locations hold on these machines), and every message about a CUPTI that fails names the file it
loaded and how it was chosen."""
import os
import re
import tempfile
import unittest

import gwtest


def env_without_cupti_path(out, extra=None):
    env = gwtest.gapwatch_env("preload", out, extra)
    for k in ("GAPWATCH_CUPTI_PATH", "CUDA_HOME", "CUDA_PATH"):
        env.pop(k, None)
    return env


class CuptiLookup(unittest.TestCase):
    def run_healthy(self, env, d):
        r = gwtest.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, "healthy.json"), "--quiet"], env, timeout=300, cwd=d)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stderr

    def test_the_cupti_beside_the_process_runtime_is_used_without_GAPWATCH_CUPTI_PATH(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            stderr = self.run_healthy(env_without_cupti_path(out, {"GAPWATCH_LOG": "info"}), d)
            hello = gwtest.dump(out)[0]
            self.assertIn("cupti_activity", hello["probes"], hello.get("cupti_unavailable"))
            sim_cupti = os.path.realpath(gwtest.CUPTI)
            self.assertRegex(stderr, r"gapwatch: CUPTI \d+: %s \(beside the process's libcudart\.so\.13\)" %
                             re.escape(sim_cupti))

    def test_a_failing_subscribe_names_the_libcupti_and_how_it_was_chosen(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            stderr = self.run_healthy(env_without_cupti_path(out, {"SIMCUDA_CUPTI_SUBSCRIBE_FAILS": "1"}), d)
            expected = "cuptiSubscribe failed: CUPTI_ERROR_UNKNOWN (libcupti %s, beside the process's libcudart.so.13)" % \
                os.path.realpath(gwtest.CUPTI)
            self.assertIn(expected, gwtest.dump(out)[0]["cupti_unavailable"])
            self.assertIn(expected, stderr)

    def test_GAPWATCH_CUPTI_PATH_is_named_as_the_choice(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            stderr = self.run_healthy(gwtest.gapwatch_env("preload", out, {"SIMCUDA_CUPTI_SUBSCRIBE_FAILS": "1"}), d)
            self.assertIn("(libcupti %s, GAPWATCH_CUPTI_PATH)" % os.path.realpath(gwtest.CUPTI), stderr)

    def test_a_missing_libcupti_names_what_was_tried(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            missing = os.path.join(d, "nowhere", "libcupti.so.13")
            self.run_healthy(gwtest.gapwatch_env("preload", out, {"GAPWATCH_CUPTI_PATH": missing}), d)
            why = gwtest.dump(out)[0]["cupti_unavailable"]
            self.assertIn("libcupti could not be loaded: %s (GAPWATCH_CUPTI_PATH): " % missing, why)
            self.assertIn("No such file or directory", why)


if __name__ == "__main__":
    gwtest.main(__name__)
