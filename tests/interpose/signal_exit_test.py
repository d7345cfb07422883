"""A program whose SIGTERM handler calls _exit while its threads launch, allocate and sync: under
LD_PRELOAD the _exit hook runs in the signal handler, on a thread interrupted anywhere (inside the
CUDA stack, malloc or gapwatch's own hooks, holding their locks). 200 runs, several at once (load),
the signal at varied moments: none may hang, and each leaves with the program's own status
(issue 36, item 5). The recordings they leave are readable: whole frames, a Goodbye where the
library had the time to write it (docs/usage.md, "Leaving by _exit")."""
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import gwtest

PROGRAM = os.path.join(gwtest.BUILD, "bin", "exits_from_signal")
RUNS = 200
AT_ONCE = 8
STATUS = 7  # exits_from_signal.cpp's kStatus
# Only a hang is caught here: a run takes well under a second on this kind of machine.
HANG_S = 20


def one_run(index, workdir, rng_seed):
    rng = random.Random(rng_seed)
    env = gwtest.gapwatch_env("preload", os.path.join(workdir, "r-%p.gwt"))
    hung = threading.Event()
    with subprocess.Popen([PROGRAM], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        # A run that hangs, before "ready" or after the signal, is killed at HANG_S and said so.
        def kill():
            hung.set()
            proc.kill()
        timer = threading.Timer(HANG_S, kill)
        timer.start()
        try:
            ready = proc.stdout.readline().strip() == "ready"
            if ready:
                time.sleep(rng.uniform(0, 0.05))  # anywhere in the launch, allocation and sync loop
                proc.send_signal(signal.SIGTERM)
            stderr = proc.stderr.read()
            proc.wait()
        finally:
            timer.cancel()
    if hung.is_set():
        return (index, "hung (killed after %d s)" % HANG_S, stderr)
    if not ready:
        return (index, "never ready (status %s)" % proc.returncode, stderr)
    if proc.returncode != STATUS:
        return (index, "status %s" % proc.returncode, stderr)
    return (index, None, stderr)


class SignalExit(unittest.TestCase):
    def test_exit_from_a_sigterm_handler_never_hangs_and_keeps_the_status(self):
        with tempfile.TemporaryDirectory() as d:
            started = time.monotonic()
            with ThreadPoolExecutor(AT_ONCE) as pool:
                results = list(pool.map(lambda i: one_run(i, d, 1000 + i), range(RUNS)))
            took = time.monotonic() - started
            failures = [(i, what, err[-400:]) for i, what, err in results if what]
            print("%d runs, %d at once, in %.1f s; %d failed" % (RUNS, AT_ONCE, took, len(failures)))
            self.assertEqual(failures, [], "runs that hung or lost their status: %d of %d" % (len(failures), RUNS))
            # What the runs left reads as recordings (whole frames; a Goodbye where there was time).
            recordings = sorted(f for f in os.listdir(d) if f.endswith(".gwt"))
            self.assertTrue(recordings)
            for name in recordings[:5]:
                gwtest.dump(os.path.join(d, name))


if __name__ == "__main__":
    gwtest.main(__name__)
