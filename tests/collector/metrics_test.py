"""The collector's Prometheus endpoint (`gapwatch collector --metrics`), scraped by a real Prometheus
server (Debian's prometheus, started here on a loopback port): while a two-rank simulated job runs,
a query through Prometheus's HTTP API shows its idle time by cause; once it has ended, Prometheus's
numbers equal the collector's end-of-run report. Also what the endpoint refuses, and bad --metrics
values.

Skipped only where the prometheus binary is missing (scripts/setup.sh installs it). Timeouts only
bound a hang; nothing here asserts how fast anything is."""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwtest  # noqa: E402
from collector_test import GAPWATCHD, HANG, Collector  # noqa: E402

PROMETHEUS = shutil.which("prometheus")
# About ten seconds of two ranks, so that Prometheus scrapes them several times while they run.
LONG_SCENARIO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios", "metrics-long.json")
CAUSES = ["host_cpu", "launch_overhead", "sync_copy", "cuda_api", "nccl_host", "dependency"]


def documented_queries():
    """The PromQL blocks of docs/usage.md's "Prometheus metrics" section, in order."""
    with open(os.path.join(gwtest.REPO, "docs", "usage.md")) as f:
        text = f.read()
    start = text.index("## Prometheus metrics")
    section = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"```promql\n(.*?)```", section, re.S)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics_url(collector):
    m = re.search(r"metrics on (http://\S+/metrics)", collector.log())
    if not m:
        raise AssertionError("no metrics address in the log: " + collector.log())
    return m.group(1)


def request(url, method="GET", path=None, body=None):
    """(status, headers, body) of one request to the collector's endpoint."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=HANG)
    try:
        conn.request(method, path or u.path, body=body)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class Prometheus:
    """A Prometheus server on a loopback port, scraping `target` (host:port) every second."""

    def __init__(self, workdir, target):
        self.port = free_port()
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: gapwatch\n    static_configs:\n"
                    "      - targets: ['%s']\n" % target)
        self.log_path = os.path.join(workdir, "prometheus.log")
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port], stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + HANG
        while not self._ready():
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited (%s): %s" % (self.proc.returncode, self.log()))
            if time.monotonic() > deadline:
                raise AssertionError("prometheus never became ready: " + self.log())
            time.sleep(0.2)

    def log(self):
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def _ready(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, promql):
        """An instant query's result: [(labels, float value)]."""
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode({"query": promql}))
        with urllib.request.urlopen(url, timeout=HANG) as r:
            doc = json.load(r)
        if doc.get("status") != "success":
            raise AssertionError("query %s: %s" % (promql, doc))
        return [(item["metric"], float(item["value"][1])) for item in doc["data"]["result"]]

    def wait_for(self, promql, accept, what):
        """The query's result once accept(result) holds; polled until HANG."""
        deadline = time.monotonic() + HANG
        while True:
            result = self.query(promql)
            if accept(result):
                return result
            if time.monotonic() > deadline:
                raise AssertionError("%s: never; last %s -> %s" % (what, promql, result))
            time.sleep(0.3)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=HANG)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def by_rank(result):
    return {labels.get("rank", ""): value for labels, value in result}


class MetricsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    @unittest.skipIf(PROMETHEUS is None, "the prometheus binary is missing (scripts/setup.sh installs Debian's)")
    def test_prometheus_sees_the_job_while_it_runs_and_its_report_after(self):
        collector = Collector(self.dir, "--metrics", "127.0.0.1:0")
        try:
            url = metrics_url(collector)
            prometheus = Prometheus(self.dir, urllib.parse.urlsplit(url).netloc)
            try:
                self.check_job(collector, prometheus)
            finally:
                prometheus.stop()
        finally:
            collector.stop()

    def check_job(self, collector, prometheus):
        prometheus.wait_for('up{job="gapwatch"}', lambda r: r and r[0][1] == 1, "the collector scraped")
        sim = subprocess.Popen([gwtest.SIM, LONG_SCENARIO, "--quiet"],
                               env=gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket}),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # Idle seconds by rank, counted only from a scrape in which that rank's process was still
        # running (idle x running: the two come from the same scrape).
        running_idle = ("sum by (rank) (gapwatch_idle_seconds_total * on (rank, pid, host, file) group_left "
                        "gapwatch_process_running)")
        seen_running = {}
        deadline = time.monotonic() + HANG * 3
        while sim.poll() is None and time.monotonic() < deadline:
            for rank, value in by_rank(prometheus.query(running_idle)).items():
                seen_running[rank] = max(seen_running.get(rank, 0), value)
            time.sleep(0.3)
        _, err = sim.communicate(timeout=HANG)
        self.assertEqual(sim.returncode, 0, err)
        for rank in ("0", "1"):
            self.assertGreater(seen_running.get(rank, 0), 0,
                               "rank %s: no scrape showed idle time while it ran: %s" % (rank, seen_running))
        # While it ran, the causes too: one query of idle by cause and rank, at the same scrapes.
        # (After the end, everything must equal the run's report.) Wait for a scrape after both
        # ranks have ended: none running, and both ended.
        prometheus.wait_for('gapwatch_processes{state="running"} == 0 and on() '
                            'count(gapwatch_process_running{rank=~"0|1"} == 0) == 2',
                            lambda r: len(r) == 1, "a scrape after the job's end")
        self.check_documented_queries(prometheus)
        idle = prometheus.query("gapwatch_idle_seconds_total")
        syncs = prometheus.query("gapwatch_sync_points_total")
        blocked = prometheus.query("gapwatch_sync_blocked_seconds_total")
        launches = prometheus.query("gapwatch_launches_total")
        gap_count = prometheus.query("gapwatch_gap_seconds_count")
        busy = prometheus.query("gapwatch_busy_seconds_total")
        self.assertEqual(collector.stop(), 0, collector.log())
        with open(os.path.join(collector.output, "gapwatch-report.json")) as f:
            report = json.load(f)
        ranked = [p for p in report["processes"] if p["rank"] is not None]
        self.assertEqual(sorted(p["rank"] for p in ranked), [0, 1])

        def series(result, rank, **labels):
            found = [v for l, v in result if l.get("rank") == str(rank) and
                     all(l.get(k) == str(v) for k, v in labels.items())]
            self.assertEqual(len(found), 1, "rank %s %s: %s" % (rank, labels, result))
            return found[0]

        def same_ns(seconds, ns, what):
            self.assertLessEqual(abs(seconds * 1e9 - ns), 1, "%s: Prometheus %r s, report %d ns" % (what, seconds, ns))

        for p in ranked:
            rank = p["rank"]
            self.assertTrue(p["devices"], p)
            total_idle = 0
            for d in p["devices"]:
                for cause in CAUSES:
                    ns = d["idle_by_cause"][cause]
                    total_idle += ns
                    same_ns(series(idle, rank, device=d["device"], cause=cause), ns,
                            "rank %d device %d %s" % (rank, d["device"], cause))
                same_ns(series(busy, rank, device=d["device"]), d["busy_ns"], "rank %d busy" % rank)
                self.assertEqual(series(gap_count, rank, device=d["device"]), d["gap_count"])
            self.assertGreater(total_idle, 0)
            self.assertGreater(sum(s["count"] for s in p["sync_points"]), 0)
            for s in p["sync_points"]:
                self.assertEqual(series(syncs, rank, type=s["type"]), s["count"], "rank %d %s" % (rank, s["type"]))
                same_ns(series(blocked, rank, type=s["type"]), s["total_ns"], "rank %d %s blocked" % (rank, s["type"]))
            self.assertGreater(p["launches"]["launches"], 0)
            self.assertEqual(series(launches, rank), p["launches"]["launches"])

    def check_documented_queries(self, prometheus):
        """The three queries of docs/usage.md run and say what they promise, on this job: rank 1's
        host is 1.5x slower, so its device idles most."""
        queries = documented_queries()
        self.assertEqual(len(queries), 3, queries)
        share, worst, syncs_per_step = queries
        shares = prometheus.wait_for(share, lambda r: {l.get("rank") for l, _ in r} >= {"0", "1"}, "idle share")
        for rank in ("0", "1"):
            by_cause = {l["cause"]: v for l, v in shares if l.get("rank") == rank}
            self.assertEqual(sorted(by_cause), sorted(CAUSES), shares)
            self.assertTrue(all(v >= 0 for v in by_cause.values()), by_cause)
            self.assertGreater(sum(by_cause.values()), 0, by_cause)
            self.assertLessEqual(sum(by_cause.values()), 1 + 1e-9, by_cause)
        top = prometheus.query(worst)
        self.assertEqual(len(top), 1, top)
        self.assertEqual(top[0][0].get("rank"), "1", top)
        per_step = by_rank(prometheus.query(syncs_per_step))
        for rank in ("0", "1"):
            self.assertGreater(per_step.get(rank, 0), 0, per_step)

    def test_only_get_and_head_of_metrics(self):
        collector = Collector(self.dir, "--metrics", ":0", program=GAPWATCHD)
        try:
            url = metrics_url(collector)
            self.assertTrue(url.startswith("http://127.0.0.1:"), url)  # loopback unless told otherwise
            status, headers, body = request(url)
            self.assertEqual(status, 200)
            self.assertEqual(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
            self.assertIn(b"# TYPE gapwatch_processes gauge\n", body)
            status, headers, body = request(url, "HEAD")
            self.assertEqual((status, body), (200, b""))
            for path in ("/", "/metrics/", "/metrics/../metrics2", "/index.html", "/api/v1/query", "/etc/passwd"):
                status, _, _ = request(url, path=path)
                self.assertEqual(status, 404, path)
            for method in ("POST", "PUT", "DELETE", "OPTIONS"):
                status, headers, _ = request(url, method, body=b"x=1" if method == "POST" else None)
                self.assertEqual(status, 405, method)
                self.assertEqual(headers.get("allow"), "GET, HEAD")
            self.assertEqual(request(url)[0], 200)  # still serving
        finally:
            self.assertEqual(collector.stop(), 0, collector.log())

    def test_slow_clients_cannot_hold_the_endpoint(self):
        collector = Collector(self.dir, "--metrics", "127.0.0.1:0")
        try:
            url = metrics_url(collector)
            u = urllib.parse.urlsplit(url)
            # A slowloris: a request begun and never finished, and idle connections up to and past
            # the connection limit (32).
            slow = socket.create_connection((u.hostname, u.port))
            slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            idle = [socket.create_connection((u.hostname, u.port)) for _ in range(40)]
            # The server closes every one of them (connection timeout, or over the limit)...
            for s in [slow] + idle:
                s.settimeout(HANG)
                try:
                    while s.recv(4096):
                        pass
                except (ConnectionResetError, BrokenPipeError):
                    pass
                s.close()
            # ... and serves again.
            self.assertEqual(request(url)[0], 200)
        finally:
            self.assertEqual(collector.stop(), 0, collector.log())

    def test_ipv6_loopback_when_asked(self):
        try:
            with socket.socket(socket.AF_INET6) as s:
                s.bind(("::1", 0))
        except OSError as e:
            self.skipTest("no IPv6 loopback here: %s" % e)
        collector = Collector(self.dir, "--metrics", "[::1]:0")
        try:
            url = metrics_url(collector)
            self.assertTrue(url.startswith("http://[::1]:"), url)
            self.assertEqual(request(url)[0], 200)
        finally:
            self.assertEqual(collector.stop(), 0, collector.log())

    def test_bad_metrics_values_stop_it_with_one_line(self):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        in_use = "127.0.0.1:%d" % busy.getsockname()[1]
        sock = os.path.join(self.dir, "run", "collector.sock")
        try:
            for bad in ("abc", "", "127.0.0.1:99999", "127.0.0.1:", "[::1", "::1:9464", "example.com:80",
                        "256.0.0.1:9464", in_use):
                r = subprocess.run([gwtest.GAPWATCH, "collector", "--socket", sock, "--output-dir", self.dir,
                                    "--metrics", bad], capture_output=True, text=True, timeout=HANG)
                self.assertEqual(r.returncode, 1, "%r: %s" % (bad, r.stderr))
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, "%r: %s" % (bad, r.stderr))
                self.assertIn("--metrics", lines[0])
                self.assertFalse(os.path.exists(sock), bad)  # nothing else started
        finally:
            busy.close()


if __name__ == "__main__":
    gwtest.main(__name__)
