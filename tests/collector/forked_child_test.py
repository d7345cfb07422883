"""A traced process that forked a long-lived child (issue 21, item 4): once the process has sent
its Goodbye and exited, the collector shows it ended and --exit-when-idle stops, while the child
still lives. Both sides: the child does not keep the parent's connection (the library closes its
copy at fork), and a process that said Goodbye is ended even if its connection stays open.

Timeouts only bound a hang; nothing here asserts how fast anything is."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402
from collector_test import HANG, Collector, goodbye, hello  # noqa: E402

SLEEPER = os.path.join(gwtest.BUILD, "bin", "forks_a_sleeper")


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def sockets_held(pid):
    """The socket descriptors `pid` holds (the sleeper opens none of its own)."""
    held = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except FileNotFoundError:
            continue
        if target.startswith("socket:"):
            held.append((fd, target))
    return held


def watch_once(collector):
    r = subprocess.run([gwtest.GAPWATCH, "watch", "--socket", collector.socket, "--once"], capture_output=True,
                       text=True, timeout=HANG)
    if r.returncode != 0:
        raise AssertionError("gapwatch watch failed: " + r.stderr)
    return r.stdout


def wait_status(collector, text):
    deadline = time.monotonic() + HANG
    while True:
        out = watch_once(collector)
        if text in out:
            return out
        if time.monotonic() > deadline:
            raise AssertionError("the status never said %r: %s\n%s" % (text, out, collector.log()))
        time.sleep(0.2)


class ForkedChildTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.children = []

    def tearDown(self):
        for pid in self.children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.tmp.cleanup()

    def run_sleeper(self, collector):
        env = gwtest.gapwatch_env("preload", extra={"GAPWATCH_SOCKET": collector.socket})
        r = gwtest.run([SLEEPER, "600"], env, cwd=self.dir, timeout=HANG)
        child = int(r.stdout.split()[1]) if r.stdout.startswith("child ") else 0
        if child:
            self.children.append(child)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(child, r.stdout)
        return r.stderr, child

    def test_the_forked_child_holds_no_socket_of_its_parent(self):
        # The library's side alone: the child's copy of the connection is closed at the fork.
        collector = Collector(self.dir)
        _, child = self.run_sleeper(collector)
        self.assertTrue(alive(child))
        self.assertEqual(sockets_held(child), [])
        self.assertEqual(collector.stop(), 0)

    def test_the_forked_child_holds_no_descriptor_of_its_parents_file(self):
        # Recording to a file: the child's copy (and with it the file's lock) is closed too.
        out = os.path.join(self.dir, "parent.gwt")
        r = gwtest.run([SLEEPER, "600"], gwtest.gapwatch_env("preload", out), cwd=self.dir, timeout=HANG)
        child = int(r.stdout.split()[1]) if r.stdout.startswith("child ") else 0
        if child:
            self.children.append(child)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(alive(child))
        held = [fd for fd in os.listdir("/proc/%d/fd" % child)
                if os.path.realpath("/proc/%d/fd/%s" % (child, fd)) == os.path.realpath(out)]
        self.assertEqual(held, [])

    def test_exit_when_idle_does_not_wait_for_the_forked_child(self):
        collector = Collector(self.dir, "--exit-when-idle")
        stderr, child = self.run_sleeper(collector)
        self.assertIn("streamed", stderr)
        self.assertEqual(collector.proc.wait(timeout=HANG), 0, collector.log())
        self.assertTrue(alive(child), "the child was to outlive the collector's stop")
        log = collector.log()
        self.assertIn("closed (ended)", log)
        self.assertIn("--exit-when-idle", log)
        [recording] = collector.recordings()
        self.assertEqual([e["type"] for e in gwtest.dump(recording)].count("goodbye"), 1)

    def test_goodbye_ends_a_process_whose_connection_stays_open(self):
        # The collector's side alone: a peer that said Goodbye but keeps the connection open (as
        # a child holding a copy of it would) is ended, in the status and for --exit-when-idle.
        collector = Collector(self.dir)
        held = collector.connect()
        held.sendall(hello(4242, "heldopen") + goodbye())
        out = wait_status(collector, "1 process (0 running, 1 ended)")
        self.assertIn("4242", out)
        held.close()
        self.assertEqual(collector.stop(), 0)

        idle = Collector(self.dir, "--exit-when-idle")
        held = idle.connect()
        held.sendall(hello(4343, "heldopen") + goodbye())
        self.assertEqual(idle.proc.wait(timeout=HANG), 0, idle.log())
        held.close()


if __name__ == "__main__":
    gwtest.main(__name__)
