"""Helpers shared by the export tests: record the shipped scenarios on the simulated CUDA stack,
run gapwatch report and gapwatch export, and read a Perfetto trace packet by packet with
Perfetto's own schema (the PyPI package `perfetto`, in a virtual environment of its own)."""
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
PERFETTO_VENV = os.path.join(gwtest.BUILD, "perfetto-venv")
# Pinned, so that a schema change in a later Perfetto release shows up as a change of these lines.
PERFETTO_PACKAGES = ("perfetto==0.59.1", "protobuf==7.36.2")


def scenarios():
    return sorted(glob.glob(os.path.join(gwtest.SCENARIOS, "*.json")))


def record(scenario, workdir):
    """Runs one scenario under gapwatch into workdir; returns its recordings (one per rank)."""
    env = gwtest.gapwatch_env("preload", workdir + "/")
    sim = gwtest.run([gwtest.SIM, scenario, "--quiet"], env, timeout=300, cwd=workdir)
    if sim.returncode != 0:
        raise AssertionError("gapwatch-sim %s failed (%d): %s" % (scenario, sim.returncode, sim.stderr))
    return sorted(glob.glob(os.path.join(workdir, "*.gwt")))


def report(files, *extra):
    out = subprocess.run([gwtest.GAPWATCH, "report", "--json", *extra, *files], capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise AssertionError("gapwatch report --json failed (%d): %s" % (out.returncode, out.stderr))
    return json.loads(out.stdout)


def export(files, fmt, output):
    out = subprocess.run([gwtest.GAPWATCH, "export", "--format", fmt, *files, "-o", output], capture_output=True,
                         text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError("gapwatch export --format %s failed (%d): %s" % (fmt, out.returncode, out.stderr))


def perfetto_python():
    """The venv's python with Perfetto's trace schema importable; creates the venv once. None when
    it cannot be installed (offline): the caller skips."""
    python = os.path.join(PERFETTO_VENV, "bin", "python")
    probe = [python, "-c", "from perfetto.protos.perfetto.trace import perfetto_trace_pb2"]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    made = subprocess.run([sys.executable, "-m", "venv", PERFETTO_VENV], capture_output=True, text=True)
    if made.returncode != 0:
        print("cannot create %s: %s" % (PERFETTO_VENV, made.stderr.strip().splitlines()[-1:]))
        return None
    # A bounded wait: an offline machine must not hang the test.
    pip = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--retries", "1",
                          "--timeout", "15", *PERFETTO_PACKAGES], capture_output=True, text=True, timeout=600)
    if pip.returncode != 0 or subprocess.run(probe, capture_output=True).returncode != 0:
        print("cannot install the PyPI package perfetto into %s: %s" % (PERFETTO_VENV,
                                                                       (pip.stderr.strip().splitlines() or [""])[-1]))
        return None
    return python


def report_numbers(doc):
    """Per (file, device): busy_ns, kernels, idle_ns, as gapwatch report --json gives them."""
    numbers = {}
    for process in doc["processes"]:
        for device in process["devices"]:
            numbers[(os.path.basename(process["file"]), device["device"])] = {
                "busy_ns": device["busy_ns"], "kernels": device["kernels"], "idle_ns": device["idle_ns"]}
    return numbers
