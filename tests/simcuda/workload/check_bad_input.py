#!/usr/bin/env python3
"""Runs gapwatch-sim on a bad scenario and checks it fails the way a user needs it to.

usage: check_bad_input.py GAPWATCH_SIM FIXTURE [MUST_CONTAIN ...]

Passes when gapwatch-sim exits non-zero, writes nothing on stdout and exactly one line on stderr,
and that line contains every MUST_CONTAIN string.
"""
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    sim, fixture, needles = sys.argv[1], sys.argv[2], sys.argv[3:]
    proc = subprocess.run([sim, fixture, "--quiet"], capture_output=True, text=True, timeout=20)
    problems = []
    if proc.returncode == 0:
        problems.append("exit status 0, expected a failure")
    if proc.stdout:
        problems.append("unexpected stdout: %r" % proc.stdout)
    lines = proc.stderr.splitlines()
    if len(lines) != 1 or not proc.stderr.endswith("\n"):
        problems.append("expected exactly one stderr line, got %d: %r" % (len(lines), proc.stderr))
    for needle in needles:
        if needle not in proc.stderr:
            problems.append("stderr lacks %r" % needle)
    if not proc.stderr.startswith("gapwatch-sim: "):
        problems.append("stderr does not start with 'gapwatch-sim: '")
    print("stderr: " + proc.stderr.rstrip("\n"))
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
