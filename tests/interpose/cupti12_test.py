"""CUPTI 12 (the libcupti.so.12 of cu12 PyTorch wheels) works as CUPTI 13 does: the same scenario
recorded through the simulated libcupti.so.12 and libcupti.so.13 gives the same report and the same
device records; a process that already has a libcupti gets that one used, never a second one.
Skipped (exit 77) in a build made without CUPTI 12's headers."""
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest

import gwtest

CUPTI12 = os.environ.get("GAPWATCH_SIM_CUPTI12", "")
LOADED_FIRST = os.path.join(gwtest.BUILD, "bin", "cupti_loaded_first")
SCENARIO = "healthy"  # device-bound: its device timeline hardly depends on the host's speed
CUPTI12_VERSION = 28   # CUPTI_API_VERSION of 12.9 Update 1, what the simulated libcupti.so.12 reports
CUPTI13_VERSION = 130001

# The launch a CUDA 13 program makes for <<<>>> (__cudaLaunchKernel) is cudaLaunchKernel in CUDA 12.
CUDA12_API_NAMES = {"__cudaLaunchKernel": "cudaLaunchKernel", "__cudaLaunchKernel_ptsz": "cudaLaunchKernel_ptsz"}

# Report values that are a run's own: who and when, and everything the host's speed in that run
# decides (idle time and its causes, gaps, launch delays, findings drawn from them). The rest of the
# report is what the recording's calls and device records make it, and must be equal.
RUN_OWN = {"pid", "recorded_ns", "window_start_ns", "window_end_ns", "start_ns", "end_ns", "verdict"}
HOST_TIMED_SUBTREES = ("/findings", "/notes", "/idle_by_cause", "/by_cause", "/after_sync", "/longest_gaps",
                       "/histogram", "/host_launch_gaps", "/hta_idle_by_stream", "/idle_by_stream", "/rank_waits",
                       "/host_cpu_by_part", "/host_cpu_names", "/straggler_test", "/bottleneck", "/first_pass")
HOST_TIMED_COUNTS = {"gap_count", "runtime_outliers", "launch_delay_outliers", "short_kernels", "queue_depth_max",
                     "queue_depth_p99", "launches_per_second", "shorter_than_launch", "short",
                     "launch_overhead_short_gaps", "copy_waits"}
# The device's busy time comes from the device records' own times: equal but for how much a copy
# stream overlaps the kernels, which the host's timing shifts (copies are 4% of it here).
DEVICE_TIMED = {"busy_ns"}


def record(cupti, workdir, scenario=SCENARIO):
    env = gwtest.gapwatch_env("preload", os.path.join(workdir, "r.gwt"), {"GAPWATCH_CUPTI_PATH": cupti})
    r = gwtest.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, scenario + ".json"), "--quiet"], env, timeout=300,
                   cwd=workdir)
    if r.returncode != 0:
        raise AssertionError("gapwatch-sim %s with %s failed (%d): %s" % (scenario, cupti, r.returncode, r.stderr))
    path = os.path.join(workdir, "r.gwt")
    report = subprocess.run([gwtest.GAPWATCH, "report", "--json", path], capture_output=True, text=True, timeout=120)
    if report.returncode != 0:
        raise AssertionError("gapwatch report: %s" % report.stderr)
    return gwtest.dump(path), json.loads(report.stdout)


def leaves(value, path=""):
    """Every leaf of a report as (path, key, value); a list also as its length."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + "/" + k) if isinstance(v, (dict, list)) else [(path + "/" + k, k, v)]
    elif isinstance(value, list):
        yield (path + "/#", "#", len(value))
        for i, v in enumerate(value):
            yield from leaves(v, "%s[%d]" % (path, i)) if isinstance(v, (dict, list)) else [("%s[%d]" % (path, i), "", v)]


def host_timed(path, key, value):
    if key in RUN_OWN or key in HOST_TIMED_COUNTS or any(s in path for s in HOST_TIMED_SUBTREES):
        return True
    if key in DEVICE_TIMED:
        return False
    return isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool) and key.endswith("ns"))


def device_records(events):
    """What CUPTI said about the device, without absolute times (each run has its own): kernels,
    copies and memsets with their durations (the virtual device's, the same in every run); syncs
    without theirs (host times)."""
    out = collections.Counter()
    for e in events:
        if e["type"] == "activity":
            drop = {"start_ns", "end_ns", "correlation_id", "name_id"} | ({"duration_ns"} if e["kind"] == "sync" else set())
            out[tuple(sorted((k, str(v)) for k, v in e.items() if k not in drop))] += 1
    return out


def api_calls(events):
    out = collections.Counter()
    for e in events:
        if e["type"] == "api_call":
            out[(e["kind"], CUDA12_API_NAMES.get(e["name"], e["name"]), e.get("copy_kind"), e.get("bytes"),
                 e.get("blocked"), e.get("return_code"))] += 1
    return out


class Cupti12(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runs = {}
        for label, cupti in (("13", gwtest.CUPTI), ("12", CUPTI12)):
            with tempfile.TemporaryDirectory() as d:
                cls.runs[label] = record(cupti, d)

    def hello(self, label):
        return self.runs[label][0][0]

    def test_each_recording_says_which_cupti_recorded_it(self):
        self.assertEqual(self.hello("13")["cupti_version"], CUPTI13_VERSION)
        self.assertEqual(self.hello("12")["cupti_version"], CUPTI12_VERSION)
        for label in ("12", "13"):
            self.assertEqual(self.hello(label)["cupti_unavailable"], "", label)
            self.assertIn("cupti_activity", self.hello(label)["probes"], label)
        self.assertEqual(self.runs["12"][1]["processes"][0]["cupti_version"], CUPTI12_VERSION)
        self.assertEqual(self.runs["13"][1]["processes"][0]["cupti_version"], CUPTI13_VERSION)

    def test_the_same_device_records(self):
        got12, got13 = device_records(self.runs["12"][0]), device_records(self.runs["13"][0])
        self.assertGreater(sum(got13.values()), 2000)
        self.assertEqual(got12, got13)

    def test_the_same_api_calls(self):
        calls12, calls13 = api_calls(self.runs["12"][0]), api_calls(self.runs["13"][0])
        self.assertGreater(sum(calls13.values()), 2000)
        self.assertEqual(calls12, calls13)

    def test_the_same_report(self):
        """Field by field, but for what the host's speed in each run decides (findings and notes drawn
        from idle time among it: a run starved of CPU has more) and the CUPTI version itself."""
        def recorded(report):
            return {path: (key, value) for path, key, value in leaves(report) if not host_timed(path, key, value)}
        r12, r13 = recorded(self.runs["12"][1]), recorded(self.runs["13"][1])
        self.assertEqual(sorted(r12), sorted(r13), "the reports differ in shape")
        differ = []
        for path, (key, v12) in sorted(r12.items()):
            v13 = r13[path][1]
            if key == "cupti_version":
                continue  # what legitimately differs
            if key == "file":
                v12, v13 = os.path.basename(v12), os.path.basename(v13)  # each run's own folder
            same = abs(v12 - v13) <= 0.1 * max(v12, v13) if key in DEVICE_TIMED else v12 == v13
            if not same:
                differ.append("%s: %r (CUPTI 12) != %r (CUPTI 13)" % (path, v12, v13))
        self.assertEqual(differ, [])
        self.assertGreater(len(r13), 100)  # 124 for this scenario: the comparison did compare


class OwnCuptiFirst(unittest.TestCase):
    def run_loaded_first(self, mode, own):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            # GAPWATCH_CUPTI_PATH names the other one: the process's own copy must win.
            other = gwtest.CUPTI if own == CUPTI12 else CUPTI12
            env = gwtest.gapwatch_env(mode, out, {"GAPWATCH_CUPTI_PATH": other})
            r = gwtest.run([LOADED_FIRST, own], env, timeout=120, cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            mapped = [line.split(" ", 1)[1] for line in r.stdout.splitlines() if line.startswith("mapped ")]
            events = gwtest.dump(out)
            return events, mapped

    def check(self, mode, own, version):
        events, mapped = self.run_loaded_first(mode, own)
        hello = events[0]
        self.assertEqual(hello["cupti_unavailable"], "")
        self.assertEqual(hello["cupti_version"], version)
        self.assertEqual([os.path.realpath(p) for p in mapped], [os.path.realpath(own)], "libcupti copies mapped")
        kernels = [e for e in events if e["type"] == "activity" and e["kind"] == "kernel"]
        self.assertEqual(len(kernels), 5)

    def test_a_loaded_cupti_12_is_used_under_preload(self):
        self.check("preload", CUPTI12, CUPTI12_VERSION)

    def test_a_loaded_cupti_12_is_used_under_injection(self):
        self.check("injection", CUPTI12, CUPTI12_VERSION)

    def test_a_loaded_cupti_13_is_used_too(self):
        self.check("preload", gwtest.CUPTI, CUPTI13_VERSION)


class Refusals(unittest.TestCase):
    def test_versions_outside_12_4_to_13_are_refused_with_the_versions_read(self):
        for version in ("21", "29", "140000"):
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "r.gwt")
                env = gwtest.gapwatch_env("preload", out, {"GAPWATCH_CUPTI_PATH": CUPTI12,
                                                           "SIMCUDA_CUPTI_VERSION": version})
                r = gwtest.run([LOADED_FIRST, CUPTI12], env, timeout=120, cwd=d)
                self.assertEqual(r.returncode, 0, r.stderr)
                hello = gwtest.dump(out)[0]
                self.assertIn("libcupti reports version %s, gapwatch reads CUPTI 12.4 to 12.9" % version,
                              hello["cupti_unavailable"])
                self.assertNotIn("cupti_activity", hello["probes"])


class GpuCheckSelfTest(unittest.TestCase):
    """scripts/gpu-check/cupti12_check.sh --self-test: the GPU check's harness on the simulated stack."""

    def test_the_check_finds_the_simulated_cupti_12_and_its_records(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, GAPWATCH_LIB=gwtest.LIB, GAPWATCH_BIN=gwtest.GAPWATCH, GAPWATCH_BUILD_DIR=gwtest.BUILD)
            for k in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "GAPWATCH_CUPTI_PATH", "GAPWATCH_OUTPUT"):
                env.pop(k, None)
            script = os.path.join(gwtest.REPO, "scripts", "gpu-check", "cupti12_check.sh")
            r = subprocess.run([script, d, "--self-test"], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "cupti12", "result.txt")) as f:
                result = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
            self.assertEqual(result["verdict"], "device records through CUPTI 12", result)
            self.assertEqual(result["path_cupti_version"], str(CUPTI12_VERSION))
            self.assertEqual(result["loaded_first_libcupti_copies"], "1")


if __name__ == "__main__":
    if not CUPTI12 or not os.path.exists(CUPTI12):
        print("skipped: this build has no CUPTI 12 headers (scripts/fetch-cupti12-headers.sh), so no CUPTI 12 support")
        sys.exit(77)
    gwtest.main(__name__)
