"""`gapwatch profile -- CMD`: a private collector, the traced job, its report and its exit code.

What "prints the same report as recording and reporting in two steps" is checked as: two runs of
the simulator differ in pids and host timing (a recording has real timestamps), so the report of a
second, separate run recorded with GAPWATCH_OUTPUT cannot match byte for byte. So profile's stdout
is compared with `gapwatch report` of the recordings profile left in D (run in D, the files in the
collector's order: by rank, then pid, as its run report lists them), as text and as --json; and
with the collector's report files D/gapwatch-report.txt and .json, which profile prints. Each of
those recordings is checked to hold every event its process sent (the counts in its Goodbye),
which is what a file recording holds (collector_test compares a streamed recording with a file
one event by event).

Every test runs with XDG_RUNTIME_DIR set to a directory of its own, so the private socket
directories profile makes there can be seen to be gone afterwards. Timeouts only bound a hang;
nothing here asserts how fast anything is."""
import glob
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

HANG = 120  # seconds: bounds a run that hangs, never a measurement
PYTHON = sys.executable


def scenario(name):
    return os.path.join(gwtest.SCENARIOS, name + ".json")


def read(path):
    with open(path) as f:
        return f.read()


class ProfileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.runtime = os.path.join(self.dir, "runtime")
        os.mkdir(self.runtime, 0o700)
        # GAPWATCH_OUTPUT set on purpose: profile must take it out of the job's environment.
        self.stray = os.path.join(self.dir, "stray.gwt")
        self.env = gwtest.gapwatch_env(None, extra={"XDG_RUNTIME_DIR": self.runtime, "GAPWATCH_OUTPUT": self.stray})

    def tearDown(self):
        left = os.listdir(self.runtime)
        self.tmp.cleanup()
        self.assertEqual(left, [], "profile left its socket directory behind")

    def profile(self, args, env=None, cwd=None):
        return subprocess.run([gwtest.GAPWATCH, "profile"] + args, env=env or self.env, cwd=cwd or self.dir,
                              capture_output=True, text=True, timeout=HANG * 3)

    def recordings(self, out):
        return sorted(glob.glob(os.path.join(out, "*.gwt")))

    def report(self, out, *args):
        """The second of the two steps: `gapwatch report` in D of the recordings there."""
        def order(path):
            m = re.search(r"-(\d+)(?:-rank(\d+))?\.gwt$", path)
            return (m.group(2) is None, int(m.group(2) or 0), int(m.group(1)), path)
        names = [os.path.basename(f) for f in sorted(self.recordings(out), key=order)]
        self.assertGreaterEqual(len(names), 1)
        r = subprocess.run([gwtest.GAPWATCH, "report"] + list(args) + names, cwd=out, capture_output=True, text=True,
                           timeout=HANG)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def assert_complete(self, path):
        """Every event the process sent is in its recording, and it ended with a Goodbye."""
        events = gwtest.dump(path)
        byes = [e for e in events if e["type"] == "goodbye"]
        self.assertEqual(len(byes), 1, path)
        counts = {}
        for e in events:
            counts[e["type"]] = counts.get(e["type"], 0) + 1
        for kind, total in (("api_call", "api_calls"), ("activity", "activities"), ("nccl_call", "nccl_calls"),
                            ("marker", "markers")):
            self.assertEqual(counts.get(kind, 0), byes[0][total], "%s: %s" % (path, kind))
        self.assertGreater(counts.get("api_call", 0), 0, path)
        return byes[0]

    def assert_last_line(self, r, out, stderr=None):
        stderr = r.stderr if stderr is None else stderr
        self.assertEqual(stderr.splitlines()[-1], "gapwatch profile: recordings and report in " + out, stderr)

    def assert_one_line(self, r):
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("gapwatch"), r.stderr)

    # 1. The report is that of the recordings it leaves.

    def test_every_scenario_reports_its_own_recordings(self):
        names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(gwtest.SCENARIOS, "*.json")))
        self.assertGreaterEqual(len(names), 1)
        for name in names:
            with self.subTest(scenario=name):
                out = "out-" + name  # relative, as a user would give it
                r = self.profile(["-o", out, "--", gwtest.SIM, scenario(name), "--quiet"])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assert_last_line(r, out)
                out = os.path.join(self.dir, out)
                files = self.recordings(out)
                self.assertGreaterEqual(len(files), 1)
                for f in files:
                    self.assert_complete(f)
                self.assertEqual(r.stdout, self.report(out))
                self.assertEqual(r.stdout, read(os.path.join(out, "gapwatch-report.txt")))
                self.assertIn("GPU idle", r.stdout)
                self.assertNotIn("\x1b", r.stdout)  # not a terminal: no colour
        self.assertFalse(os.path.exists(self.stray), "GAPWATCH_OUTPUT reached the job")

    def test_html_puts_the_run_reports_page_where_asked(self):
        # The collector writes the run's HTML report beside its text and JSON; --html puts a copy
        # where it is asked for (issue 22). The page's checks are html_report_test.py's.
        out, page = os.path.join(self.dir, "html-run"), os.path.join(self.dir, "run.html")
        r = self.profile(["-o", out, "--html", page, "--", gwtest.SIM, scenario("nccl-bound"), "--quiet"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_last_line(r, out)
        self.assertEqual(read(page), read(os.path.join(out, "gapwatch-report.html")))
        self.assertTrue(read(page).startswith("<!DOCTYPE html>"))
        self.assertIn("GPU idle", read(page))
        self.assertIn("Ranks", read(page))  # nccl-bound runs two ranks
        # A --html that cannot be written is refused before the job runs (issue 37, item 2): a job
        # of hours must not end in "cannot write"; exit 4, one line, no output directory made.
        bad = self.profile(["-o", out + "-2", "--html", os.path.join(self.dir, "no", "such", "dir", "r.html"), "--",
                            gwtest.SIM, scenario("healthy"), "--quiet"])
        self.assertEqual(bad.returncode, 4, bad.stderr)
        self.assertEqual(bad.stderr.splitlines(), ["gapwatch profile: --html " +
                                                   os.path.join(self.dir, "no", "such", "dir", "r.html") +
                                                   ": no such directory: " + os.path.join(self.dir, "no", "such", "dir")])
        self.assertFalse(os.path.exists(out + "-2"))

    def test_watch_shows_the_job_live_then_the_report(self):
        out = os.path.join(self.dir, "watched")
        r = self.profile(["--watch", "-o", out, "--", gwtest.SIM, scenario("nccl-bound"), "--quiet"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_last_line(r, out)
        # stdout is not a terminal: it carries the report alone, the same as without --watch; the
        # view's plain blocks, then the line of the collector stopping, go to stderr.
        self.assertEqual(r.stdout, self.report(out))
        view, stopped, _ = r.stderr.partition("gapwatch watch: the collector at ")
        self.assertTrue(stopped, r.stderr)
        self.assertIn(" collector ", view.splitlines()[0])
        last_block = view[view.rindex("\n20"):]  # blocks begin with a timestamp
        self.assertIn("  rank 0  ", last_block)
        self.assertIn("  rank 1  ", last_block)
        self.assertEqual(last_block.count(" ended "), 2, last_block)

    def test_watch_with_json_keeps_stdout_valid_json(self):
        """Issue 21, item 9: `gapwatch profile --watch --json > out.json` wrote the live view's
        blocks and its closing line into the JSON on stdout. The view goes where a person looks
        (stderr, when stdout is not a terminal); stdout is the report's JSON document alone."""
        out = os.path.join(self.dir, "watched-json")
        r = self.profile(["--watch", "--json", "-o", out, "--", gwtest.SIM, scenario("nccl-bound"), "--quiet"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_last_line(r, out)
        document = json.loads(r.stdout)  # the whole of stdout, nothing before or after
        self.assertEqual(r.stdout, read(os.path.join(out, "gapwatch-report.json")))
        self.assertEqual(len(document["inputs"]), 2)
        self.assertIn("gapwatch watch: the collector at ", r.stderr)

    def test_json_report_is_that_of_its_recordings(self):
        for name in ("data-bound", "nccl-bound"):
            with self.subTest(scenario=name):
                out = os.path.join(self.dir, "json-" + name)
                r = self.profile(["--json", "-o", out, "--", gwtest.SIM, scenario(name), "--quiet"])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assert_last_line(r, out)
                self.assertEqual(r.stdout, self.report(out, "--json"))
                self.assertEqual(r.stdout, read(os.path.join(out, "gapwatch-report.json")))
                document = json.loads(r.stdout)
                files = self.recordings(out)
                self.assertEqual(sorted(i["file"] for i in document["inputs"]), [os.path.basename(f) for f in files])
                self.assertEqual([i["status"] for i in document["inputs"]], ["ok"] * len(files))

    def test_default_directory_and_environment(self):
        """No -o: gapwatch-profile-<stamp> in the current directory. The job gets the library first
        in LD_PRELOAD (before what was there), the private socket, and no GAPWATCH_OUTPUT."""
        env = dict(self.env, LD_PRELOAD="libc.so.6")
        r = self.profile(["--", "sh", "-c", 'printf "%s\\n%s\\n%s\\n" "$LD_PRELOAD" "$GAPWATCH_SOCKET" '
                          '"${GAPWATCH_OUTPUT-unset}"'], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        preload, sock, output = r.stdout.splitlines()
        self.assertEqual(preload, os.path.realpath(gwtest.LIB) + ":libc.so.6")
        self.assertTrue(sock.startswith(self.runtime + "/gapwatch-profile-"), sock)
        self.assertTrue(sock.endswith("/collector.sock"), sock)
        self.assertEqual(output, "unset")
        made = [d for d in os.listdir(self.dir) if d.startswith("gapwatch-profile-")]
        self.assertEqual(len(made), 1, os.listdir(self.dir))
        self.assertRegex(made[0], r"^gapwatch-profile-\d{8}-\d{6}$")
        # A job that starts no CUDA process: no report, and one line that says so.
        self.assertIn("nothing was recorded", r.stderr)
        log = read(os.path.join(self.dir, made[0], "collector.log"))
        self.assertIn("listening on " + sock, log)

    def test_a_command_without_cuda_still_gets_a_report_saying_so(self):
        r = self.profile(["-o", os.path.join(self.dir, "json"), "--json", "--", "sh", "-c", "exit 3"])
        self.assertEqual(r.returncode, 3, r.stderr)
        document = json.loads(r.stdout)
        self.assertEqual(document["processes"], [])
        self.assertEqual(document["nothing_recorded"], "no process of the command used CUDA")
        self.assertIn("nothing was recorded", r.stderr)
        # In text, stdout stays the command's own; the report is the line on stderr.
        r = self.profile(["-o", os.path.join(self.dir, "text"), "--", "sh", "-c", "echo mine"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "mine\n")
        self.assertIn("gapwatch profile: nothing was recorded: no process of the command used CUDA (collector log: ",
                      r.stderr)

    def test_default_directories_never_collide(self):
        """Issue 21, item 9: the default directory was named to the second, so a second run that
        started in the same second used the first one's directory (or, once it held files, failed).
        Here every name of the coming minute is taken already (a non-empty directory), and two runs
        start at once: each gets a directory of its own, made for it, beside the taken ones."""
        env = dict(self.env, TZ="UTC")  # the names below are computed in UTC too
        now = time.time()
        taken = set()
        for second in range(-2, 90):
            name = time.strftime("gapwatch-profile-%Y%m%d-%H%M%S", time.gmtime(now + second))
            if name in taken:
                continue
            taken.add(name)
            os.mkdir(os.path.join(self.dir, name))
            open(os.path.join(self.dir, name, "old.gwt"), "w").close()
        runs = [subprocess.Popen([gwtest.GAPWATCH, "profile", "--", gwtest.SIM, scenario("healthy"), "--quiet"],
                                 env=env, cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        made = []
        for p in runs:
            stdout, stderr = p.communicate(timeout=HANG * 3)
            self.assertEqual(p.returncode, 0, stderr)
            prefix = "gapwatch profile: recordings and report in "
            self.assertTrue(stderr.splitlines()[-1].startswith(prefix), stderr)
            out = stderr.splitlines()[-1][len(prefix):]
            self.assertNotIn(out, taken)
            self.assertRegex(out, r"^gapwatch-profile-\d{8}-\d{6}-\d+$")
            self.assertEqual(stdout, self.report(os.path.join(self.dir, out)))
            made.append(out)
        self.assertEqual(len(set(made)), 2, made)
        for out in made:
            [recording] = self.recordings(os.path.join(self.dir, out))
            self.assert_complete(recording)
        for name in taken:
            self.assertEqual(os.listdir(os.path.join(self.dir, name)), ["old.gwt"])

    def test_library_from_gapwatch_library(self):
        copy = os.path.join(self.dir, "lib", "libgapwatch-copy.so")
        os.mkdir(os.path.dirname(copy))
        shutil.copy(gwtest.LIB, copy)
        out = os.path.join(self.dir, "copy")
        env = dict(self.env, GAPWATCH_LIBRARY=copy)
        r = self.profile(["-o", out, "--", gwtest.SIM, scenario("healthy"), "--quiet"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.recordings(out)), 1)
        r = self.profile(["-o", os.path.join(self.dir, "env"), "--", "sh", "-c", 'echo "$LD_PRELOAD"'], env=env)
        self.assertEqual(r.stdout.strip(), copy)

    # 2. Exit codes.

    def test_exit_code_is_the_commands(self):
        r = self.profile(["-o", os.path.join(self.dir, "three"), "--", "sh", "-c", "exit 3"])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(r.stdout, "")
        # A traced process that fails after recording: its report, then its code.
        out = os.path.join(self.dir, "five")
        r = self.profile(["-o", out, "--", "sh", "-c", '"$0" "$1" --quiet; exit 5', gwtest.SIM, scenario("healthy")])
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(r.stdout, self.report(out))
        self.assert_last_line(r, out)

    def test_a_failing_simulator_returns_its_code(self):
        bad = os.path.join(gwtest.REPO, "tests", "simcuda", "workload", "bad")
        for i, path in enumerate((os.path.join(self.dir, "no-such-scenario.json"),
                                  os.path.join(bad, "free-without-malloc.json"))):
            with self.subTest(scenario=path):
                direct = gwtest.run([gwtest.SIM, path, "--quiet"], self.env)
                self.assertNotEqual(direct.returncode, 0)
                r = self.profile(["-o", os.path.join(self.dir, "bad%d" % i), "--", gwtest.SIM, path, "--quiet"])
                self.assertEqual(r.returncode, direct.returncode, r.stderr)
                self.assertIn(direct.stderr.strip(), r.stderr)
                self.assertIn("nothing was recorded", r.stderr)

    def test_a_reader_that_went_away_leaves_the_exit_code(self):
        """`gapwatch profile ... | head`: the report's reader may be gone (here: the pipe's read end
        is closed before the job starts); the code is still the command's, not 128 + SIGPIPE."""
        out = os.path.join(self.dir, "closed")
        p = subprocess.Popen([gwtest.GAPWATCH, "profile", "-o", out + "/", "--", "sh", "-c", '"$0" "$1" --quiet; exit 4',
                              gwtest.SIM, scenario("healthy")], env=self.env, cwd=self.dir, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        p.stdout.close()
        _, stderr = p.communicate(timeout=HANG * 3)
        self.assertEqual(p.returncode, 4, stderr)
        self.assertEqual(len(self.recordings(out)), 1)
        self.assert_last_line(p, out, stderr)

    def test_killed_by_a_signal_is_128_plus_its_number(self):
        for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV):
            with self.subTest(signal=sig.name):
                r = self.profile(["-o", os.path.join(self.dir, sig.name), "--", "sh", "-c",
                                  "kill -%d $$" % int(sig)])
                self.assertEqual(r.returncode, 128 + int(sig), r.stderr)

    # 3. Many processes, and processes the command leaves behind.

    def test_ranks_each_recorded(self):
        out = os.path.join(self.dir, "ranks")
        r = self.profile(["-o", out, "--", gwtest.SIM, scenario("nccl-bound"), "--quiet"])
        self.assertEqual(r.returncode, 0, r.stderr)
        files = self.recordings(out)
        self.assertEqual(sorted(os.path.basename(f).rsplit("-", 1)[1] for f in files), ["rank0.gwt", "rank1.gwt"])
        for f in files:
            self.assert_complete(f)
        self.assertEqual(r.stdout, self.report(out))

    def test_waits_for_a_daemonised_grandchild(self):
        """The command forks a child that forks a grandchild in a session of its own and exits at
        once; the grandchild outlives the command by a second, then becomes a traced simulator run.
        Had profile stopped the collector when the command exited, that recording would not be in D
        (the grandchild would still be asleep)."""
        script = os.path.join(self.dir, "daemonise.py")
        with open(script, "w") as f:
            f.write(r"""
import os, subprocess, sys, time
sim, scenario, pidfile = sys.argv[1:4]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile, "w") as p:
            p.write(str(os.getpid()))
        time.sleep(1)
        os.execv(sim, [sim, scenario, "--quiet"])
    os._exit(0)
os.wait()
subprocess.run([sim, scenario, "--quiet"], check=True)
""")
        out = os.path.join(self.dir, "daemon")
        pidfile = os.path.join(self.dir, "grandchild.pid")
        r = self.profile(["-o", out, "--", PYTHON, script, gwtest.SIM, scenario("healthy"), pidfile])
        self.assertEqual(r.returncode, 0, r.stderr)
        grandchild = int(read(pidfile))
        files = self.recordings(out)
        self.assertEqual(len(files), 2, files)
        for f in files:
            self.assert_complete(f)
        self.assertEqual(len([f for f in files if f.endswith("-%d.gwt" % grandchild)]), 1, files)
        self.assertEqual(r.stdout, self.report(out))
        with self.assertRaises(ProcessLookupError):
            os.kill(grandchild, 0)  # reaped, not left running

    def test_sigchld_ignored_by_the_parent(self):
        """Issue 21, item 2: started with SIGCHLD ignored (SIG_IGN survives exec; some supervisors
        and Python services leave it so), profile's children were reaped by the kernel, it never saw
        the command exit and waited for ever. Now it runs as usual, and the command gets the
        disposition profile was given, as it would have without profile."""
        script = os.path.join(self.dir, "disposition.py")
        with open(script, "w") as f:
            f.write(r"""
import os, signal, sys
sim, scenario, seen = sys.argv[1:4]
with open(seen, "w") as f:
    f.write(signal.getsignal(signal.SIGCHLD).name)
os.execv(sim, [sim, scenario, "--quiet"])
""")
        out = os.path.join(self.dir, "sigchld")
        seen = os.path.join(self.dir, "seen")
        p = subprocess.Popen([gwtest.GAPWATCH, "profile", "-o", out, "--", PYTHON, script, gwtest.SIM,
                              scenario("healthy"), seen], env=self.env, cwd=self.dir, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
        try:
            stdout, stderr = p.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            p.kill()  # its collector follows (it stops when profile dies)
            _, stderr = p.communicate()
            self.fail("gapwatch profile hung with SIGCHLD ignored: " + stderr)
        self.assertEqual(p.returncode, 0, stderr)
        self.assertEqual(read(seen), "SIG_IGN")
        [recording] = self.recordings(out)
        self.assert_complete(recording)
        self.assertEqual(stdout, self.report(out))
        self.assert_last_line(p, out, stderr)

    # 4. Signals go to the job, not to the collector.

    def signalled_job(self, send):
        """A job that records a simulator run, starts a second one in the background, says it is
        ready, then waits for SIGINT and exits 42 without waiting for the second run."""
        script = os.path.join(self.dir, "traps.py")
        ready = os.path.join(self.dir, "ready")
        with open(script, "w") as f:
            f.write(r"""
import os, signal, subprocess, sys
sim, scenario, ready = sys.argv[1:4]
signal.signal(signal.SIGINT, lambda *_: os._exit(42))
subprocess.run([sim, scenario, "--quiet"], check=True)
subprocess.Popen([sim, scenario, "--quiet"], start_new_session=True)
open(ready, "w").close()
while True:
    signal.pause()
""")
        out = os.path.join(self.dir, "signalled")
        # A session of its own: the test's signals must reach nobody else (killpg below).
        p = subprocess.Popen([gwtest.GAPWATCH, "profile", "-o", out, "--", PYTHON, script, gwtest.SIM,
                              scenario("healthy"), ready], env=self.env, cwd=self.dir, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            waited = 0.0
            while not os.path.exists(ready):
                self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
                self.assertLess(waited, HANG, "the job never got ready")
                waited += 0.05
                subprocess.run(["sleep", "0.05"])
            send(p)
            stdout, stderr = p.communicate(timeout=HANG * 2)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual(p.returncode, 42, stderr)
        files = self.recordings(out)
        self.assertEqual(len(files), 2, files)
        for f in files:
            self.assert_complete(f)
        self.assertEqual(stdout, self.report(out))
        log = read(os.path.join(out, "collector.log"))
        self.assertIn("stopping on Terminated", log)
        self.assertNotIn("Interrupt", log)

    def test_sigint_to_profile_reaches_the_command(self):
        self.signalled_job(lambda p: p.send_signal(signal.SIGINT))

    def test_sigint_to_the_process_group_spares_the_collector(self):
        """What a terminal's Ctrl-C does: SIGINT to the whole foreground process group."""
        self.signalled_job(lambda p: os.killpg(p.pid, signal.SIGINT))

    def test_ctrl_c_in_a_terminal_reaches_the_job_not_the_collector(self):
        """A real terminal (a pty): ^C makes the kernel send SIGINT to the foreground process group,
        profile and the command; the collector, in a group of its own, goes on and writes the
        recording. The report comes in colour, as `gapwatch report` writes it to a terminal. (That profile does not send the command a second SIGINT is not shown here: a
        second one that arrives while the first is pending merges with it, and cannot be seen.)"""
        script = os.path.join(self.dir, "traps.py")
        ready = os.path.join(self.dir, "ready")
        with open(script, "w") as f:
            f.write(r"""
import os, signal, subprocess, sys
sim, scenario, ready = sys.argv[1:4]
signal.signal(signal.SIGINT, lambda *_: os._exit(42))
subprocess.run([sim, scenario, "--quiet"], check=True)
open(ready, "w").close()
while True:
    signal.pause()
""")
        out = os.path.join(self.dir, "terminal")
        argv = [gwtest.GAPWATCH, "profile", "-o", out, "--", PYTHON, script, gwtest.SIM, scenario("healthy"), ready]
        pid, master = pty.fork()
        if pid == 0:  # the child: session leader, the pty its controlling terminal, foreground group
            try:
                os.chdir(self.dir)
                env = {k: v for k, v in self.env.items() if k != "NO_COLOR"}
                os.execve(argv[0], argv, dict(env, TERM="xterm"))
            finally:
                os._exit(99)
        output = bytearray()
        try:
            waited = 0.0
            while not os.path.exists(ready):
                self.assertLess(waited, HANG, "the job never got ready: " + output.decode(errors="replace"))
                if select.select([master], [], [], 0.05)[0]:
                    output += os.read(master, 65536)
                waited += 0.05
            os.write(master, b"\x03")
            while select.select([master], [], [], HANG)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every process holding the terminal has gone
                    break
                if not chunk:
                    break
                output += chunk
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(master)
        self.assertEqual(os.waitstatus_to_exitcode(status), 42, output.decode(errors="replace"))
        files = self.recordings(out)
        self.assertEqual(len(files), 1, files)
        self.assert_complete(files[0])
        self.assertIn(b"GPU idle", output)
        self.assertIn(b"\x1b[", output)  # a terminal: in colour, as gapwatch report would be
        log = read(os.path.join(out, "collector.log"))
        self.assertIn("stopping on Terminated", log)
        self.assertNotIn("Interrupt", log)

    # 5. Bad input: one line, an exit code, nothing left behind.

    def test_non_empty_output_directory_is_refused(self):
        out = os.path.join(self.dir, "used")
        os.mkdir(out)
        open(os.path.join(out, "old.gwt"), "w").close()
        r = self.profile(["-o", out, "--", "true"])
        self.assertEqual(r.returncode, 1)
        self.assert_one_line(r)
        self.assertIn("not empty", r.stderr)
        self.assertEqual(os.listdir(out), ["old.gwt"])
        open(os.path.join(self.dir, "file"), "w").close()
        r = self.profile(["-o", os.path.join(self.dir, "file"), "--", "true"])
        self.assertEqual(r.returncode, 1)
        self.assert_one_line(r)

    def test_an_empty_existing_directory_is_used(self):
        out = os.path.join(self.dir, "empty")
        os.mkdir(out)
        r = self.profile(["-o", out, "--", gwtest.SIM, scenario("healthy"), "--quiet"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.recordings(out)), 1)

    def test_no_command(self):
        out = os.path.join(self.dir, "none")
        for args in ([], ["-o", out], ["-o", out, "--"]):
            with self.subTest(args=args):
                r = self.profile(args)
                self.assertEqual(r.returncode, 1)
                self.assert_one_line(r)
                self.assertFalse(os.path.exists(out))

    def test_a_command_that_cannot_be_run(self):
        script = os.path.join(self.dir, "not-executable.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(script, 0o644)
        out = os.path.join(self.dir, "never")
        for command, code in (("gapwatch-no-such-command", 127), (os.path.join(self.dir, "missing"), 127),
                              (script, 126)):
            with self.subTest(command=command):
                r = self.profile(["-o", out, "--", command, "arg"])
                self.assertEqual(r.returncode, code, r.stderr)
                self.assert_one_line(r)
                self.assertIn(command, r.stderr)
                self.assertEqual(r.stdout, "")
                self.assertFalse(os.path.exists(out), "the output directory it made is left behind")

    def test_a_missing_library(self):
        out = os.path.join(self.dir, "nolib")
        env = dict(self.env, GAPWATCH_LIBRARY=os.path.join(self.dir, "no-such-libgapwatch.so"))
        r = self.profile(["-o", out, "--", "true"], env=env)
        self.assertEqual(r.returncode, 1)
        self.assert_one_line(r)
        self.assertIn("no-such-libgapwatch.so", r.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    gwtest.main(__name__)
