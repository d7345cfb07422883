"""Every thread gets a ring, however many start at once: a pool of 64 (or 200) threads released
together, each launching N kernels, leaves all of its launches in the recording and no drop; pools
started one after another reuse the rings of the threads that exited."""
import collections
import os
import tempfile
import unittest

import gwtest

THREAD_BURST = os.path.join(gwtest.BUILD, "bin", "thread_burst")


class ThreadRings(unittest.TestCase):
    def record(self, threads, launches, rounds=1, extra=None):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            env = gwtest.gapwatch_env("preload", out, extra)
            r = gwtest.run([THREAD_BURST, str(threads), str(launches), str(rounds)], env, cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("lost", r.stderr)
            return gwtest.dump(out)

    def check_every_launch(self, events, threads, launches, rounds):
        per_thread = collections.Counter(e["thread_id"] for e in events
                                         if e["type"] == "api_call" and e["kind"] == "launch")
        self.assertEqual(sum(per_thread.values()), threads * launches * rounds)
        if rounds == 1:
            self.assertEqual(len(per_thread), threads)
        # Across pools Linux may give an exited thread's id to a new one: whole multiples then.
        self.assertEqual({n % launches for n in per_thread.values()}, {0})
        bye = [e for e in events if e["type"] == "goodbye"][0]
        self.assertEqual(bye["events_dropped"], 0)
        self.assertEqual([e for e in events if e["type"] == "drop"], [])

    def test_64_threads_started_together_lose_nothing(self):
        self.check_every_launch(self.record(64, 50), 64, 50, 1)

    def test_200_threads_started_together_lose_nothing(self):
        # Small rings: 200 threads' worth of the default 1 MiB would only cost the test machine memory.
        self.check_every_launch(self.record(200, 20, extra={"GAPWATCH_RING_KB": "64"}), 200, 20, 1)

    def test_pools_one_after_another_reuse_the_rings_of_exited_threads(self):
        # 12 pools of 100 threads, each started as soon as the last is joined: the new threads claim
        # rings while the flusher drains and frees those of the threads just gone.
        self.check_every_launch(self.record(100, 5, 12, extra={"GAPWATCH_RING_KB": "16"}), 100, 5, 12)


if __name__ == "__main__":
    gwtest.main(__name__)
