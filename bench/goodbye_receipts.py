#!/usr/bin/env python3
"""goodbye_receipts.py [--processes 64] [--sync-ms 0 10 20 ...] [--launches 50] [--build build]: how
many of N processes ending at once get the receipt of their Goodbye from one collector within the
library's 1 s bound (docs/recording-format.md, "Receipts"), the others writing the rest of their
stream to a fallback file of their own.

N exits_on_cue jobs (tests/interpose/exits_on_cue.cpp) stream to one `gapwatch collector`, run
their first phase, and are then all told to exit at once (their input closed). The collector runs
with tests/interpose/slow_disk_shim.cpp preloaded, which adds SYNC_MS to every fsync (each ended
process's report costs two), as a network file system or a busy disk would. Prints, per SYNC_MS,
the processes that said "streamed" (got their receipt) and those that fell back. A benchmark,
never asserted; the test is fault_injection_test.py's
test_64_processes_ending_together_all_get_the_receipt_of_their_goodbye."""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "interpose"))


def measure(processes, launches, sync_ms, workdir):
    import gwtest
    from fault_injection_test import CUE, SLOW_DISK, Collector
    d = tempfile.mkdtemp(prefix="gw-receipts-", dir=workdir)
    try:
        env = dict(os.environ, LD_PRELOAD=SLOW_DISK, GAPWATCH_TEST_SYNC_MS=str(sync_ms))
        collector = Collector(d, env=env)
        job_env = gwtest.gapwatch_env("preload", os.path.join(d, "rest-%p.gwt"), {"GAPWATCH_SOCKET": collector.socket})
        jobs = [subprocess.Popen([CUE, str(launches)], env=job_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE) for _ in range(processes)]
        for job in jobs:
            line = job.stdout.readline()
            if line.strip() != b"phase 1 done":
                raise SystemExit("a job did not start: %r" % line)
        start = time.monotonic()
        for job in jobs:
            job.stdin.close()
            job.stdin = None
        errors = [job.communicate(timeout=600)[1].decode() for job in jobs]
        took = time.monotonic() - start
        collector.end(signal.SIGTERM)
        acknowledged = sum("streamed" in e for e in errors)
        fell_back = len([f for f in os.listdir(d) if f.startswith("rest-")])
        return acknowledged, fell_back, took
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--launches", type=int, default=50)
    parser.add_argument("--sync-ms", type=int, nargs="+", default=[0, 5, 10, 20])
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--workdir", default=None, help="where the collector writes (default: the system's temp)")
    args = parser.parse_args()
    os.environ["GAPWATCH_BUILD_DIR"] = os.path.abspath(args.build)
    print("processes  sync ms  receipt  fell back  all exited in")
    for sync_ms in args.sync_ms:
        acknowledged, fell_back, took = measure(args.processes, args.launches, sync_ms, args.workdir)
        print("%9d  %7d  %7d  %9d  %11.2f s" % (args.processes, sync_ms, acknowledged, fell_back, took))


if __name__ == "__main__":
    main()
