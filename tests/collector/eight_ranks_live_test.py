"""Eight NCCL ranks, with forked DataLoader workers, streaming into one collector for about eight
seconds, with `gapwatch watch` and a real Prometheus server following them: both show the ranks'
idle causes while the job runs, and agree with the collector's end-of-run report once it has
ended; the report's cross-rank table names the rank the scenario made slow.

The watch and Prometheus parts each have their own, finer tests (watch_test.py, metrics_test.py);
this one is the whole job at the scale of a node. Timeouts only bound a hang; "while it runs" is
decided from what each view said about a process it still showed as running, never from timing."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interpose"))
import gwtest  # noqa: E402
from collector_test import HANG, Collector  # noqa: E402
from metrics_test import PROMETHEUS, Prometheus, metrics_url  # noqa: E402
from watch_test import Watcher, report_summary  # noqa: E402

SCENARIO = os.path.join(HERE, "scenarios", "nccl-8-ranks-long.json")
RANKS = [str(r) for r in range(8)]
SLOW_RANK = 5  # the scenario's rank_overrides
CAUSES = ["host_cpu", "launch_overhead", "sync_copy", "cuda_api", "nccl_host", "dependency"]

# Idle seconds by rank and cause, counted only from a scrape in which that rank still ran.
RUNNING_IDLE = ("sum by (rank, cause) (gapwatch_idle_seconds_total * on (rank, pid, host, file) group_left "
                "gapwatch_process_running)")


@unittest.skipUnless(PROMETHEUS, "the prometheus binary is missing (scripts/setup.sh installs it)")
class EightRanksLiveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_watch_and_prometheus_show_the_causes_while_it_runs_and_the_report_after(self):
        collector = Collector(self.dir, "--metrics", "127.0.0.1:0")
        prometheus = Prometheus(self.dir, urllib.parse.urlsplit(metrics_url(collector)).netloc)
        try:
            prometheus.wait_for('up{job="gapwatch"}', lambda r: r and r[0][1] == 1, "the collector scraped")
            watcher = Watcher(collector.socket)
            sim = subprocess.Popen([gwtest.SIM, SCENARIO, "--quiet"],
                                   env=gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket}),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            causes_while_running = {}  # rank -> causes Prometheus showed idle time in while it ran
            deadline = time.monotonic() + HANG * 3
            while sim.poll() is None and time.monotonic() < deadline:
                for labels, value in prometheus.query(RUNNING_IDLE):
                    if value > 0:
                        causes_while_running.setdefault(labels["rank"], set()).add(labels["cause"])
                time.sleep(0.3)
            _, err = sim.communicate(timeout=HANG)
            self.assertEqual(sim.returncode, 0, err)
            self.assertEqual(sorted(causes_while_running), RANKS,
                             "Prometheus showed idle causes while it ran for: %s" % causes_while_running)

            # watch, while it ran: every rank on a "running" line with a top finding.
            top_while_running = {}
            for _, processes, _ in watcher.blocks():
                for p in processes:
                    if p["state"] == "running" and p["top"] != "-":
                        top_while_running[p["rank"]] = p["top"]
            self.assertEqual(sorted(top_while_running), RANKS, "\n".join(watcher.lines[-40:]))

            # After the end: a scrape in which all eight have ended.
            prometheus.wait_for('count(gapwatch_process_running{rank=~"[0-7]"} == 0) == 8',
                                lambda r: len(r) == 1, "a scrape after the job's end")
            idle = prometheus.query("gapwatch_idle_seconds_total")
            self.assertEqual(collector.stop(), 0, collector.log())
        finally:
            prometheus.stop()
            collector.stop()
        code, werr = watcher.finish()
        self.assertEqual(code, 0, werr)

        with open(os.path.join(collector.output, "gapwatch-report.json")) as f:
            report = json.load(f)
        processes = {str(p["rank"]): p for p in report["processes"]}
        self.assertEqual(sorted(processes), RANKS)

        # watch's last picture: every rank ended, with the report's idle % and top finding.
        _, last, _ = watcher.blocks()[-1]
        self.assertEqual(sorted(p["rank"] for p in last), RANKS)
        for p in last:
            self.assertEqual(p["state"], "ended", p)
            self.assertEqual((p["idle"], p["top"]), report_summary(processes[p["rank"]]), "rank %s" % p["rank"])

        # Prometheus after the end: the report's idle by cause, device by device, to the nanosecond.
        for rank, p in processes.items():
            for d in p["devices"]:
                for cause in CAUSES:
                    [seconds] = [v for l, v in idle if l.get("rank") == rank and l.get("device") == str(d["device"])
                                 and l.get("cause") == cause]
                    self.assertLessEqual(abs(seconds * 1e9 - d["idle_by_cause"][cause]), 1,
                                         "rank %s device %s %s" % (rank, d["device"], cause))

        waits = {w["rank"]: w["waited_for_ns"] for w in report["rank_waits"]}
        self.assertEqual(max(waits, key=waits.get), SLOW_RANK, report["rank_waits"])
        with open(os.path.join(collector.output, "gapwatch-report.txt")) as f:
            self.assertIn("Waiting for rank %d in collectives" % SLOW_RANK, f.read())


if __name__ == "__main__":
    gwtest.main(__name__)
