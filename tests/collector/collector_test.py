"""The collector daemon (`gapwatch collector`): simulated processes streaming into one collector at
once, and broken or hostile peers (a raw socket client) closed one by one while the others go on.

Timeouts only bound a hang; nothing here asserts how fast anything is."""
import ctypes
import glob
import json
import os
import shutil
import re
import resource
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

GAPWATCHD = os.path.join(gwtest.BUILD, "bin", "gapwatchd")
HANG = 120  # seconds: bounds a run that hangs, never a measurement


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire_type, payload):
    key = varint((number << 3) | wire_type)
    if wire_type == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def frame(body_field, body):
    message = field(body_field, 2, body)  # Frame.hello = 1, batch = 2, goodbye = 3 (stream.proto)
    return varint(len(message)) + message


def hello(pid, host="testhost", wire_version=1, rank=None):
    body = field(1, 0, wire_version) + field(2, 0, pid) + field(3, 2, host.encode())
    if rank is not None:
        body += field(4, 0, rank)
    return frame(1, body)


def goodbye():
    return frame(3, field(1, 0, 1))  # end_time_ns = 1


class Collector:
    """A collector on a private socket; its log is kept in a file."""

    def __init__(self, workdir, *args, program=None, timeout="2s", nofile=None, args_before=None):
        self.socket = os.path.join(workdir, "run", "collector.sock")
        self.output = os.path.join(workdir, "out")
        os.makedirs(self.output, exist_ok=True)
        self.log_path = os.path.join(workdir, "collector-%d.log" % time.monotonic_ns())
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [program or gwtest.GAPWATCH] + (args_before if args_before else [] if program else ["collector"]) +
            ["--socket", self.socket, "--output-dir", self.output, "--slow-peer-timeout", timeout] + list(args),
            stdout=subprocess.DEVNULL, stderr=self.log_file,
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))) if nofile else None)
        self.log_file.close()  # the collector has its own descriptor
        deadline = time.monotonic() + HANG
        while "listening on" not in self.log():
            if self.proc.poll() is not None:
                raise AssertionError("collector exited (%s): %s" % (self.proc.returncode, self.log()))
            if time.monotonic() > deadline:
                raise AssertionError("collector never listened: " + self.log())
            time.sleep(0.05)

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.socket)
        return s

    def wait_log(self, text, count=1):
        deadline = time.monotonic() + HANG
        while self.log().count(text) < count:
            if time.monotonic() > deadline:
                raise AssertionError("%r never logged %d time(s): %s" % (text, count, self.log()))
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=HANG)

    def recordings(self):
        return sorted(glob.glob(os.path.join(self.output, "*.gwt")))


def wait_closed(sock):
    """True once the collector has closed `sock` (EOF or reset)."""
    sock.settimeout(HANG)
    try:
        while sock.recv(4096):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    sock.close()
    return True


def frames(path):
    """(Hello frames, Goodbye frames) in a recording."""
    counts = type_counts(gwtest.dump(path))
    return counts.get("hello", 0), counts.get("goodbye", 0)


def type_counts(events):
    counts = {}
    for e in events:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    return counts


class CollectorTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def good_client(self, collector, pid, host="goodhost"):
        s = collector.connect()
        s.sendall(hello(pid, host) + goodbye())
        s.close()
        collector.wait_log("pid %d, rank -, host %s: closed (ended)" % (pid, host))

    def test_eight_processes_stream_at_once(self):
        scenarios = sorted(glob.glob(os.path.join(gwtest.SCENARIOS, "*.json")))
        self.assertGreaterEqual(len(scenarios), 1)
        collector = Collector(self.dir, "--exit-when-idle", program=GAPWATCHD)
        env = gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket})
        # Connected until every simulated process has ended: --exit-when-idle must not see a quick
        # process end before a slow one (on a busy machine) has connected.
        keeper = collector.connect()
        keeper.sendall(hello(1, "keeper"))
        procs = []
        for i in range(8):
            scenario = scenarios[i % len(scenarios)]
            procs.append((scenario, subprocess.Popen([gwtest.SIM, scenario, "--quiet"], env=env,
                                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
        for scenario, p in procs:
            _, err = p.communicate(timeout=HANG * 3)
            self.assertEqual(p.returncode, 0, "%s: %s" % (scenario, err))
        keeper.sendall(goodbye())
        keeper.close()
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        log = collector.log()
        self.assertIn("--exit-when-idle", log)
        files = [f for f in collector.recordings() if "-keeper-" not in f]
        pids = {}
        for f in files:
            pids.setdefault(int(os.path.basename(f).split("-")[2].split(".")[0]), []).append(f)
        for scenario, p in procs:
            if "nccl" in scenario:
                continue  # its ranks are forked children, with pids of their own
            self.assertEqual(len(pids.get(p.pid, [])), 1, "%s (pid %d): %s" % (scenario, p.pid, files))
        self.assertGreaterEqual(len(files), 8)
        for f in files:
            events = gwtest.dump(f)
            counts = type_counts(events)
            byes = [e for e in events if e["type"] == "goodbye"]
            self.assertEqual(len(byes), 1, f)
            bye = byes[0]
            for kind, total in (("api_call", "api_calls"), ("activity", "activities"), ("nccl_call", "nccl_calls"),
                                ("marker", "markers")):
                self.assertEqual(counts.get(kind, 0), bye[total], "%s: %s" % (f, kind))
            self.assertGreater(counts.get("api_call", 0), 0, f)
            report = subprocess.run([gwtest.GAPWATCH, "report", f], capture_output=True, text=True, timeout=HANG)
            self.assertEqual(report.returncode, 0, report.stderr)
            self.assertNotIn("truncated", report.stdout)
        self.assertEqual(log.count(": opened, writing "), log.count(": closed ("))

    def test_same_events_as_a_recording_to_a_file(self):
        scenario = os.path.join(gwtest.SCENARIOS, "healthy.json")
        direct = os.path.join(self.dir, "direct.gwt")
        r = gwtest.run([gwtest.SIM, scenario, "--quiet"], gwtest.gapwatch_env("preload", direct))
        self.assertEqual(r.returncode, 0, r.stderr)
        collector = Collector(self.dir, "--exit-when-idle")
        r = gwtest.run([gwtest.SIM, scenario, "--quiet"],
                       gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket}))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        [streamed] = collector.recordings()
        # Times and ids differ from run to run; what was recorded does not.
        want = type_counts(gwtest.dump(direct))
        got = type_counts(gwtest.dump(streamed))
        for kind in ("api_call", "activity", "nccl_call", "marker", "hello", "goodbye"):
            self.assertEqual(got.get(kind, 0), want.get(kind, 0), kind)

    def test_refuses_another_wire_version(self):
        collector = Collector(self.dir)
        s = collector.connect()
        s.sendall(hello(777, wire_version=99))
        self.assertTrue(wait_closed(s))
        collector.wait_log("refused: wire protocol version 99 is newer than this collector reads (1 to 1)")
        self.good_client(collector, 778)
        self.assertEqual(collector.stop(), 0)
        self.assertEqual([os.path.basename(f) for f in collector.recordings()], ["gapwatch-goodhost-778.gwt"])
        self.assertEqual(frames(collector.recordings()[0]), (1, 1))

    def test_garbage_and_a_stream_not_beginning_with_hello(self):
        collector = Collector(self.dir)
        # A well-behaved process connected all along, sending after the bad ones are gone.
        steady = collector.connect()
        steady.sendall(hello(900, "steady"))
        garbage = collector.connect()
        garbage.sendall(bytes(range(256)) * 4)
        not_hello = collector.connect()
        not_hello.sendall(goodbye() + hello(901))
        oversize = collector.connect()
        oversize.sendall(varint(20 * 1024 * 1024) + b"\0" * 4096)
        for s in (garbage, not_hello, oversize):
            self.assertTrue(wait_closed(s))
        collector.wait_log("refused", count=3)
        log = collector.log()
        self.assertIn("refused: the stream does not begin with a Hello frame", log)
        self.assertIn("16 MiB frame limit", log)
        steady.sendall(goodbye())
        steady.close()
        collector.wait_log("host steady: closed (ended)")
        self.assertEqual(collector.stop(), 0)
        self.assertEqual([os.path.basename(f) for f in collector.recordings()], ["gapwatch-steady-900.gwt"])
        self.assertEqual(frames(collector.recordings()[0]), (1, 1))
        # One line per bad connection, none with a traceback or two lines for one event.
        self.assertEqual(len([l for l in log.splitlines() if "refused" in l]), 3)

    def test_hostile_crowd_while_a_process_streams(self):
        collector = Collector(self.dir)
        sim = subprocess.Popen([gwtest.SIM, os.path.join(gwtest.SCENARIOS, "launch-bound.json"), "--quiet"],
                               env=gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket}),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        crowd = [collector.connect() for _ in range(100)]
        for s in crowd:
            s.close()
        truncated = collector.connect()
        truncated.sendall(hello(970, "cut")[:6])
        truncated.close()
        noise = collector.connect()
        noise.sendall(os.urandom(1 << 16))
        self.assertTrue(wait_closed(noise))
        _, err = sim.communicate(timeout=HANG)
        self.assertEqual(sim.returncode, 0, err)
        collector.wait_log("ended before a Hello", count=101)
        collector.wait_log("closed (ended)")
        self.assertEqual(collector.stop(), 0)
        [f] = collector.recordings()
        self.assertIn("-%d.gwt" % sim.pid, f)
        events = gwtest.dump(f)
        counts = type_counts(events)
        [bye] = [e for e in events if e["type"] == "goodbye"]
        self.assertGreater(bye["api_calls"], 0)
        for kind, total in (("api_call", "api_calls"), ("activity", "activities")):
            self.assertEqual(counts.get(kind, 0), bye[total], kind)

    def test_slow_peer_is_closed_and_others_go_on(self):
        collector = Collector(self.dir, timeout="1s")
        slow = collector.connect()
        slow.sendall(hello(910, "slow") + varint(200))
        steady = collector.connect()
        steady.sendall(hello(911, "steady"))
        closed = False
        deadline = time.monotonic() + HANG
        slow.settimeout(0.2)
        while time.monotonic() < deadline and not closed:
            try:
                slow.sendall(b"\x08")  # one byte of a frame that never completes
                if slow.recv(1) == b"":
                    closed = True
            except socket.timeout:
                pass
            except (BrokenPipeError, ConnectionResetError):
                closed = True
        self.assertTrue(closed, collector.log())
        collector.wait_log("too slow: no whole frame for 1000 ms")
        steady.sendall(goodbye())
        steady.close()
        collector.wait_log("host steady: closed (ended)")
        self.assertEqual(collector.stop(), 0)
        # The slow peer's Hello was whole, so its file exists, without the frame it never finished.
        slow_file = os.path.join(collector.output, "gapwatch-slow-910.gwt")
        counts = type_counts(gwtest.dump(slow_file))
        self.assertEqual((counts.get("hello"), counts.get("goodbye")), (1, None))
        self.assertIn("steady-911", " ".join(collector.recordings()))

    def test_a_stopped_peer_is_kept_past_the_slow_peer_timeout(self):
        """Issue 21, item 9: a process paused (SIGSTOP, a debugger, a checkpoint) with half a frame
        sent was dropped as a slow peer, its recording cut there. A peer whose process is stopped
        is kept for as long as it is stopped; once it runs again it has the whole timeout anew."""
        # After SIGCONT the peer has the whole timeout anew: 3 s is ample for one send, even busy.
        collector = Collector(self.dir, timeout="3s")
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        batch_less = goodbye()
        child = os.fork()
        if child == 0:
            code = 1
            try:
                os.close(ready_r)
                os.close(go_w)
                s = collector.connect()
                s.sendall(hello(990, "paused") + batch_less[:2])  # half of the Goodbye frame
                os.write(ready_w, b"r")
                os.read(go_r, 1)
                s.sendall(batch_less[2:])
                s.close()
                code = 0
            finally:
                os._exit(code)
        os.close(ready_w)
        os.close(go_r)
        try:
            self.assertEqual(os.read(ready_r, 1), b"r")
            collector.wait_log("host paused: opened, writing ")
            os.kill(child, signal.SIGSTOP)
            # Stopped past the timeout: the collector either keeps it (and says so) or drops it.
            deadline = time.monotonic() + HANG
            while "is stopped" not in collector.log() and "too slow" not in collector.log():
                self.assertLess(time.monotonic(), deadline, collector.log())
                time.sleep(0.05)
            os.kill(child, signal.SIGCONT)
            os.write(go_w, b"g")
            _, status = os.waitpid(child, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        finally:
            os.close(ready_r)
            os.close(go_w)
            try:
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        collector.wait_log("host paused: closed (")
        log = collector.log()
        self.assertNotIn("too slow", log)
        self.assertIn("host paused: closed (ended)", log)
        self.assertEqual(collector.stop(), 0, collector.log())
        self.assertEqual(frames(os.path.join(collector.output, "gapwatch-paused-990.gwt")), (1, 1))

    def test_a_peer_that_sends_nothing_is_closed(self):
        collector = Collector(self.dir, timeout="1s")
        s = collector.connect()
        self.assertTrue(wait_closed(s))
        collector.wait_log("too slow")
        self.assertEqual(collector.stop(), 0)
        self.assertEqual(collector.recordings(), [])

    def test_sigterm_flushes_every_stream(self):
        collector = Collector(self.dir)
        clients = []
        for i in range(8):
            s = collector.connect()
            s.sendall(hello(920 + i, "node", rank=i))
            clients.append(s)
        collector.wait_log(": opened, writing ", count=8)
        collector.proc.send_signal(signal.SIGTERM)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        log = collector.log()
        self.assertEqual(log.count("closed (collector stopping)"), 8, log)
        self.assertFalse(os.path.exists(collector.socket))
        names = sorted(os.path.basename(f) for f in collector.recordings())
        self.assertEqual(names, ["gapwatch-node-%d-rank%d.gwt" % (920 + i, i) for i in range(8)])
        for f in collector.recordings():
            counts = type_counts(gwtest.dump(f))
            self.assertEqual((counts.get("hello"), counts.get("goodbye")), (1, None), f)
        for s in clients:
            s.close()

    def test_sighup_is_a_clean_stop_with_the_run_report(self):
        # Issue 21, item 6: SIGHUP used to kill the collector (exit 129) without its run report or
        # the Goodbye-less streams' files closed in order.
        collector = Collector(self.dir)
        self.good_client(collector, 930, "hup")
        s = collector.connect()
        s.sendall(hello(931, "hup"))
        collector.wait_log(": opened, writing ", count=2)
        collector.proc.send_signal(signal.SIGHUP)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        log = collector.log()
        self.assertIn("stopping on Hangup", log)
        self.assertIn("closed (collector stopping)", log)
        self.assertIn("run report of 2 process(es)", log)
        self.assertTrue(os.path.exists(os.path.join(collector.output, "gapwatch-report.txt")), log)
        self.assertFalse(os.path.exists(collector.socket))
        s.close()

    def test_out_of_descriptors_refuses_at_once_without_spinning(self):
        # Issue 21, item 3: with accept() failing EMFILE the listening socket stayed readable: a
        # full core and a log line per turn ("accept: Too many open files", ~50 MB/s). Now the
        # waiting peers are refused at once (closed: the library writes its own file), the episode
        # is logged once, and the collector serves again when descriptors are free.
        collector = Collector(self.dir, nofile=16, timeout="30s")
        idle = []
        for _ in range(30):
            idle.append(collector.connect())
        collector.wait_log("refusing new connections until descriptors are free")
        time.sleep(1.0)  # long enough for thousands of lines before the fix, at any machine speed
        log = collector.log()
        self.assertEqual(log.count("accept:"), 1, log[-2000:])
        # The refused ones were closed, not left in the backlog: some of the 30 see EOF.
        refused = 0
        for s in idle:
            s.settimeout(0.2)
            try:
                if s.recv(1) == b"":
                    refused += 1
            except (socket.timeout, ConnectionResetError):
                pass
        self.assertGreater(refused, 0, log)
        # A traced job that connects now is refused too, and loses nothing: its own file has every
        # event a recording straight to a file has.
        scenario = os.path.join(gwtest.SCENARIOS, "healthy.json")
        direct = os.path.join(self.dir, "direct.gwt")
        r = gwtest.run([gwtest.SIM, scenario, "--quiet"], gwtest.gapwatch_env("preload", direct))
        self.assertEqual(r.returncode, 0, r.stderr)
        job_dir = os.path.join(self.dir, "job")
        os.makedirs(job_dir)
        r = gwtest.run([gwtest.SIM, scenario, "--quiet"],
                       gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket}), cwd=job_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("went away", r.stderr)
        [own] = glob.glob(os.path.join(job_dir, "*.gwt"))
        want = type_counts(gwtest.dump(direct))
        got = type_counts(gwtest.dump(own))
        for kind in ("api_call", "activity", "marker", "goodbye"):
            self.assertEqual(got.get(kind, 0), want.get(kind, 0), kind)
        for s in idle:
            s.close()
        collector.wait_log("closed (ended before a Hello)", count=30 - refused)
        self.good_client(collector, 932, "fds")
        self.assertIn("descriptors free again", collector.log())
        self.assertEqual(collector.stop(), 0, collector.log())

    def test_non_utf8_paths_survive_a_watch_client(self):
        """Issue 21, item 5: with an output directory or socket path that is not UTF-8, the first
        `gapwatch watch` made the collector die (nlohmann's type_error.316, "invalid UTF-8 byte"),
        its socket file left behind. The status is valid JSON, the bad bytes replaced (U+FFFD)."""
        base = self.dir.encode()
        output = os.path.join(base, b"out-\xff\xfe")
        run_dir = os.path.join(base, b"run-\xff")
        os.mkdir(output)
        os.mkdir(run_dir, 0o700)
        sock = os.path.join(run_dir, b"c.sock")
        log_path = os.path.join(self.dir, "collector.log")
        with open(log_path, "w") as log_file:
            proc = subprocess.Popen([gwtest.GAPWATCH.encode(), b"collector", b"--socket", sock, b"--output-dir", output],
                                    stdout=subprocess.DEVNULL, stderr=log_file)

        def log():
            with open(log_path, errors="replace") as f:
                return f.read()
        try:
            deadline = time.monotonic() + HANG
            while "listening on" not in log():
                self.assertIsNone(proc.poll(), log())
                self.assertLess(time.monotonic(), deadline, log())
                time.sleep(0.05)
            watcher = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            watcher.connect(sock)
            watcher.sendall(frame(5, b""))  # Frame.status_request
            watcher.settimeout(HANG)
            line = b""
            while b"\n" not in line:
                chunk = watcher.recv(65536)
                self.assertTrue(chunk, "the collector closed the status stream: " + log())
                line += chunk
            status = json.loads(line.split(b"\n")[0])  # bytes: decoded as strict UTF-8
            self.assertEqual(status["output_dir"], output.decode("utf-8", "replace"))
            self.assertEqual(status["socket"], sock.decode("utf-8", "replace"))
            watcher.close()
            r = subprocess.run([gwtest.GAPWATCH.encode(), b"watch", b"--once", b"--socket", sock],
                               capture_output=True, timeout=HANG)
            self.assertEqual(r.returncode, 0, r.stderr)
            # Still serving: a process is recorded, and the stop is a clean one.
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock)
            s.sendall(hello(995, "utf") + goodbye())
            s.close()
            while "host utf: closed (ended)" not in log():
                self.assertIsNone(proc.poll(), log())
                self.assertLess(time.monotonic(), deadline + HANG, log())
                time.sleep(0.05)
            self.assertIsNone(proc.poll(), log())
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=HANG)
        self.assertEqual(code, 0, log())
        self.assertFalse(os.path.exists(sock), "socket file left behind")
        self.assertEqual(frames(os.path.join(output, b"gapwatch-utf-995.gwt").decode("utf-8", "surrogateescape")),
                         (1, 1))

    @unittest.skipUnless(shutil.which("strace"), "needs strace")
    def test_reports_are_synced_before_and_after_their_rename(self):
        """Issue 21, item 9: a report was renamed into place without an fsync, so a crash of the
        machine could leave a report of the right name and no content. Every report the collector
        writes (per process and the run's) is fsync'ed before its rename, and its directory after."""
        trace = os.path.join(self.dir, "strace.out")
        collector = Collector(self.dir, program="strace",
                              args_before=["-f", "-qq", "-o", trace, "-e",
                                           "trace=openat,fsync,fdatasync,rename,renameat,renameat2",
                                           gwtest.GAPWATCH, "collector"])
        scenario = os.path.join(gwtest.SCENARIOS, "healthy.json")
        r = gwtest.run([gwtest.SIM, scenario, "--quiet"],
                       gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket}))
        self.assertEqual(r.returncode, 0, r.stderr)
        collector.wait_log("closed (ended)")
        # SIGTERM to strace would only detach it: the collector, its child, is the one to stop.
        with open("/proc/%d/task/%d/children" % (collector.proc.pid, collector.proc.pid)) as f:
            [traced] = [int(pid) for pid in f.read().split()]
        os.kill(traced, signal.SIGTERM)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        collector.wait_log("run report of 1 process(es)")
        renamed = self.assert_synced_renames(trace)
        self.assertIn("gapwatch-report.txt", renamed)
        self.assertIn("gapwatch-report.json", renamed)
        self.assertTrue(any(n.endswith(".report.json") for n in renamed), renamed)
        # The recording `gapwatch import` writes is put in place the same way.
        trace = os.path.join(self.dir, "strace-import.out")
        imported = os.path.join(self.dir, "imported.gwt")
        r = subprocess.run(["strace", "-f", "-qq", "-o", trace, "-e",
                            "trace=openat,fsync,fdatasync,rename,renameat,renameat2", gwtest.GAPWATCH, "import",
                            os.path.join(gwtest.REPO, "tests", "data", "kineto", "ns_timestamps.json.gz"),
                            "-o", imported], capture_output=True, text=True, timeout=HANG)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.assert_synced_renames(trace), ["imported.gwt"])

    def assert_synced_renames(self, trace):
        """Every rename in an strace log of the calls above: its file fsync'ed between its open
        and the rename, its directory after. Returns the names renamed to."""
        with open(trace) as f:
            # Each line begins with the pid under -f; the rest is the call.
            lines = [re.sub(r"^\d+\s+", "", line) for line in f if line.strip()]
        renamed = []
        for i, line in enumerate(lines):
            m = re.match(r'renameat2?\((\d+|AT_FDCWD), "([^"]+)", (?:\d+|AT_FDCWD), "([^"]+)"', line)
            if not m:
                continue
            dir_fd, temporary, name = m.groups()
            renamed.append(os.path.basename(name))
            [opened] = [j for j in range(i) if re.match(r'openat\((\d+|AT_FDCWD), "(?:[^"]*/)?%s", .*\) = \d+$' % re.escape(temporary),
                                                         lines[j])]
            fd = re.search(r"= (\d+)$", lines[opened]).group(1)
            self.assertTrue(any(re.match(r"f(data)?sync\(%s\)\s*= 0" % fd, l) for l in lines[opened:i]),
                            "%s renamed without an fsync of its content:\n%s" % (name, "".join(lines[opened:i + 1])))
            self.assertTrue(any(re.match(r"fsync\(%s\)\s*= 0" % dir_fd, l) for l in lines[i + 1:]),
                            "%s renamed without an fsync of its directory" % name)
        return renamed

    def one_process_on_the_default_socket(self, runtime_name, output_dir, pid, host):
        """Runs `gapwatch collector --output-dir output_dir --exit-when-idle` with a fresh 0700
        XDG_RUNTIME_DIR, streams one process's Hello and Goodbye to its default socket, and returns
        the socket's path once the collector has exited 0."""
        runtime = os.path.join(self.dir, runtime_name)
        os.mkdir(runtime, 0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
        p = subprocess.Popen([gwtest.GAPWATCH, "collector", "--output-dir", output_dir, "--exit-when-idle"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        sock = os.path.join(runtime, "gapwatch", "collector.sock")
        deadline = time.monotonic() + HANG
        while not os.path.exists(sock) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        s.sendall(hello(pid, host) + goodbye())
        s.close()
        _, err = p.communicate(timeout=HANG)
        self.assertEqual(p.returncode, 0, err)
        return sock

    def test_default_socket_is_in_xdg_runtime_dir(self):
        sock = self.one_process_on_the_default_socket("xdg", self.dir, 935, "xdg")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode), 0o700)
        self.assertTrue(os.path.isfile(os.path.join(self.dir, "gapwatch-xdg-935.gwt")))

    def test_a_missing_output_directory_is_made_0700_with_its_parents(self):
        out = os.path.join(self.dir, "new", "recs")
        self.one_process_on_the_default_socket("xdg-mk", out, 936, "mk")
        for d in (out, os.path.dirname(out)):
            self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o700, d)
        self.assertTrue(os.path.isfile(os.path.join(out, "gapwatch-mk-936.gwt")))

    def test_an_output_directory_that_cannot_be_made_is_refused_in_one_line(self):
        blocker = os.path.join(self.dir, "a-file")
        open(blocker, "w").close()
        for out, why in ((blocker, "it exists and is not a directory"),
                         (os.path.join(blocker, "recs"), "Not a directory")):
            with self.subTest(out=out):
                r = subprocess.run([gwtest.GAPWATCH, "collector", "--output-dir", out, "--socket",
                                    os.path.join(self.dir, "never.sock")], capture_output=True, text=True, timeout=HANG)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stderr, "gapwatch collector: cannot create output directory %s: %s\n" % (out, why))

    def test_a_process_finds_the_default_collector_by_itself(self):
        # Neither GAPWATCH_SOCKET nor GAPWATCH_OUTPUT: the library looks for the collector at the
        # default socket, the same place the collector makes by default.
        runtime = os.path.join(self.dir, "xdg2")
        os.mkdir(runtime, 0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
        out = os.path.join(self.dir, "found")
        os.mkdir(out)
        p = subprocess.Popen([gwtest.GAPWATCH, "collector", "--output-dir", out, "--exit-when-idle"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        sock = os.path.join(runtime, "gapwatch", "collector.sock")
        deadline = time.monotonic() + HANG
        while not os.path.exists(sock) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        scenario = os.path.join(gwtest.SCENARIOS, "healthy.json")
        r = gwtest.run([gwtest.SIM, scenario, "--quiet"], gwtest.gapwatch_env("preload", extra={"XDG_RUNTIME_DIR": runtime}),
                       cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, err = p.communicate(timeout=HANG)
        self.assertEqual(p.returncode, 0, err)
        [streamed] = glob.glob(os.path.join(out, "*.gwt"))
        events = gwtest.dump(streamed)
        [bye] = [e for e in events if e["type"] == "goodbye"]
        counts = type_counts(events)
        self.assertEqual(counts.get("api_call", 0), bye["api_calls"])
        self.assertEqual(counts.get("activity", 0), bye["activities"])
        self.assertFalse(glob.glob(os.path.join(self.dir, "gapwatch-*.gwt")), "no local file was written")

    def test_exit_when_idle_waits_for_a_first_process(self):
        collector = Collector(self.dir, "--exit-when-idle")
        time.sleep(1)
        self.assertIsNone(collector.proc.poll(), "exited before any process connected")
        self.good_client(collector, 930)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0)

    def test_socket_directory_rules(self):
        def start(sock):
            return subprocess.run([gwtest.GAPWATCH, "collector", "--socket", sock, "--output-dir", self.dir,
                                   "--exit-when-idle"], capture_output=True, text=True, timeout=HANG)

        open_dir = os.path.join(self.dir, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o755)
        r = start(os.path.join(open_dir, "c.sock"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has permissions 0755, not 0700", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

        private = os.path.join(self.dir, "private")
        os.mkdir(private, 0o700)
        link = os.path.join(self.dir, "link")
        os.symlink(private, link)
        r = start(os.path.join(link, "c.sock"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("is a symlink", r.stderr)

        if os.geteuid() == 0:
            theirs = os.path.join(self.dir, "theirs")
            os.mkdir(theirs, 0o700)
            os.chown(theirs, 65534, 65534)
            r = start(os.path.join(theirs, "c.sock"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("belongs to uid 65534", r.stderr)

        # A missing directory is created 0700, whatever the umask.
        os.makedirs(os.path.join(self.dir, "w1", "out"))
        old = os.umask(0o277)
        try:
            collector = Collector(os.path.join(self.dir, "w1"))
        finally:
            os.umask(old)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(collector.socket)).st_mode), 0o700)

        # A live socket means another collector; a stale one is replaced.
        r = start(collector.socket)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("another collector is listening on " + collector.socket, r.stderr)
        collector.proc.send_signal(signal.SIGKILL)
        collector.proc.wait(timeout=HANG)
        self.assertTrue(os.path.exists(collector.socket))
        again = Collector(os.path.join(self.dir, "w1"))
        self.assertIn("replaced the stale socket", again.log())
        self.good_client(again, 940)
        self.assertEqual(again.stop(), 0)

        # Something else at the socket's path is never removed.
        plain = os.path.join(private, "c.sock")
        open(plain, "w").close()
        r = start(plain)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("exists and is not a socket", r.stderr)
        self.assertTrue(os.path.isfile(plain))

    def test_planted_symlink_is_not_followed_and_names_are_sanitised(self):
        collector = Collector(self.dir)
        target = os.path.join(self.dir, "victim")
        with open(target, "w") as f:
            f.write("untouched")
        planted = os.path.join(collector.output, "gapwatch-evil_.._host-950.gwt")
        os.symlink(target, planted)
        s = collector.connect()
        s.sendall(hello(950, "evil/../host") + goodbye())
        s.close()
        collector.wait_log("closed (ended)")
        long = collector.connect()
        long.sendall(hello(951, "x" * 300 + "\n/") + goodbye())
        long.close()
        collector.wait_log("closed (ended)", count=2)
        self.assertEqual(collector.stop(), 0)
        with open(target) as f:
            self.assertEqual(f.read(), "untouched")
        self.assertTrue(os.path.islink(planted))
        written = os.path.join(collector.output, "gapwatch-evil_.._host-950-1.gwt")
        self.assertTrue(os.path.isfile(written) and not os.path.islink(written))
        self.assertEqual(frames(written), (1, 1))
        self.assertTrue(os.path.isfile(os.path.join(collector.output, "gapwatch-%s-951.gwt" % ("x" * 64))))

    @unittest.skipUnless(os.geteuid() == 0, "needs root to become another user")
    def test_status_stream_shows_each_process_as_its_report_does(self):
        collector = Collector(self.dir)
        env = gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket})
        r = gwtest.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, "nccl-bound.json"), "--quiet"], env)
        self.assertEqual(r.returncode, 0, r.stderr)
        collector.wait_log("closed (ended)", 2)
        watcher = collector.connect()
        watcher.sendall(frame(5, b""))  # Frame.status_request
        watcher.settimeout(HANG)
        lines = b""
        while lines.count(b"\n") < 2:  # the first at once, the next a second later
            chunk = watcher.recv(65536)
            self.assertTrue(chunk, "the collector closed the status stream")
            lines += chunk
        first, second = [json.loads(l) for l in lines.split(b"\n")[:2]]
        self.assertEqual(first["version"], 2)
        self.assertGreater(second["uptime_ns"], first["uptime_ns"])
        self.assertEqual([p["rank"] for p in first["processes"]], [0, 1])
        for p in first["processes"]:
            self.assertEqual(p["state"], "ended")
            with open(os.path.join(collector.output, p["file"][:-len(".gwt")] + ".report.json")) as f:
                [reported] = json.load(f)["processes"]
            devices = reported["devices"]
            self.assertEqual(p["idle_ns"], sum(d["idle_ns"] for d in devices))
            for cause, ns in p["idle_by_cause_ns"].items():
                self.assertEqual(ns, sum(d["idle_by_cause"][cause] for d in devices), cause)
            # The top finding is the one the process's report ranks first (its verdict's), not the
            # cause with the most idle time.
            top = reported["findings"][0] if reported["findings"] else None
            self.assertEqual(p["top_finding"] and p["top_finding"]["id"], top and top["id"])
            if top:
                self.assertEqual(p["top_finding"]["title"], top["title"])
                self.assertEqual(p["top_finding"]["cause"], top["cause"])
                self.assertEqual(p["top_finding"]["python_site"], top["python_site"])
            self.assertGreater(p["events"], 0)
        self.assertNotIn("refused", collector.log())
        watcher.close()
        self.assertEqual(collector.stop(), 0)
        self.assertEqual(len(collector.recordings()), 2, "a watcher gets no recording")

    def test_peer_of_another_uid_is_refused(self):
        collector = Collector(self.dir)
        child = os.fork()
        if child == 0:
            code = 1
            try:
                # Effective uid 65534 (what SO_PEERCRED reports); file-system uid back to 0 so that
                # the 0700 socket directory can still be entered.
                os.setresuid(0, 65534, 0)
                ctypes.CDLL(None, use_errno=True).setfsuid(0)
                s = collector.connect()
                try:
                    s.sendall(hello(960, "intruder") + goodbye())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # refused before the bytes went out
                wait_closed(s)
                code = 0
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        collector.wait_log("refused: peer uid 65534 is not this collector's uid 0")
        self.good_client(collector, 961)
        self.assertEqual(collector.stop(), 0)
        self.assertEqual([os.path.basename(f) for f in collector.recordings()], ["gapwatch-goodhost-961.gwt"])


if __name__ == "__main__":
    gwtest.main(__name__)
