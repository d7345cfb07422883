"""The Python API in the build tree (`import gapwatch` from <build>/python): analyze() gives the
document `gapwatch report --json` prints, field for field, for a recording made on the simulated
stack and for PyTorch profiler traces; the tables list every gap, sync point, kernel and step, and
add up to the report's numbers; bad paths raise one line.

Run with an interpreter that has pandas (`--pandas`: the tables are DataFrames, and this fails if
pandas cannot be imported) or without (the tables are lists of dicts). With `--pandas` and no
tooling venv, ctest's runner (run_with_tooling.sh) skips it instead.
"""
import collections
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "interpose"))
import gwtest  # noqa: E402

sys.path.insert(0, os.path.join(gwtest.BUILD, "python"))
import gapwatch  # noqa: E402

WANT_PANDAS = "--pandas" in sys.argv
if WANT_PANDAS:
    sys.argv.remove("--pandas")
    import pandas  # noqa: F401  (must be there: the DataFrame side is what this run checks)

KINETO = os.path.join(gwtest.REPO, "tests", "data", "kineto")
TRACES = [os.path.join(KINETO, name) for name in ("b200_train.json.gz", "triton_driver_launches.json.gz")]
SCRATCH = tempfile.mkdtemp(prefix="gapwatch-python-api-")
atexit.register(shutil.rmtree, SCRATCH, True)


def record(scenario):
    out = os.path.join(SCRATCH, scenario + ".gwt")
    if not os.path.exists(out):
        env = gwtest.gapwatch_env("preload", output=out)
        run = gwtest.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, scenario + ".json"), "--quiet"], env)
        if run.returncode != 0 or not os.path.exists(out):
            raise AssertionError("recording %s failed: %s" % (scenario, run.stderr.strip()))
    return out


def report_json(paths, *options):
    run = subprocess.run([gwtest.GAPWATCH, "report", "--json", *options, *paths], capture_output=True, text=True,
                         timeout=300)
    if run.returncode != 0:
        raise AssertionError("gapwatch report failed: " + run.stderr.strip())
    return json.loads(run.stdout)


def rows(table):
    """A table as a list of dicts, whichever form it came in."""
    if isinstance(table, list):
        return table
    return table.to_dict("records")


class AnalyzeEqualsReportJson(unittest.TestCase):
    def check_same(self, paths, *cli_options, **api_options):
        ours = gapwatch.analyze(paths, **api_options)
        theirs = report_json(paths, *cli_options)
        self.assertEqual(ours.to_dict(), theirs)
        self.assertEqual(json.loads(ours.json), theirs)
        return ours

    def test_a_recording_gives_the_report_json_document(self):
        report = self.check_same([record("data-bound")])
        process = report.processes[0]
        self.assertGreater(process.idle_ns, 0)
        self.assertEqual(process.idle_by_cause.host_cpu, report.to_dict()["processes"][0]["idle_by_cause"]["host_cpu"])
        self.assertGreater(process.idle_by_cause.host_cpu, process.idle_ns / 2)

    def test_options_are_the_command_lines(self):
        self.check_same([record("sync-bound")], "--top", "3", "--min-gap", "100us", "--launch-threshold", "10us",
                        top_n=3, min_gap_ns=100_000, launch_threshold_ns=10_000)

    def test_two_recordings_are_one_run(self):
        self.check_same([record("data-bound"), record("sync-bound")])

    def test_kineto_traces_give_the_report_json_document(self):
        for trace in TRACES:
            with self.subTest(trace=os.path.basename(trace)):
                self.check_same([trace])

    def test_hta_view(self):
        self.check_same([TRACES[0]], "--hta", hta=True)

    def test_a_directory_stands_for_its_recordings(self):
        directory = os.path.join(SCRATCH, "run")
        os.makedirs(directory, exist_ok=True)
        if not os.path.exists(os.path.join(directory, "rank0.gwt")):
            os.link(record("launch-bound"), os.path.join(directory, "rank0.gwt"))
        report = gapwatch.analyze(directory)
        self.assertEqual(report.files, (os.path.join(directory, "rank0.gwt"),))
        self.assertEqual(report.to_dict(), report_json([directory]))


class ReportObjects(unittest.TestCase):
    def test_records_are_read_only_and_name_their_fields(self):
        report = gapwatch.analyze(record("data-bound"))
        process = report.processes[0]
        with self.assertRaises(AttributeError):
            process.idle_ns = 0
        with self.assertRaises(AttributeError) as caught:
            process.no_such_field
        self.assertIn("idle_ns", str(caught.exception))
        self.assertIsInstance(process.devices, tuple)
        self.assertIsInstance(process.devices[0].longest_gaps[0].start_ns, int)
        self.assertIsInstance(process.idle_fraction, float)
        self.assertTrue(repr(process).startswith("Process("))
        # to_dict() is a copy: changing it changes nothing in the report.
        document = report.to_dict()
        document["processes"][0]["idle_ns"] = -1
        self.assertNotEqual(report.processes[0].idle_ns, -1)


class BadInput(unittest.TestCase):
    def test_a_missing_file_raises_one_line_naming_it(self):
        missing = os.path.join(SCRATCH, "no-such-run.gwt")
        with self.assertRaises(gapwatch.GapwatchError) as caught:
            gapwatch.analyze(missing)
        message = str(caught.exception)
        self.assertIn(missing, message)
        self.assertNotIn("\n", message)
        self.assertIsInstance(caught.exception, ValueError)

    def test_a_file_that_is_not_a_recording_raises(self):
        text = os.path.join(SCRATCH, "notes.txt")
        with open(text, "w") as f:
            f.write("not a recording\n")
        with self.assertRaises(gapwatch.GapwatchError) as caught:
            gapwatch.analyze([text])
        self.assertIn(text, str(caught.exception))

    def test_an_empty_list_raises(self):
        with self.assertRaises(gapwatch.GapwatchError):
            gapwatch.analyze([])

    def test_a_truncated_recording_is_reported_with_a_warning(self):
        whole = record("data-bound")
        cut = os.path.join(SCRATCH, "cut.gwt")
        with open(whole, "rb") as f, open(cut, "wb") as g:
            data = f.read()
            g.write(data[: len(data) * 2 // 3])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = gapwatch.analyze(cut)
        self.assertEqual(report.inputs[0].status, "truncated")
        self.assertTrue(any("note" in str(w.message) for w in caught), [str(w.message) for w in caught])
        self.assertEqual(len(rows(report.gaps())), report.processes[0].devices[0].gap_count)


class Tables(unittest.TestCase):
    """Every row, for a recording and for traces; the report's sums and top lists are in them."""

    def inputs(self):
        return [[record("data-bound")], [record("sync-bound")], [record("nccl-bound")]] + [[t] for t in TRACES]

    def test_tables_are_dataframes_with_pandas_and_lists_without(self):
        report = gapwatch.analyze(record("data-bound"))
        for name in ("gaps", "sync_points", "kernels", "steps"):
            table = getattr(report, name)()
            as_list = getattr(report, name)(frame=False)
            self.assertIsInstance(as_list, list)
            if WANT_PANDAS:
                self.assertEqual(type(table).__name__, "DataFrame")
                self.assertEqual(list(table.columns), list(as_list[0].keys()))
                self.assertEqual(rows(table), as_list)
            else:
                self.assertEqual(table, as_list)

    def test_gaps_add_up_to_the_report(self):
        for paths in self.inputs():
            report = gapwatch.analyze(paths)
            gaps = rows(report.gaps())
            with self.subTest(paths=paths):
                for p, process in enumerate(report.processes):
                    for device in process.devices:
                        mine = [g for g in gaps if g["process"] == p and g["device"] == device.device]
                        self.assertEqual(len(mine), device.gap_count)
                        self.assertEqual(sum(g["ns"] for g in mine), device.idle_ns)
                        for cause, ns in device.idle_by_cause.to_dict().items():
                            self.assertEqual(sum(g[cause + "_ns"] for g in mine), ns, cause)
                        for part, ns in device.host_cpu_by_part.to_dict().items():
                            self.assertEqual(sum(g["host_" + part + "_ns"] for g in mine), ns, part)
                        self.assertEqual(sum(g["after_sync"] for g in mine), device.after_sync.gaps)
                        by_start = {(g["start_ns"], g["end_ns"]): g for g in mine}
                        for longest in device.longest_gaps:
                            row = by_start[(longest.start_ns, longest.end_ns)]
                            self.assertEqual({c: row[c + "_ns"] for c in longest.by_cause.keys()},
                                             longest.by_cause.to_dict())
                            self.assertEqual(row["after_correlation_id"], longest.after.correlation_id)
                            if longest.after.kind == "kernel":
                                self.assertEqual(row["after"], longest.after.name)
                            else:
                                self.assertTrue(longest.after.name.startswith(row["after"]), longest.after.name)
                        self.assertTrue(all(g["rank"] == process.rank for g in mine))

    def test_kernels_add_up_to_the_kernel_table(self):
        for paths in self.inputs():
            report = gapwatch.analyze(paths)
            kernels = rows(report.kernels())
            with self.subTest(paths=paths):
                for p, process in enumerate(report.processes):
                    mine = [k for k in kernels if k["process"] == p]
                    self.assertEqual(len(mine), process.kernels.kernels)
                    self.assertEqual(len({k["name"] for k in mine}), process.kernels.distinct)
                    self.assertEqual(sum(k["ns"] for k in mine), process.kernels.total_ns)
                    by_name = collections.defaultdict(list)
                    for k in mine:
                        by_name[k["name"]].append(k["ns"])
                    for stats in process.kernels.top_by_time:
                        runs = by_name[stats.name]
                        self.assertEqual((len(runs), sum(runs), min(runs), max(runs)),
                                         (stats.count, stats.total_ns, stats.min_ns, stats.max_ns), stats.name)

    def test_sync_points_count_as_the_report_counts_them(self):
        for paths in self.inputs():
            report = gapwatch.analyze(paths)
            syncs = rows(report.sync_points())
            with self.subTest(paths=paths):
                for p, process in enumerate(report.processes):
                    counts = collections.Counter(s["type"] for s in syncs if s["process"] == p)
                    for kind in process.sync_points:
                        if kind.type != "query_polling":
                            self.assertEqual(counts.get(kind.type, 0), kind.count, kind.type)
        self.assertTrue(any(kind.count for kind in gapwatch.analyze(record("sync-bound")).processes[0].sync_points))

    def test_steps_are_the_steps_the_report_counts(self):
        for paths in self.inputs():
            report = gapwatch.analyze(paths)
            steps = rows(report.steps())
            with self.subTest(paths=paths):
                for p, process in enumerate(report.processes):
                    mine = [s for s in steps if s["process"] == p]
                    # The report also counts a last step whose end the recording does not show.
                    self.assertIn(process.steps.steps - len(mine), (0, 1))
                    self.assertEqual([s["step"] for s in mine], list(range(1, len(mine) + 1)))
                    if mine:
                        durations = sorted(s["ns"] for s in mine)
                        # The report's median comes from a sketch within 2 %.
                        median = durations[(len(durations) - 1) // 2]
                        self.assertAlmostEqual(process.steps.median_ns / median, 1, delta=0.02)
                        self.assertEqual(all(s["detected"] for s in mine), process.steps.method != "markers")


if __name__ == "__main__":
    gwtest.main(__name__)
