#!/usr/bin/env python3
"""collector_ingest.py [--producers 8] [--mb 48]: how fast one `gapwatch collector` takes streams.

Records examples/scenarios/launch-bound.json once on the simulated stack, then has N producer
threads send that recording's batches over and over (about MB megabytes each) into one collector at
once, as fast as the socket takes them. Prints bytes and events per second, counted from the
collector's own close lines, and the collector's peak resident memory. A benchmark, never asserted;
the producers share the machine's cores with the collector, so this is a lower bound."""
import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "interpose"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "collector"))
import gwtest  # noqa: E402
from collector_test import Collector  # noqa: E402


def split_frames(data):
    frames, i = [], 0
    while i < len(data):
        n = shift = 0
        j = i
        while True:
            c = data[j]
            j += 1
            n |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                break
        frames.append(data[i:j + n])
        i = j + n
    return frames


def peak_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--producers", type=int, default=8)
    ap.add_argument("--mb", type=int, default=48)
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    try:
        rec = os.path.join(work, "r.gwt")
        r = gwtest.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, "launch-bound.json"), "--quiet"],
                       gwtest.gapwatch_env("preload", rec))
        if r.returncode != 0:
            sys.exit("gapwatch-sim failed: " + r.stderr)
        frames = split_frames(open(rec, "rb").read()[12:])
        hello, body, bye = frames[0], b"".join(frames[1:-1]), frames[-1]
        reps = max(1, (args.mb << 20) // len(body))
        collector = Collector(work)

        def produce():
            s = collector.connect()
            s.sendall(hello)
            for _ in range(reps):
                s.sendall(body)
            s.sendall(bye)
            s.close()

        start = time.monotonic()
        threads = [threading.Thread(target=produce) for _ in range(args.producers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        collector.wait_log("closed (ended)", args.producers)
        seconds = time.monotonic() - start
        rss = peak_rss_kb(collector.proc.pid)
        lines = [l for l in collector.log().splitlines() if "closed (ended)" in l]
        events = sum(int(l.split("events ")[1].split(",")[0]) for l in lines)
        total = sum(int(l.split("bytes ")[1].split(",")[0]) for l in lines)
        collector.stop()
        print("collector ingest: %d producers, %.0f MB, %d events in %.2f s: %.0f MB/s, %.1f M events/s; "
              "collector peak RSS %.1f MiB" % (args.producers, total / 1e6, events, seconds, total / 1e6 / seconds,
                                               events / 1e6 / seconds, rss / 1024))
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
