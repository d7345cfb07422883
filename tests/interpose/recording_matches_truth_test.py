"""End to end on the simulated CUDA stack: for every shipped scenario, under LD_PRELOAD and under
CUDA_INJECTION64_PATH, with CUPTI and in symbol-only fallback, the recording holds every call the
simulator's ground truth lists, the device times it recorded are the virtual device's own, and
`gapwatch report` gives an idle fraction within 1 percentage point of the truth."""
import collections
import glob
import json
import os
import re
import subprocess
import tempfile
import unittest

import gwtest

# Recording api_call kinds, as gapwatch dump names them, for each ground-truth call kind.
RECORDED_KINDS = {
    "launch": "launch", "graph_launch": "graph_launch", "memcpy": "memcpy", "memcpy_async": "memcpy_async",
    "memset": "memset", "memset_async": "memset_async", "device_sync": "device_sync",
    "stream_sync": "stream_sync", "event_sync": "event_sync", "event_record": "event_record",
    "stream_wait_event": "stream_wait_event", "malloc": "malloc", "free": "free", "host_alloc": "host_alloc",
    "host_free": "host_free",
}
NCCL_OPS = {"ncclAllReduce": "all_reduce", "ncclBroadcast": "broadcast", "ncclReduce": "reduce",
            "ncclAllGather": "all_gather", "ncclReduceScatter": "reduce_scatter", "ncclSend": "send",
            "ncclRecv": "recv", "ncclGroupStart": "group_start", "ncclGroupEnd": "group_end",
            "ncclCommInitRank": "comm_init", "ncclCommDestroy": "comm_destroy"}
DEVICE_KINDS = {"kernel", "memcpy", "memset"}
# The simulated driver's truth calls a module load "other"; the recorder records these driver calls
# as module_load (CUPTI callbacks only: no runtime symbol to hook for them).
MODULE_LOADS = {"cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary",
                "cuLibraryLoadData", "cuLibraryLoadFromFile"}
MODES = [("preload", None), ("injection", None), ("preload", {"GAPWATCH_PROBES": "symbols"})]


def rows(table):
    return [dict(zip(table["fields"], r)) for r in table["rows"]]


def run_scenario(name, mode, extra, workdir):
    truth_path = os.path.join(workdir, "truth.json")
    env = gwtest.gapwatch_env(mode, workdir + "/", extra)
    r = gwtest.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, name + ".json"), "--truth", truth_path, "--quiet"],
                   env, timeout=300, cwd=workdir)
    if r.returncode != 0:
        raise AssertionError("gapwatch-sim %s failed (%d): %s" % (name, r.returncode, r.stderr))
    with open(truth_path) as f:
        truth = json.load(f)
    recordings = {}
    for path in glob.glob(os.path.join(workdir, "*.gwt")):
        events = gwtest.dump(path)
        hello = next(e for e in events if e["type"] == "hello")
        recordings[hello["pid"]] = events
    return truth, recordings, r.stderr


def reported_idle_fractions(workdir):
    """pid -> {device: idle fraction} as `gapwatch report` prints it."""
    out = {}
    for path in glob.glob(os.path.join(workdir, "*.gwt")):
        r = subprocess.run([gwtest.GAPWATCH, "report", path], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError("gapwatch report %s: %s" % (path, r.stderr))
        pid = int(re.search(r"pid (\d+)", r.stdout).group(1))
        out[pid] = {int(d): float(f) / 100 for d, f in
                    re.findall(r"^device (\d+) .*= ([0-9.]+)% of the window", r.stdout, re.M)}
    return out


class RecordingMatchesTruth(unittest.TestCase):
    def check_process(self, proc, events, symbols_only, preload, scenario):
        calls = rows(proc["timeline"]["api_calls"])
        ops = rows(proc["timeline"]["ops"])
        # What the ground truth says happened, by recorded kind.
        want = collections.Counter()
        for c in calls:
            if c["kind"] in RECORDED_KINDS:
                if symbols_only and c["domain"] == 1:
                    continue  # made by NCCL through the driver: no runtime symbol to hook
                want[RECORDED_KINDS[c["kind"]]] += 1
            elif c.get("name") in MODULE_LOADS and not symbols_only:
                want["module_load"] += 1
        got = collections.Counter(e["kind"] for e in events if e["type"] == "api_call")
        self.assertEqual(got, want, "%s: API calls by kind" % scenario)

        nccl_want = collections.Counter(NCCL_OPS[c["name"]] for c in calls if c["kind"] == "nccl" and c["name"] in NCCL_OPS)
        nccl_got = collections.Counter(e["op"] for e in events if e["type"] == "nccl_call")
        if preload:
            self.assertEqual(nccl_got, nccl_want, "%s: NCCL calls" % scenario)
        else:
            self.assertEqual(sum(nccl_got.values()), 0)  # hooks do not interpose without LD_PRELOAD

        # Sync points carry their native caller when the hooks are preloaded (the CUPTI probe takes
        # it from the hook around the call); without LD_PRELOAD there is no hook to take it.
        blocked = [e for e in events if e["type"] == "api_call" and e["blocked"] and e["domain"] != "driver"]
        if preload:
            self.assertTrue(blocked and all(e["call_site"] for e in blocked), "%s: call sites" % scenario)
        else:
            self.assertFalse(any(e["call_site"] for e in blocked))

        goodbye = [e for e in events if e["type"] == "goodbye"]
        self.assertEqual(len(goodbye), 1, "%s: the recording was not finished" % scenario)
        self.assertEqual(goodbye[0]["events_dropped"], 0)
        self.assertEqual(goodbye[0]["cupti_records_dropped"], 0)

        activities = [e for e in events if e["type"] == "activity" and e["kind"] in DEVICE_KINDS]
        if symbols_only:
            self.assertEqual(activities, [])
            return
        truth_ops = sorted((o for o in ops if o["kind"] in DEVICE_KINDS), key=lambda o: (o["correlation_id"], o["start_ns"]))
        recorded = sorted(activities, key=lambda a: (a["correlation_id"], a["start_ns"]))
        self.assertEqual(len(recorded), len(truth_ops), "%s: device activities" % scenario)
        worst = 0
        for o, a in zip(truth_ops, recorded):
            self.assertEqual(a["correlation_id"], o["correlation_id"])
            self.assertEqual(a["kind"], o["kind"])
            worst = max(worst, abs(a["start_ns"] - o["start_ns"]), abs(a["end_ns"] - o["end_ns"]))
        # Timing: none. Both sides are the virtual device's own timestamps, the recording's
        # converted through CUPTI's timestamp callback; 1 us covers the conversion's rounding,
        # whatever the machine's speed or load.
        self.assertLessEqual(worst, 1000, "%s: device times differ from the virtual device's by %d ns" % (scenario, worst))

    def test_every_scenario_in_every_mode(self):
        for scenario in sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(gwtest.SCENARIOS, "*.json"))):
            for mode, extra in MODES:
                with self.subTest(scenario=scenario, mode=mode, extra=extra), tempfile.TemporaryDirectory() as d:
                    truth, recordings, stderr = run_scenario(scenario, mode, extra, d)
                    self.assertEqual(len(recordings), len(truth["processes"]), stderr)
                    idle = {} if extra else reported_idle_fractions(d)
                    for proc in truth["processes"]:
                        self.assertIn(proc["pid"], recordings)
                        self.check_process(proc, recordings[proc["pid"]], bool(extra), mode == "preload", scenario)
                        for dev in ([] if extra else proc["devices"]):
                            # The report's idle fraction is within 1 percentage point of the truth.
                            # Timing: none. Window and busy time come from device records alone,
                            # equal to the truth's to 1 us (above), so load cannot move them.
                            self.assertAlmostEqual(idle[proc["pid"]][dev["device"]], dev["idle_fraction"],
                                                   delta=0.01, msg="%s: idle fraction" % scenario)


if __name__ == "__main__":
    gwtest.main(__name__)
