"""A PyTorch-style NCCL job (nccl_pytorch_style.cpp: non-blocking config init, a split, a scalable
init, all-to-all, gather, scatter, bcast, a send/recv group) recorded through each of gapwatch's
NCCL routes: the LD_PRELOAD hooks, the NCCL profiler plugin alone (no LD_PRELOAD, CUPTI through
CUDA_INJECTION64_PATH), and both at once. Every route must give each rank's every collective
once, with the rank and size of the communicator it ran on."""
import collections
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import gwtest  # noqa: E402

JOB = os.path.join(gwtest.BUILD, "bin", "nccl_pytorch_style")
WORLD = 2
COLLECTIVES = {"all_reduce", "all_to_all", "gather", "scatter", "broadcast", "send", "recv",
               "all_gather", "reduce", "reduce_scatter"}


def expected(rank):
    """(op, rank, nranks) of every collective rank `rank` calls."""
    w = WORLD
    return collections.Counter([
        ("all_reduce", rank, w), ("all_to_all", rank, w), ("gather", rank, w), ("scatter", rank, w),
        ("broadcast", rank, w),
        ("all_reduce", w - 1 - rank, w),  # the split communicator: keys reversed
        ("all_reduce", rank, w),          # the scalable one
        ("send", rank, w), ("recv", rank, w)])


class NcclRoutes(unittest.TestCase):
    def record(self, mode, plugin, extra=None):
        out = tempfile.mkdtemp(prefix="gw-nccl-routes-")
        env = gwtest.gapwatch_env(mode, out, extra)
        env.pop("NCCL_PROFILER_PLUGIN", None)
        if plugin:
            env["NCCL_PROFILER_PLUGIN"] = gwtest.LIB
        r = gwtest.run([JOB, str(WORLD)], env)
        self.assertEqual(r.returncode, 0, r.stderr)
        files = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".gwt"))
        self.assertEqual(len(files), WORLD, "one recording per rank: %s\n%s" % (files, r.stderr))
        recordings = {}
        for path in files:
            events = gwtest.dump(path)
            goodbye = [e for e in events if e["type"] == "goodbye"]
            self.assertEqual(len(goodbye), 1, path)
            self.assertEqual(goodbye[0]["events_dropped"], 0)
            calls = [e for e in events if e["type"] == "nccl_call"]
            # Which rank recorded it: the world communicator's, from the first all-to-all.
            a2a = [c for c in calls if c["op"] == "all_to_all"]
            self.assertEqual(len(a2a), 1, "%s: %s" % (path, calls))
            recordings[a2a[0]["rank"]] = calls
        self.assertEqual(sorted(recordings), list(range(WORLD)))
        return recordings

    def check_collectives(self, recordings, route):
        for rank, calls in recordings.items():
            got = collections.Counter((c["op"], c["rank"], c["nranks"]) for c in calls if c["op"] in COLLECTIVES)
            self.assertEqual(got, expected(rank), "%s, rank %d" % (route, rank))
            # Three communicators, told apart.
            comms = {c["comm_id"] for c in calls if c["op"] == "all_reduce"}
            self.assertEqual(len(comms), 3, "%s, rank %d: %s" % (route, rank, calls))
            bcast = [c for c in calls if c["op"] == "broadcast"][0]
            self.assertEqual((bcast["count"], bcast["bytes"], bcast["peer"], bcast["data_type"]),
                             (128, 256, 0, "bfloat16"), route)

    def test_preload_hooks_see_config_split_and_scalable_communicators(self):
        recordings = self.record("preload", plugin=False)
        self.check_collectives(recordings, "LD_PRELOAD")
        for rank, calls in recordings.items():
            inits = [c for c in calls if c["op"] == "comm_init"]
            self.assertEqual(len(inits), 3, calls)  # config, split, scalable
            self.assertTrue(all(c["rank"] >= 0 and c["nranks"] == WORLD for c in inits), inits)
            sends = [c for c in calls if c["op"] == "send"]
            self.assertEqual(sends[0]["peer"], (rank + 1) % WORLD)
            self.assertEqual(sends[0]["group_depth"], 1)

    def test_preload_learns_rank_and_size_of_a_communicator_first_seen_in_a_call(self):
        # The default communicator made through pncclCommInitRankConfig: no hook saw it made.
        recordings = self.record("preload", plugin=False, extra={"NCCL_STYLE_UNHOOKED_INIT": "1"})
        self.check_collectives(recordings, "LD_PRELOAD, unhooked init")
        for calls in recordings.values():
            self.assertEqual(len([c for c in calls if c["op"] == "comm_init"]), 2, calls)  # split, scalable

    def test_init_all_gives_each_device_its_rank(self):
        # One process, one rank per device (ncclCommInitAll), under both routes.
        for mode, plugin in (("preload", False), ("injection", True), ("preload", True)):
            out = tempfile.mkdtemp(prefix="gw-nccl-routes-")
            env = gwtest.gapwatch_env(mode, out, {"SIMCUDA_DEVICES": "2"})
            env.pop("NCCL_PROFILER_PLUGIN", None)
            if plugin:
                env["NCCL_PROFILER_PLUGIN"] = gwtest.LIB
            r = gwtest.run([JOB, "all", "2"], env)
            self.assertEqual(r.returncode, 0, r.stderr)
            files = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".gwt")]
            self.assertEqual(len(files), 1)
            calls = [e for e in gwtest.dump(files[0]) if e["type"] == "nccl_call"]
            got = collections.Counter((c["op"], c["rank"], c["nranks"]) for c in calls if c["op"] != "group_start"
                                      and c["op"] != "group_end" and c["op"] != "comm_destroy")
            want = collections.Counter({("all_reduce", 0, 2): 1, ("all_reduce", 1, 2): 1})
            if mode == "preload":
                want.update({("comm_init", 0, 2): 1, ("comm_init", 1, 2): 1})
            self.assertEqual(got, want, "%s%s: %s" % (mode, " + plugin" if plugin else "", calls))

    def test_plugin_alone_records_every_collective(self):
        recordings = self.record("injection", plugin=True)
        self.check_collectives(recordings, "plugin v6")
        for calls in recordings.values():
            # The plugin sees calls, not communicator set-up or groups (the hooks' part).
            self.assertFalse([c for c in calls if c["op"] not in COLLECTIVES], calls)

    def test_plugin_v4_task_events_record_every_collective(self):
        # An NCCL that offers interface v4 at most (2.26): task events instead of API events.
        recordings = self.record("injection", plugin=True, extra={"GAPWATCH_SIM_NCCL_PROFILER_MAX": "4"})
        self.check_collectives(recordings, "plugin v4")
        for rank, calls in recordings.items():
            sends = [c for c in calls if c["op"] == "send"]
            self.assertEqual(sends[0]["peer"], (rank + 1) % WORLD)  # v4's task event has the peer

    def test_both_routes_record_each_call_once(self):
        hooks = self.record("preload", plugin=False)
        both = self.record("preload", plugin=True)
        self.check_collectives(both, "LD_PRELOAD + plugin")
        for rank in range(WORLD):
            ops = lambda calls: collections.Counter((c["op"], c["rank"], c["nranks"]) for c in calls)
            self.assertEqual(ops(both[rank]), ops(hooks[rank]), "rank %d" % rank)

    def test_nccl_says_which_plugin_version_it_loaded(self):
        for max_version, want in ((None, "(v6)"), ("5", "(v5)"), ("4", "(v4)")):
            extra = {"NCCL_DEBUG": "INFO", "NCCL_PROFILER_PLUGIN": gwtest.LIB}
            if max_version:
                extra["GAPWATCH_SIM_NCCL_PROFILER_MAX"] = max_version
            r = gwtest.run([JOB, "1"], gwtest.gapwatch_env("injection", tempfile.mkdtemp(), extra))
            self.assertEqual(r.returncode, 0, r.stderr)
            loaded = [l for l in r.stderr.splitlines() if "PROFILER/Plugin: Loaded" in l]
            self.assertEqual(len(loaded), 1, r.stderr)
            self.assertIn("Loaded gapwatch " + want, loaded[0])

    def test_no_plugin_with_none_or_a_missing_library(self):
        for value in ("none", "/nonexistent/libnccl-profiler-x.so"):
            out = tempfile.mkdtemp(prefix="gw-nccl-routes-")
            env = gwtest.gapwatch_env("injection", out, {"NCCL_DEBUG": "INFO", "NCCL_PROFILER_PLUGIN": value})
            r = gwtest.run([JOB, str(WORLD)], env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("Loaded", r.stderr)
            for f in os.listdir(out):
                calls = [e for e in gwtest.dump(os.path.join(out, f)) if e["type"] == "nccl_call"]
                self.assertEqual(calls, [], value)

    def test_plugin_without_recording_leaves_the_job_alone(self):
        out = tempfile.mkdtemp(prefix="gw-nccl-routes-")
        env = gwtest.gapwatch_env(None, out, {"GAPWATCH_DISABLE": "1", "NCCL_PROFILER_PLUGIN": gwtest.LIB})
        r = gwtest.run([JOB, str(WORLD)], env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([f for f in os.listdir(out) if f.endswith(".gwt")], [])


if __name__ == "__main__":
    gwtest.main(__name__)
