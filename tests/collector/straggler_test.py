"""A straggler only on evidence: `gapwatch profile` of two-rank jobs on the simulated CUDA stack.

- straggler-equal: two ranks with the same work, whose arrival at each step's first collective is
  chance (20 ms +- 10 ms of host time each): in each of 10 runs the report names no straggler, and
  each rank's nccl finding, when it has one, says that no rank stands out.
- straggler-slow: the same job with rank 1's host work 2x as long: in each of 10 runs the report
  names rank 1, with the test's numbers in the finding.
- short profiles (the norm: 3-20 steps): 4 ranks, 12 steps, rank 2's host work 3x as long is named
  in each of 5 runs; with equal work (host_scale 1) none of 5 runs names a rank.

The host time is real time, so a busy machine adds its own lateness: CI once delayed one rank by
about 0.4 ms a step for a whole run, which at 3 ms +- 1 ms steps made that rank a true straggler
(t = 4.0; the report was right, the test's premise was not). At 20 ms +- 10 ms the same delay is
a t of about 0.3, so "equal work" stays equal on a loaded machine.

Each run draws other jitter (the scenario's seed is the run's number), so the 10 runs are 10 trials
of the decision, not one trial repeated. The decision's level (0.001, docs/analysis.md "Across
ranks") is what bounds the chance that an equal run names a rank: at most 1 % over the 10 runs.
Nothing here measures time; timeouts only bound a hang."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

HANG = 300  # seconds: bounds a run that hangs, never a measurement
RUNS = 10
HERE = os.path.dirname(os.path.abspath(__file__))


class StragglerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        runtime = os.path.join(self.dir, "runtime")
        os.mkdir(runtime, 0o700)
        self.env = gwtest.gapwatch_env(None, extra={"XDG_RUNTIME_DIR": runtime})

    def tearDown(self):
        self.tmp.cleanup()

    def reports(self, name, change=None, runs=RUNS):
        """The JSON report of each of `runs` runs of scenario `name` (changed by `change`, when
        given), run i with seed i + 1."""
        with open(os.path.join(HERE, "scenarios", name + ".json")) as f:
            scenario = json.load(f)
        if change:
            change(scenario)
        for i in range(runs):
            scenario["seed"] = i + 1
            path = os.path.join(self.dir, "%s-%d.json" % (name, i))
            with open(path, "w") as f:
                json.dump(scenario, f)
            out = os.path.join(self.dir, "%s-%d" % (name, i))
            r = subprocess.run([gwtest.GAPWATCH, "profile", "--json", "-o", out, "--", gwtest.SIM, path, "--quiet"],
                               env=self.env, cwd=self.dir, capture_output=True, text=True, timeout=HANG)
            self.assertEqual(r.returncode, 0, r.stderr)
            yield i, json.loads(r.stdout)

    def test_equal_work_names_no_straggler(self):
        for i, report in self.reports("straggler-equal"):
            with self.subTest(run=i):
                test = report["straggler_test"]
                self.assertIsNotNone(test, "no collective shared by the ranks")
                summary = json.dumps(test)
                self.assertEqual([f["id"] for f in report["findings"]], [], summary)
                self.assertFalse(test["named"], summary)
                # The ranks did wait for each other: without the test, the one waited for a little
                # longer would have been named.
                self.assertTrue(test["enough_wait"], summary)
                for p in report["processes"]:
                    for f in p["findings"]:
                        if f["id"] != "nccl":
                            continue
                        said = [e["value"] for e in f["evidence"] if e["name"] == "the ranks wait for"]
                        self.assertEqual(len(said), 1, f["evidence"])
                        self.assertTrue(said[0].startswith("no rank stands out"), said[0])
                        self.assertNotIn("waited_for_rank", f["numbers"])

    def test_one_slow_rank_is_named(self):
        for i, report in self.reports("straggler-slow"):
            with self.subTest(run=i):
                summary = json.dumps(report["straggler_test"])
                stragglers = [f for f in report["findings"] if f["id"] == "straggler"]
                self.assertEqual(len(stragglers), 1, summary)
                f = stragglers[0]
                self.assertEqual(f["numbers"]["rank"], 1, summary)
                self.assertEqual(f["title"], "waiting for rank 1 in collectives")
                self.assertLess(f["numbers"]["p_value"], report["thresholds"]["straggler_test_level"])
                self.assertGreater(f["numbers"]["lateness_mean_ns"], 0)
                self.assertTrue(report["straggler_test"]["named"], summary)


    @staticmethod
    def short_profile(slow_rank_scale):
        """A 4-rank job profiled for 12 steps (24 collectives a rank waited in, at most), rank 2's
        batches prepared `slow_rank_scale` x slower: a profile of the usual length, far under the
        40 collectives the test once needed."""
        def change(scenario):
            scenario["processes"] = 4
            scenario["steps"]["count"] = 12
            scenario["rank_overrides"] = [{"rank": 2, "host_scale": slow_rank_scale}]
        return change

    def test_a_short_profile_names_the_rank_that_prepares_its_batches_3x_slower(self):
        for i, report in self.reports("straggler-slow", self.short_profile(3.0), runs=5):
            with self.subTest(run=i):
                summary = json.dumps(report["straggler_test"])
                stragglers = [f for f in report["findings"] if f["id"] == "straggler"]
                self.assertEqual(len(stragglers), 1, summary)
                self.assertEqual(stragglers[0]["numbers"]["rank"], 2, summary)

    def test_a_short_profile_of_equal_work_names_no_straggler(self):
        for i, report in self.reports("straggler-slow", self.short_profile(1.0), runs=5):
            with self.subTest(run=i):
                self.assertEqual([f["id"] for f in report["findings"] if f["id"] == "straggler"], [],
                                 json.dumps(report["straggler_test"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
