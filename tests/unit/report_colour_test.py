"""`gapwatch report` colours its text only on a terminal, and never with NO_COLOR set (even to an
empty string) or TERM=dumb. Runs the binary on a pseudo-terminal, as a person would see it.

    report_colour_test.py GAPWATCH RECORDING
"""
import os
import pty
import subprocess
import sys
import unittest

GAPWATCH, RECORDING = sys.argv[1], sys.argv[2]


def run_on_terminal(env_changes):
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env["TERM"] = "xterm-256color"
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    leader, follower = pty.openpty()
    proc = subprocess.Popen([GAPWATCH, "report", RECORDING], stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    proc.wait(timeout=60)
    return proc.returncode, b"".join(chunks)


class ReportColour(unittest.TestCase):
    def test_a_terminal_gets_colour(self):
        code, out = run_on_terminal({})
        self.assertEqual(code, 0)
        self.assertIn(b"\x1b[1mGPU idle", out)

    def test_no_color_turns_it_off(self):
        for value in ("1", ""):
            code, out = run_on_terminal({"NO_COLOR": value})
            self.assertEqual(code, 0)
            self.assertIn(b"GPU idle", out)
            self.assertNotIn(b"\x1b", out, "NO_COLOR=%r" % value)

    def test_a_dumb_terminal_gets_none(self):
        code, out = run_on_terminal({"TERM": "dumb"})
        self.assertEqual(code, 0)
        self.assertNotIn(b"\x1b", out)

    def test_a_pipe_gets_none(self):
        env = dict(os.environ, TERM="xterm-256color")
        env.pop("NO_COLOR", None)
        out = subprocess.run([GAPWATCH, "report", RECORDING], capture_output=True, env=env, timeout=60)
        self.assertEqual(out.returncode, 0)
        self.assertNotIn(b"\x1b", out.stdout)


if __name__ == "__main__":
    result = unittest.main(argv=sys.argv[:1], exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
