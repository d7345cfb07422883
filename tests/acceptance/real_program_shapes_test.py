#!/usr/bin/env python3
"""gapwatch report on the shapes of small real CUDA programs (cuda_program_shapes.cpp), recorded
under LD_PRELOAD=libgapwatch.so on the simulated CUDA stack.

Each shape is one that a report once got wrong on a real GPU: a vector add reported as "3 steps,
recurring every 1 kernel"; graph launches never joined to their kernels and captured launches
counted as launches; a cudaEventQuery polling loop not seen at all; a cudaFreeHost on an idle
device counted as waiting for the device. Nothing here depends on timing: counts only, and the
poll count the program itself printed.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

PROGRAM = os.path.join(gwtest.BUILD, "bin", "cuda_program_shapes")
# The kernels' device times, as the program passes them in their first argument too.
KERNEL_DURATIONS = ("_Z9vectorAddPKfS0_Pfi=50us,_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii=100us,"
                    "_Z6step_av=50us,_Z6step_bv=50us,_Z11long_kernelv=20ms")


def record_and_report(shape):
    """Runs the shape under gapwatch; returns (the program's stdout, the report's process JSON)."""
    with tempfile.TemporaryDirectory() as workdir:
        env = gwtest.gapwatch_env("preload", workdir + "/", {"SIMCUDA_KERNEL_DURATIONS": KERNEL_DURATIONS})
        run = gwtest.run([PROGRAM, shape], env, timeout=120, cwd=workdir)
        if run.returncode != 0:
            raise AssertionError("%s %s failed (%d): %s" % (PROGRAM, shape, run.returncode, run.stderr))
        recordings = sorted(glob.glob(os.path.join(workdir, "*.gwt")))
        if len(recordings) != 1:
            raise AssertionError("expected one recording, got %s" % recordings)
        report = subprocess.run([gwtest.GAPWATCH, "report", "--json"] + recordings,
                                capture_output=True, text=True, timeout=120)
        if report.returncode != 0:
            raise AssertionError("gapwatch report --json failed (%d): %s" % (report.returncode, report.stderr))
        return run.stdout, json.loads(report.stdout)["processes"][0]


def sync_type(process, key):
    return next(s for s in process["sync_points"] if s["type"] == key)


class RealProgramShapes(unittest.TestCase):
    def test_vector_add_has_no_steps(self):
        _, p = record_and_report("vector-add")
        self.assertEqual(p["steps"]["method"], "none", p["steps"])
        self.assertEqual(p["steps"]["steps"], 0)

    def test_matrix_mul_loop_of_one_kernel_is_301_steps(self):
        _, p = record_and_report("matrix-mul")
        self.assertEqual(p["steps"]["method"], "recurring kernel sequence", p["steps"])
        self.assertEqual(p["steps"]["steps"], 301)

    def test_graph_launches_are_joined_and_captured_calls_are_not_launches(self):
        _, p = record_and_report("graph")
        launches = p["launches"]
        self.assertEqual(launches["graph_launches"], 10, launches)
        self.assertEqual(launches["launches"], 10, launches)
        self.assertEqual(launches["graph_kernels"], 30, launches)
        self.assertEqual(launches["captured_calls"], 4, launches)  # three launches and a memset
        # The report's event counts too: the three captured launches fired callbacks, ran nothing.
        self.assertEqual(p["events"]["launches"], 10, p["events"])

    def test_event_polling_loop_is_one_sync_point_with_every_poll(self):
        out, p = record_and_report("poll")
        polls = int(out.split()[1])
        self.assertGreater(polls, 100, out)  # the loop really polled while the kernel ran
        polling = sync_type(p, "query_polling")
        self.assertEqual(polling["count"], 1, polling)
        self.assertEqual(polling["polls"], polls, polling)
        self.assertGreater(polling["total_ns"], 0, polling)  # it waited for the 20 ms kernel

    def test_free_on_an_idle_device_waits_for_nothing(self):
        _, p = record_and_report("poll")
        frees = sync_type(p, "malloc_free")
        self.assertEqual(frees["count"], 1, frees)  # cudaFreeHost (cudaMallocHost does not sync)
        self.assertEqual(frees["total_ns"], 0, frees)


if __name__ == "__main__":
    gwtest.main(__name__)
