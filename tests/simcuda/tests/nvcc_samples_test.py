"""Real nvcc output runs on the simulated runtime, recorded by gapwatch.

Compiles nvcc/sample_programs.cu (programs written the way NVIDIA's CUDA samples are) with the
toolkit's nvcc and `-cudart shared`, then runs each program on the simulated stack, once plainly
and once with gapwatch injected (CUDA_INJECTION64_PATH), and checks that it ran to its end and that
the recording holds its kernels. Skipped (exit 77) where there is no nvcc. The toolkit's real
libraries are in ldconfig's cache: LD_LIBRARY_PATH puts the simulated ones first, and the test
checks with ldd that those are the ones loaded."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BUILD = os.environ.get("GAPWATCH_BUILD_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "build")
SIMLIB = os.path.join(BUILD, "simcuda", "lib")
LIB = os.path.join(BUILD, "lib", "libgapwatch.so")
GAPWATCH = os.path.join(BUILD, "bin", "gapwatch")
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvcc", "sample_programs.cu")
PROGRAMS = ["vectorAdd", "asyncAPI", "simpleStreams", "simpleMultiCopy", "simpleCallback", "simpleZeroCopy",
            "simpleCudaGraphs", "simpleHyperQ", "matrixMul"]


def find_nvcc():
    for candidate in [os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]:
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def env_for(output=None):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GAPWATCH_") and k != "GAPWATCH_BUILD_DIR" or k in ("CUDA_INJECTION64_PATH", "LD_PRELOAD"):
            env.pop(k)
    env["LD_LIBRARY_PATH"] = SIMLIB
    if output:
        env["CUDA_INJECTION64_PATH"] = LIB
        env["GAPWATCH_CUPTI_PATH"] = os.path.join(SIMLIB, "libcupti.so.13")
        env["GAPWATCH_OUTPUT"] = output
    return env


# Timeouts only bound a hang: each program runs well under a second here; nvcc takes ~10 s.
class NvccSamples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gw-nvcc-")
        cls.exe = os.path.join(cls.tmp, "sample_programs")
        out = subprocess.run([NVCC, "-cudart", "shared", "-o", cls.exe, SOURCE], capture_output=True, text=True,
                             timeout=600)
        if out.returncode != 0:
            raise AssertionError("nvcc failed: " + out.stdout + out.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_loads_the_simulated_libraries(self):
        out = subprocess.run(["ldd", self.exe], env=env_for(), capture_output=True, text=True, timeout=60)
        lines = [l for l in out.stdout.splitlines() if "libcudart" in l or "libcuda.so" in l]
        self.assertEqual(len(lines), 2, out.stdout)
        for l in lines:
            self.assertIn(os.path.realpath(SIMLIB), os.path.realpath(l.split("=>")[1].split("(")[0].strip()), l)

    def test_programs_run_to_their_end(self):
        for name in PROGRAMS:
            with self.subTest(program=name):
                out = subprocess.run([self.exe, name], env=env_for(), capture_output=True, text=True, timeout=120)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                self.assertIn("%s: done" % name, out.stdout)

    def test_programs_are_recorded_by_gapwatch(self):
        for name in PROGRAMS:
            with self.subTest(program=name):
                rec = os.path.join(self.tmp, name + ".gwt")
                out = subprocess.run([self.exe, name], env=env_for(rec), capture_output=True, text=True, timeout=120)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                self.assertIn("%s: done" % name, out.stdout)
                dump = subprocess.run([GAPWATCH, "dump", "--json", rec], capture_output=True, text=True, timeout=120)
                self.assertEqual(dump.returncode, 0, dump.stderr)
                records = [json.loads(l) for l in dump.stdout.splitlines() if l.strip()]
                kernels = [r for r in records if r.get("type") == "activity" and r.get("kind") == "kernel"]
                calls = [r for r in records if r.get("type") == "api_call"]
                self.assertTrue(kernels, "no kernel records for %s" % name)
                self.assertTrue(calls, "no API calls for %s" % name)
                if name == "simpleCudaGraphs":
                    self.assertTrue(any(r.get("graph_id") for r in kernels), "graph kernels carry a graph id")


NVCC = find_nvcc()

if __name__ == "__main__":
    if NVCC is None:
        print("nvcc not found: skipped")
        sys.exit(77)
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
