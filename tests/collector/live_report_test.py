"""The collector's live analysis: what it reports of a run equals `gapwatch report` of the recordings
it wrote, process by process and for the run; and a collector killed mid-run costs the job nothing.

Timeouts only bound a hang; nothing here asserts how fast anything is."""
import collections
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interpose"))
import gwtest  # noqa: E402
from collector_test import HANG, Collector, type_counts  # noqa: E402
from collector_stream_test import batches_in  # noqa: E402
from recording_matches_truth_test import DEVICE_KINDS, NCCL_OPS, RECORDED_KINDS, rows  # noqa: E402

EIGHT_RANKS = os.path.join(HERE, "scenarios", "nccl-8-ranks.json")
STEADY = os.path.join(gwtest.BUILD, "bin", "steady_launcher")
SLOW_RANK = 5  # the scenario's rank_overrides


def report(args, cwd):
    r = subprocess.run([gwtest.GAPWATCH, "report"] + args, cwd=cwd, capture_output=True, timeout=HANG)
    assert r.returncode == 0, r.stderr
    return r.stdout


def rank_of(path):
    return int(os.path.basename(path).split("-rank")[1].split(".")[0])


class LiveReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_eight_ranks_live_reports_equal_offline_and_name_the_slow_rank(self):
        # --exit-when-idle cannot stop between ranks: each connects when the library loads, before
        # the communicator's init, which no rank leaves before all have joined.
        collector = Collector(self.dir, "--exit-when-idle")
        env = gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket})
        truth_path = os.path.join(self.dir, "truth.json")
        job = subprocess.run([gwtest.SIM, EIGHT_RANKS, "--quiet", "--truth", truth_path], env=env, capture_output=True,
                             text=True, timeout=HANG * 3)
        self.assertEqual(job.returncode, 0, job.stderr)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        with open(truth_path) as f:
            truth = {p["rank"]: p for p in json.load(f)["processes"]}
        self.assertEqual(sorted(truth), list(range(8)))
        self.assertTrue(all(p["workers_forked"] == 2 for p in truth.values()), "each rank forked its workers")
        out = collector.output
        files = sorted(glob.glob(os.path.join(out, "*-rank*.gwt")), key=rank_of)
        self.assertEqual([rank_of(f) for f in files], list(range(8)), collector.log())

        for f in files:
            name = os.path.basename(f)
            # Every event the process recorded arrived: its Goodbye's totals are its ground truth.
            events = gwtest.dump(f)
            counts = type_counts(events)
            [bye] = [e for e in events if e["type"] == "goodbye"]
            for kind, total in (("api_call", "api_calls"), ("activity", "activities"), ("nccl_call", "nccl_calls"),
                                ("marker", "markers")):
                self.assertEqual(counts.get(kind, 0), bye[total], "%s: %s" % (name, kind))
            self.assertGreater(counts.get("nccl_call", 0), 0, name)
            self.assertFalse([d for d in bye["drops"] if d["dropped"]], name)
            # ... and what the simulator says the rank did: its API calls by kind, its NCCL calls
            # by operation, its device operations.
            calls = rows(truth[rank_of(f)]["timeline"]["api_calls"])
            ops = rows(truth[rank_of(f)]["timeline"]["ops"])
            self.assertEqual(collections.Counter(e["kind"] for e in events if e["type"] == "api_call"),
                             collections.Counter(RECORDED_KINDS[c["kind"]] for c in calls if c["kind"] in RECORDED_KINDS),
                             name)
            self.assertEqual(collections.Counter(e["op"] for e in events if e["type"] == "nccl_call"),
                             collections.Counter(NCCL_OPS[c["name"]] for c in calls
                                                 if c["kind"] == "nccl" and c["name"] in NCCL_OPS), name)
            self.assertEqual(len([e for e in events if e["type"] == "activity" and e["kind"] in DEVICE_KINDS]),
                             len([o for o in ops if o["kind"] in DEVICE_KINDS]), name)
            # The report the collector computed live, byte for byte the offline one.
            with open(f[:-len(".gwt")] + ".report.json", "rb") as live:
                self.assertEqual(live.read(), report(["--json", name], out), name)

        with open(os.path.join(out, "gapwatch-report.json")) as run_json:
            run = json.load(run_json)
        self.assertEqual([p["rank"] for p in run["processes"]], list(range(8)))
        waits = {w["rank"]: w for w in run["rank_waits"]}
        slowest = max(range(8), key=lambda r: waits[r]["waited_for_ns"])
        self.assertEqual(slowest, SLOW_RANK, run["rank_waits"])
        self.assertTrue(any("rank %d" % SLOW_RANK in f["title"] for f in run["findings"]), run["findings"])

        with open(os.path.join(out, "gapwatch-report.txt"), "rb") as run_text:
            text = run_text.read()
        self.assertIn(b"others waited for it", text)
        self.assertIn(b"Waiting for rank %d in collectives" % SLOW_RANK, text)

    def test_run_report_equals_offline_report_of_all_recordings(self):
        collector = Collector(self.dir, "--exit-when-idle")
        env = gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket})
        job = subprocess.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, "nccl-bound.json"), "--quiet"], env=env,
                             capture_output=True, text=True, timeout=HANG * 3)
        self.assertEqual(job.returncode, 0, job.stderr)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        out = collector.output
        names = [os.path.basename(f) for f in sorted(glob.glob(os.path.join(out, "*.gwt")), key=rank_of)]
        self.assertEqual(len(names), 2)
        with open(os.path.join(out, "gapwatch-report.txt"), "rb") as f:
            self.assertEqual(f.read(), report(names, out))
        with open(os.path.join(out, "gapwatch-report.json"), "rb") as f:
            self.assertEqual(f.read(), report(["--json"] + names, out))

    def test_collector_killed_mid_run_costs_the_job_nothing(self):
        collector = Collector(self.dir)
        procs = []
        for i in range(4):
            env = gwtest.gapwatch_env("preload", os.path.join(self.dir, "rest-%d.gwt" % i),
                                      {"GAPWATCH_SOCKET": collector.socket})
            procs.append(subprocess.Popen([STEADY, "40", "50"], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        collector.wait_log(": opened, writing ", 4)
        # Killed once every process has sent it batches, while all still run (40 kernels, 50 ms
        # apart: two seconds each, or more on a busy machine; checked below).
        deadline = time.monotonic() + HANG
        while any(os.path.getsize(f) < 2000 for f in collector.recordings()):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        collector.proc.send_signal(signal.SIGKILL)
        collector.proc.wait(timeout=HANG)
        for i, p in enumerate(procs):
            stdout, stderr = p.communicate(timeout=HANG)
            self.assertEqual(p.returncode, 0, stderr)
            self.assertEqual(len([l for l in stdout.splitlines() if l.startswith("ended ")]), 40, stdout)
            self.assertIn("went away", stderr)
        # The collector's recording of each process and its local file together hold every batch.
        for streamed in collector.recordings():
            pid = int(os.path.basename(streamed).split("-")[2].split(".")[0])
            [i] = [i for i, p in enumerate(procs) if p.pid == pid]
            got, _ = batches_in(streamed)
            rest, bye = batches_in(os.path.join(self.dir, "rest-%d.gwt" % i))
            self.assertIsNotNone(bye, "the local file ends with the Goodbye")
            for seq in set(got) & set(rest):
                self.assertEqual(got[seq], rest[seq], seq)
            union = {**got, **rest}
            self.assertEqual(sorted(union), list(range(len(union))), "every batch, none missing")
            self.assertEqual(sum(union.values()), bye["api_calls"] + bye["activities"])
            self.assertTrue(got, "the collector had some before it died")

        # A collector started later (on the dead one's socket) serves new processes.
        before = set(collector.recordings())
        later = Collector(self.dir, "--exit-when-idle")
        self.assertIn("replaced the stale socket", later.log())
        env = gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": later.socket})
        r = gwtest.run([STEADY, "3", "20"], env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("went away", r.stderr)
        self.assertEqual(later.proc.wait(timeout=HANG), 0, later.log())
        [recording] = set(later.recordings()) - before
        got, bye = batches_in(recording)
        self.assertEqual(sum(got.values()), bye["api_calls"] + bye["activities"])


if __name__ == "__main__":
    gwtest.main(__name__)
