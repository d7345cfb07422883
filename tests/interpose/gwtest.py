"""Helpers shared by the injected library's Python tests: where things are, and how to run a
program under gapwatch on the simulated CUDA stack."""
import os
import subprocess
import sys

BUILD = os.environ.get("GAPWATCH_BUILD_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIB = os.path.join(BUILD, "lib", "libgapwatch.so")
SIMLIB = os.path.join(BUILD, "simcuda", "lib")
CUPTI = os.path.join(SIMLIB, "libcupti.so.13")
SIM = os.path.join(BUILD, "bin", "gapwatch-sim")
GAPWATCH = os.path.join(BUILD, "bin", "gapwatch")
SCENARIOS = os.path.join(REPO, "examples", "scenarios")


def gapwatch_env(mode, output=None, extra=None):
    """Environment for a run: mode is 'preload', 'injection' or None (no gapwatch)."""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GAPWATCH_") and k != "GAPWATCH_BUILD_DIR" or k in ("CUDA_INJECTION64_PATH", "LD_PRELOAD"):
            env.pop(k)
    env["GAPWATCH_CUPTI_PATH"] = CUPTI  # never the toolkit's real libcupti on these machines
    if mode == "preload":
        env["LD_PRELOAD"] = LIB
    elif mode == "injection":
        env["CUDA_INJECTION64_PATH"] = LIB
    if output:
        env["GAPWATCH_OUTPUT"] = output
    env.update(extra or {})
    return env


# Timeouts here and in the tests only bound a run that hangs: every run they bound takes at most a
# few seconds on this kind of machine (the longest scenario about 1 s, the SIGKILL test's job is
# killed within 0.5 s of its start), so they leave a margin of 20x or more for a slower, busier one.
def run(cmd, env, timeout=120, cwd=None):
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def dump(path):
    """The recording as a list of JSON objects, one per event (gapwatch dump --json)."""
    import json
    out = subprocess.run([GAPWATCH, "dump", "--json", path], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError("gapwatch dump failed on %s: %s" % (path, out.stderr.strip()))
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def file_header():
    """The 12 bytes a .gwt file begins with (magic, format version), which a stream from the socket
    lacks: prefixed to a stream, they make it a recording the CLI reads."""
    import re
    with open(os.path.join(BUILD, "proto", "format", "gapwatch", "recording_format.h")) as f:
        version = int(re.search(r"kFileFormatVersion = (\d+)", f.read()).group(1))
    return bytes([0x89]) + b"GWT\r\n\x1a\n" + version.to_bytes(4, "little")


def main(test_module_name):
    import unittest
    result = unittest.main(module=test_module_name, exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
