"""`gapwatch watch`, the live view of a collector: piped (plain blocks) while a two-rank job runs,
agreeing with the collector's end-of-run report once it has ended; in a real terminal (tmux),
redrawn in place and the terminal given back on Ctrl-C; and against peers that are not a
collector (none, garbage, one that closes, one that says nothing).

Timeouts only bound a hang; nothing here asserts how fast anything is."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interpose"))
import gwtest  # noqa: E402
from collector_test import Collector, HANG  # noqa: E402

LONG_JOB = os.path.join(HERE, "scenarios", "watch-long.json")  # two ranks, about 10 s
# Causes in the analysis's order (analysis/idle_cause.h): process_summary.cpp gives a tie to the first.
CAUSES = ["host_cpu", "launch_overhead", "sync_copy", "cuda_api", "nccl_host", "dependency"]
FINDING_ID = r"^[a-z][a-z_]*$"  # a finding's id (docs/report-json.md), whichever the diagnosis makes
# The StatusRequest frame, byte by byte: length 2, Frame field 5 (length-delimited), empty message.
STATUS_REQUEST = b"\x02\x2a\x00"

PROCESS_LINE = re.compile(r"^  rank (?P<rank>\S+)  pid (?P<pid>\d+)  (?P<state>running|ended)  idle (?P<idle>\S+)"
                          r"  top (?P<top>\S+)  step (?P<step>.+?)  syncs/step (?P<syncs>\S+)  launches (?P<launches>\S+)"
                          r"  nccl (?P<nccl>.+?)  events (?P<events>\S+)  drops (?P<drops>\S+)$")


def sim_env(collector):
    return gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket})


class Watcher:
    """`gapwatch watch` with its stdout on a pipe, read line by line as it comes."""

    def __init__(self, socket_path, *args):
        self.proc = subprocess.Popen([gwtest.GAPWATCH, "watch", "--socket", socket_path] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def blocks(self):
        """The complete blocks so far: (header, [process dicts], node line)."""
        with self.lock:
            lines = list(self.lines)
        out, current = [], None
        for line in lines:
            if not line.startswith("  "):
                current = [line, [], None]
            elif current is not None and line.startswith("  node  "):
                current[2] = line
                out.append(tuple(current))
                current = None
            elif current is not None:
                m = PROCESS_LINE.match(line)
                if m:
                    current[1].append(m.groupdict())
        return out

    def wait_block(self, predicate, what):
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            for block in reversed(self.blocks()):
                if predicate(block):
                    return block
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("watch never showed %s: %s" % (what, "\n".join(self.lines[-30:])))

    def finish(self):
        self.proc.wait(timeout=HANG)
        self.reader.join(timeout=HANG)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, err


def report_summary(process):
    """(idle %, top finding) of a process of the collector's report JSON: idle summed over its
    devices as analysis/process_summary.cpp sums it, and the id of the finding its report ranks
    first (the one its verdict names), "-" without one."""
    window = sum(d["window_ns"] for d in process["devices"])
    idle = sum(d["idle_ns"] for d in process["devices"])
    top = process["findings"][0]["id"] if process["findings"] else "-"
    return ("%.1f%%" % (100.0 * idle / window) if window else "-"), top


class WatchLiveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_piped_view_shows_causes_live_and_ends_as_the_report(self):
        collector = Collector(self.dir)
        watcher = Watcher(collector.socket)
        # The first status comes at once, before any process has connected.
        first = watcher.wait_block(lambda b: True, "a first status")
        self.assertIn("collector %s: up " % collector.socket, first[0])
        self.assertRegex(first[0], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d ")
        sim = subprocess.Popen([gwtest.SIM, LONG_JOB, "--quiet"], env=sim_env(collector),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # While the job runs: each rank, still running, with a cause for its idle time. A
        # "running" line was sent before that process ended, whatever the machine's speed.
        live = {}

        def both_ranks_live(block):
            for p in block[1]:
                if p["state"] == "running" and p["top"] != "-" and p["idle"] != "-":
                    live.setdefault(p["rank"], p)
            return {"0", "1"} <= set(live)

        watcher.wait_block(both_ranks_live, "both ranks running with a top finding")
        self.assertRegex(live["0"]["top"], FINDING_ID)
        self.assertRegex(live["1"]["top"], FINDING_ID)
        _, err = sim.communicate(timeout=HANG * 3)
        self.assertEqual(sim.returncode, 0, err)
        last = watcher.wait_block(lambda b: len(b[1]) == 2 and all(p["state"] == "ended" for p in b[1]),
                                  "both ranks ended")
        self.assertIn("2 processes (0 running, 2 ended)", last[0])
        self.assertEqual(collector.stop(), 0, collector.log())
        code, err = watcher.finish()
        self.assertEqual(code, 0, err)
        self.assertEqual(err, "")
        self.assertEqual(watcher.lines[-1],
                         "gapwatch watch: the collector at %s closed the connection (it stopped)" % collector.socket)
        # The last status of an ended process is its final analysis: the run report's numbers.
        final = watcher.blocks()[-1]
        self.assertEqual([p["state"] for p in final[1]], ["ended", "ended"])
        with open(os.path.join(collector.output, "gapwatch-report.json")) as f:
            report = json.load(f)
        by_rank = {str(p["rank"]): p for p in report["processes"]}
        self.assertEqual(sorted(by_rank), ["0", "1"])
        for p in final[1]:
            idle, top = report_summary(by_rank[p["rank"]])
            self.assertEqual((p["idle"], p["top"]), (idle, top), "rank %s" % p["rank"])
            self.assertEqual(int(p["pid"]), by_rank[p["rank"]]["pid"])
        self.assertNotEqual(final[1][0]["top"], "-")

    def test_once_prints_one_status_and_exits(self):
        collector = Collector(self.dir)
        r = subprocess.run([gwtest.GAPWATCH, "watch", "--socket", collector.socket, "--once"],
                           capture_output=True, text=True, timeout=HANG)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 3, r.stdout)
        self.assertIn("0 processes (0 running, 0 ended)", lines[0])
        self.assertEqual(lines[1], "  no process has connected yet")
        self.assertNotIn("\x1b", r.stdout)
        self.assertEqual(collector.stop(), 0)


@unittest.skipUnless(shutil.which("tmux"), "tmux is not installed (scripts/setup.sh installs it)")
class WatchTerminalTest(unittest.TestCase):
    """In a real terminal: tmux on a private server (-L), so no other session is touched."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.server = "gapwatch-watch-test-%d" % os.getpid()
        self.env = dict(os.environ, TERM="xterm-256color")

    def tearDown(self):
        subprocess.run(["tmux", "-L", self.server, "kill-server"], capture_output=True, env=self.env, timeout=HANG)
        self.tmp.cleanup()

    def tmux(self, *args):
        r = subprocess.run(["tmux", "-L", self.server] + list(args), capture_output=True, text=True, env=self.env,
                           timeout=HANG)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def capture(self, session="watch"):
        return self.tmux("capture-pane", "-p", "-t", session)

    def wait_capture(self, predicate, what, session="watch"):
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            screen = self.capture(session)
            if predicate(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError("the pane never showed %s:\n%s" % (what, self.capture(session)))

    def start_watch(self, collector, session="watch"):
        # The shell catches SIGINT itself (a handler, which exec resets for watch) so that it lives
        # on after Ctrl-C and says how watch ended and what the terminal's modes are.
        script = ("trap true INT; %s watch --socket %s; echo \"watch exited $?\"; "
                  "echo \"modes: $(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | "
                  "tr '\\n' ' ')\"; exec sleep %d" % (gwtest.GAPWATCH, collector.socket, HANG * 10))
        self.tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "40", "sh", "-c", script)

    def screen_modes(self, session="watch"):
        """[alternate screen on, cursor shown] of the pane, as tmux says."""
        return self.tmux("display-message", "-p", "-t", session, "#{alternate_on} #{cursor_flag}").split()

    def test_redrawn_in_place_and_the_terminal_given_back_on_ctrl_c(self):
        collector = Collector(self.dir)
        sim = subprocess.Popen([gwtest.SIM, LONG_JOB, "--quiet"], env=sim_env(collector),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.start_watch(collector)
        rows = re.compile(r"^(?P<rank>\d+)\s+\d+\s+running\s+\d+\.\d% \[[# ]{10}\] (?P<top>\S+)", re.M)

        def ranks_with_causes(screen):
            found = {m.group("rank"): m.group("top") for m in rows.finditer(screen)}
            return set(found) == {"0", "1"} and all(re.fullmatch(FINDING_ID, t) for t in found.values())

        screen = self.wait_capture(ranks_with_causes, "both ranks running with a top finding")
        self.assertIn("gapwatch watch  collector %s" % collector.socket, screen)
        self.assertIn("RANK  PID", screen)
        self.assertRegex(screen, r"(?m)^node\s+\d+\.\d%")
        self.assertIn("q or Ctrl-C: quit", screen)
        uptime = re.compile(r"  up (.+?)  \d+ process")
        first = uptime.search(screen).group(1)
        self.wait_capture(lambda s: uptime.search(s) is not None and uptime.search(s).group(1) != first,
                          "a refresh (the uptime moving on from %s)" % first)
        # Drawn on the alternate screen with the cursor hidden...
        self.assertEqual(self.screen_modes(), ["1", "0"])
        self.tmux("send-keys", "-t", "watch", "C-c")
        screen = self.wait_capture(lambda s: "modes: " in s, "watch ending")
        # ...and given back: normal screen, cursor shown, line editing and echo on again.
        self.assertIn("watch exited 0", screen)
        self.assertIn("modes: icanon echo", screen)
        self.assertEqual(self.screen_modes(), ["0", "1"])
        # The last picture stays on the normal screen, without the key hint.
        self.assertRegex(screen, r"(?m)^[01]\s+\d+\s+running")
        self.assertNotIn("q or Ctrl-C: quit", screen)
        _, err = sim.communicate(timeout=HANG * 3)
        self.assertEqual(sim.returncode, 0, err)
        self.assertEqual(collector.stop(), 0)

    def test_q_ends_it_and_so_does_the_collector_stopping(self):
        collector = Collector(self.dir)
        self.start_watch(collector)
        self.wait_capture(lambda s: "0 processes (0 running, 0 ended)" in s, "the view")
        self.assertEqual(self.screen_modes(), ["1", "0"])
        self.tmux("send-keys", "-t", "watch", "q")
        screen = self.wait_capture(lambda s: "modes: " in s, "watch ending on q")
        self.assertIn("watch exited 0", screen)
        self.assertIn("modes: icanon echo", screen)
        self.assertEqual(self.screen_modes(), ["0", "1"])

        self.start_watch(collector, "again")
        self.wait_capture(lambda s: "no process has connected yet" in s, "the view", "again")
        self.assertEqual(collector.stop(), 0)
        screen = self.wait_capture(lambda s: "modes: " in s, "watch ending with the collector", "again")
        self.assertIn("gapwatch watch: the collector at %s closed the connection (it stopped)" % collector.socket,
                      screen)
        self.assertIn("watch exited 0", screen)
        self.assertIn("modes: icanon echo", screen)
        self.assertEqual(self.screen_modes("again"), ["0", "1"])


class FakePeer:
    """A Unix socket server that is not a collector: `serve(conn)` decides what it does."""

    def __init__(self, workdir, serve):
        os.makedirs(os.path.join(workdir, "fake"), mode=0o700, exist_ok=True)
        self.path = os.path.join(workdir, "fake", "peer.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(4)
        self.received = b""
        self.thread = threading.Thread(target=self._run, args=(serve,), daemon=True)
        self.thread.start()

    def _run(self, serve):
        conn, _ = self.listener.accept()
        with conn:
            serve(self, conn)

    def read_request(self, conn):
        conn.settimeout(HANG)
        while len(self.received) < len(STATUS_REQUEST):
            chunk = conn.recv(64)
            if not chunk:
                break
            self.received += chunk

    def close(self):
        self.thread.join(timeout=HANG)
        self.listener.close()


def watch(socket_path, *args):
    return subprocess.run([gwtest.GAPWATCH, "watch", "--socket", socket_path] + list(args), capture_output=True,
                          text=True, timeout=HANG)


def until_closed(conn):
    conn.settimeout(HANG)
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass


class WatchBadPeerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def one_line_failure(self, r, *parts):
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        for part in parts:
            self.assertIn(part, r.stderr)

    def test_no_collector_at_the_socket(self):
        missing = os.path.join(self.dir, "none", "c.sock")
        self.one_line_failure(watch(missing), "cannot connect to " + missing, "no such socket")
        plain = os.path.join(self.dir, "plain.sock")
        open(plain, "w").close()
        self.one_line_failure(watch(plain), "cannot connect to " + plain, "connection refused")
        # A socket whose collector died: the file is left, nobody listens.
        dead = os.path.join(self.dir, "dead.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(dead)
        s.close()
        self.one_line_failure(watch(dead), "cannot connect to " + dead, "no collector is listening there")

    @unittest.skipUnless(os.geteuid() == 0, "needs root to become another user")
    def test_a_collector_of_another_user(self):
        collector = Collector(self.dir)  # its socket's directory is 0700, root's
        # A copy of the binary that user may run: the build tree may sit in a directory only root
        # can enter (a clone in a mktemp -d directory, 0700).
        binary_dir = tempfile.mkdtemp()
        try:
            os.chmod(binary_dir, 0o755)
            binary = os.path.join(binary_dir, "gapwatch")
            shutil.copy(gwtest.GAPWATCH, binary)
            os.chmod(binary, 0o755)
            r = subprocess.run([binary, "watch", "--socket", collector.socket], user=65534, capture_output=True,
                               text=True, timeout=HANG)
        finally:
            shutil.rmtree(binary_dir)
        self.one_line_failure(r, "cannot connect to " + collector.socket, "permission denied")
        self.assertEqual(collector.stop(), 0)

    def test_a_peer_that_sends_garbage(self):
        for garbage, reason in ((b"garbage, not JSON\n", "(not JSON)"), (bytes(range(256)) * 8, "(not JSON)"),
                                (b"{}\n", "(version is missing)"),
                                (b'{"version":1,"uptime_ns":"soon"}\n', "(uptime_ns is not a whole number >= 0)")):
            def serve(peer, conn, garbage=garbage):
                peer.read_request(conn)
                conn.sendall(garbage)
                until_closed(conn)

            peer = FakePeer(self.dir, serve)
            r = watch(peer.path)
            peer.close()
            os.unlink(peer.path)
            self.one_line_failure(r, peer.path, "is not a collector status " + reason)
            self.assertEqual(peer.received, STATUS_REQUEST)

    def test_a_peer_that_closes_at_once(self):
        peer = FakePeer(self.dir, lambda peer, conn: None)
        r = watch(peer.path)
        peer.close()
        # It may close before or after the request is sent: either way one line naming the socket.
        self.one_line_failure(r, "gapwatch watch: " + peer.path + ": ")
        self.assertTrue("without sending a status" in r.stderr or "cannot send the status request" in r.stderr,
                        r.stderr)

    def test_a_peer_that_says_nothing(self):
        # An older collector that does not know StatusRequest and keeps the connection open.
        def serve(peer, conn):
            peer.read_request(conn)
            until_closed(conn)

        peer = FakePeer(self.dir, serve)
        r = watch(peer.path)
        peer.close()
        self.one_line_failure(r, peer.path, "no status within 5 s")
        self.assertEqual(peer.received, STATUS_REQUEST)


if __name__ == "__main__":
    gwtest.main(__name__)
