"""examples/gapwatch_runs.ipynb cannot rot: it is valid nbformat 4 with its outputs cleared, and
its code cells, run in order in one namespace (as Jupyter would, without Jupyter), work on two runs
recorded here with `gapwatch profile` on the simulated stack: a data-bound one and a healthy one.

Run by the tooling venv's Python (pandas, matplotlib; tests/python/run_with_tooling.sh), with the
build tree's package (<build>/python).
"""
import json
import shutil
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "interpose"))
import gwtest  # noqa: E402

sys.path.insert(0, os.path.join(gwtest.BUILD, "python"))
NOTEBOOK = os.path.join(gwtest.REPO, "examples", "gapwatch_runs.ipynb")


def profile(scenario, directory):
    env = gwtest.gapwatch_env(None)
    run = gwtest.run([gwtest.GAPWATCH, "profile", "-o", directory, "--", gwtest.SIM,
                      os.path.join(gwtest.SCENARIOS, scenario + ".json"), "--quiet"], env)
    if run.returncode != 0:
        raise AssertionError("gapwatch profile of %s failed: %s" % (scenario, run.stderr.strip()))


class ExampleNotebook(unittest.TestCase):
    def setUp(self):
        with open(NOTEBOOK) as f:
            self.notebook = json.load(f)

    def test_is_nbformat_4_with_outputs_cleared(self):
        self.assertEqual(self.notebook["nbformat"], 4)
        for cell in self.notebook["cells"]:
            self.assertIn(cell["cell_type"], ("markdown", "code"))
            self.assertIsInstance(cell["source"], list)
            if cell["cell_type"] == "code":
                self.assertEqual(cell["outputs"], [])
                self.assertIsNone(cell["execution_count"])

    def run_cells(self):
        """Records the two runs, runs the notebook's code cells in order, checks what the workflow
        found but the healthy run's findings (timing, left to the caller), and returns the namespace."""
        scratch = tempfile.mkdtemp(prefix="gapwatch-notebook-")
        self.addCleanup(shutil.rmtree, scratch, True)
        profile("data-bound", os.path.join(scratch, "before"))
        profile("healthy", os.path.join(scratch, "after"))
        os.environ["GAPWATCH_NOTEBOOK_BEFORE"] = os.path.join(scratch, "before")
        os.environ["GAPWATCH_NOTEBOOK_AFTER"] = os.path.join(scratch, "after")
        namespace = {"__name__": "__main__"}
        for number, cell in enumerate(self.notebook["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            try:
                exec(compile(source, "%s cell %d" % (os.path.basename(NOTEBOOK), number), "exec"), namespace)
            except Exception as error:
                raise AssertionError("cell %d failed: %r\n%s" % (number, error, source)) from error
        # What the workflow found: the data-bound run idles on the host per step, the healthy one far less.
        comparison = namespace["comparison"]
        self.assertGreater(comparison.loc["host_cpu ms/step", "before"], comparison.loc["host_cpu ms/step", "after"])
        self.assertGreater(comparison.loc["steps", "before"], 0)
        self.assertEqual(namespace["before"].processes[0].findings[0].cause, "host_cpu")
        per_step = namespace["per_step"]
        self.assertTrue(0 < len(per_step) <= comparison.loc["steps", "before"])
        self.assertEqual(list(per_step.columns), namespace["CAUSES"])
        return namespace

    def test_code_cells_run_in_order_on_two_recorded_runs(self):
        import matplotlib
        matplotlib.use("Agg")  # plt.show() draws nothing, but every plot is still made
        # The healthy run has no finding only while the simulated host keeps ahead of its GPU: on a
        # machine loaded past its cores it can fall behind and idle (CI saw host_unknown). As the
        # scenario tests do (check_truth.py), such a timing expectation is tried up to 3 times, and
        # a skip says so when every try missed it; everything else is asserted on every try.
        for attempt in range(1, 4):
            namespace = self.run_cells()
            if namespace["findings"]["after"] == []:
                break
            print("attempt %d: the healthy run had findings %s (a loaded machine)" %
                  (attempt, namespace["findings"]["after"]))
        else:
            self.skipTest("the healthy run had findings on 3 tries: the machine is too loaded to time it")


if __name__ == "__main__":
    gwtest.main(__name__)
