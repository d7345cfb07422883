"""The probes a recording names are the ones that recorded: with another library defining runtime
symbols ahead of gapwatch in LD_PRELOAD, the runtime calls gapwatch records through it are named;
loaded by the driver alone (CUDA_INJECTION64_PATH), the NCCL hooks, which cannot see NCCL there,
are not."""
import os
import tempfile
import unittest

import gwtest

SHIM = os.path.join(gwtest.BUILD, "lib", "libruntime_shim.so")
NCCL_LOADED_LATE = os.path.join(gwtest.BUILD, "bin", "nccl_loaded_late")
HEALTHY = os.path.join(gwtest.SCENARIOS, "healthy.json")


def gapwatch_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("gapwatch:")]


class ProbeLine(unittest.TestCase):
    def record(self, cmd, env, workdir):
        r = gwtest.run(cmd, env, cwd=workdir)
        self.assertEqual(r.returncode, 0, r.stderr)
        return gwtest.dump(os.path.join(workdir, "r.gwt")), r.stderr

    def shim_first_env(self, out, extra=None):
        env = gwtest.gapwatch_env("preload", out, extra)
        env["LD_PRELOAD"] = SHIM + ":" + gwtest.LIB
        return env

    def test_runtime_hooks_behind_another_library_are_named_when_they_record(self):
        # CUPTI held by another tool: the runtime hooks are the probe, reached through the shim.
        with tempfile.TemporaryDirectory() as d:
            env = self.shim_first_env(os.path.join(d, "r.gwt"), {"SIMCUDA_CUPTI_HELD_BY": "Nsight Systems"})
            events, stderr = self.record([gwtest.SIM, HEALTHY, "--quiet"], env, d)
            launches = sum(1 for e in events if e["type"] == "api_call" and e["kind"] == "launch")
            self.assertGreater(launches, 0)
            self.assertEqual(events[0]["probes"], ["cudart_hooks", "nccl_hooks", "python_sampler"])
            why = gapwatch_lines(stderr)[0]
            self.assertNotIn("nothing but NCCL calls", why)
            self.assertIn("host-side runtime calls only", why)
            self.assertIn("libruntime_shim.so", why)

    def test_cupti_probes_are_named_with_another_library_ahead(self):
        with tempfile.TemporaryDirectory() as d:
            events, stderr = self.record([gwtest.SIM, HEALTHY, "--quiet"], self.shim_first_env(os.path.join(d, "r.gwt")), d)
            self.assertEqual(events[0]["probes"],
                             ["cupti_runtime_callbacks", "cupti_driver_callbacks", "cupti_activity", "nccl_hooks",
                              "python_sampler"])
            self.assertGreater(sum(1 for e in events if e["type"] == "activity"), 0)
            self.assertEqual(len(gapwatch_lines(stderr)), 1, stderr)  # only where the file is

    def test_injection_alone_does_not_claim_the_nccl_hooks(self):
        with tempfile.TemporaryDirectory() as d:
            events, _ = self.record([NCCL_LOADED_LATE], gwtest.gapwatch_env("injection", os.path.join(d, "r.gwt")), d)
            self.assertEqual(events[0]["probes"], ["cupti_runtime_callbacks", "cupti_driver_callbacks", "cupti_activity", "python_sampler"])
            self.assertEqual(sum(1 for e in events if e["type"] == "nccl_call"), 0)

    def test_preload_names_the_nccl_hooks(self):
        with tempfile.TemporaryDirectory() as d:
            events, _ = self.record([gwtest.SIM, HEALTHY, "--quiet"], gwtest.gapwatch_env("preload", os.path.join(d, "r.gwt")), d)
            self.assertIn("nccl_hooks", events[0]["probes"])


if __name__ == "__main__":
    gwtest.main(__name__)
