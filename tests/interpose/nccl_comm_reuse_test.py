"""A communicator made at the address of one another thread is destroying is recorded with its own
rank and size, not the destroyed one's (issue 36, item 7). The hooks forget a destroyed
communicator before the real destroy frees it: forgotten after (as before), a communicator that
took the address in between, made by a call the hooks do not see, kept the old one's rank, because
the hooks' cache still knew the address. nccl_comm_reuse.cpp makes the window certain: the simulated
NCCL frees a destroyed communicator, gives its memory to the next one made, and with
SIMCUDA_NCCL_DESTROY_LINGER_MS returns from the destroy only seconds later."""
import os
import tempfile
import unittest

import gwtest

PROGRAM = os.path.join(gwtest.BUILD, "bin", "nccl_comm_reuse")


class NcclCommReuse(unittest.TestCase):
    def test_a_communicator_at_a_destroyed_ones_address_has_its_own_rank(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            # The linger only has to outlast this thread's init and all-reduce (well under a
            # millisecond); 3 s leaves a slow machine room, and the run lasts that long.
            env = gwtest.gapwatch_env("preload", out, {"SIMCUDA_DEVICES": "2", "SIMCUDA_NCCL_DESTROY_LINGER_MS": "3000",
                                                        "NCCL_PROFILER_PLUGIN": "none"})
            r = gwtest.run([PROGRAM], env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("reused", r.stdout.split())
            calls = [e for e in gwtest.dump(out) if e["type"] == "nccl_call" and e["op"] == "all_reduce"]
            self.assertEqual([(c["rank"], c["nranks"]) for c in calls], [(0, 1)], calls)


if __name__ == "__main__":
    gwtest.main(__name__)
