#!/usr/bin/env python3
"""collector_ingest.py [--producers 8] [--steps 600]: how fast one `gapwatch collector` takes
streams, analysing them live, against the offline engine on the same events.

Records examples/scenarios/launch-bound.json with STEPS steps (about 6 MB) once on the simulated
stack, then has N producer threads send that recording into one collector at once, as fast as the
socket takes it: N processes' streams, each checked, written to its .gwt and analysed live. Prints
bytes and events per second, counted from the collector's own close lines, the collector's peak
resident memory, then the time `gapwatch report` takes for the N recordings it wrote, one after the
other, and the ratio of the two rates. A benchmark, never asserted; the producers share the
machine's cores with the collector, so the collector's rate is a lower bound."""
import argparse
import glob
import json
import os
import shutil
import subprocess
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
    ap.add_argument("--steps", type=int, default=600,
                    help="steps of launch-bound.json recorded (12 in the example: about 100 KB each)")
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    try:
        # One long recording, time moving forward all along (the live analysis orders events by
        # time: a repeated stretch would be late events, not work), sent by every producer.
        with open(os.path.join(gwtest.SCENARIOS, "launch-bound.json")) as f:
            scenario = json.load(f)
        scenario["steps"]["count"] = args.steps
        scenario_path = os.path.join(work, "launch-bound-long.json")
        with open(scenario_path, "w") as f:
            json.dump(scenario, f)
        rec = os.path.join(work, "r.gwt")
        r = gwtest.run([gwtest.SIM, scenario_path, "--quiet"], gwtest.gapwatch_env("preload", rec), timeout=600)
        if r.returncode != 0:
            sys.exit("gapwatch-sim failed: " + r.stderr)
        stream = open(rec, "rb").read()[12:]
        out = os.path.join(work, "out")
        collector = Collector(work)

        def produce():
            s = collector.connect()
            s.sendall(stream)
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

        # The offline engine on the same events: `gapwatch report` of each recording the collector
        # wrote, one after the other (one thread, as the collector's loop).
        files = sorted(glob.glob(os.path.join(collector.output, "*.gwt")))
        offline_start = time.monotonic()
        for f in files:
            rr = subprocess.run([gwtest.GAPWATCH, "report", "--json", f], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, timeout=600)
            if rr.returncode != 0:
                sys.exit("gapwatch report failed: " + rr.stderr.decode())
        offline_seconds = time.monotonic() - offline_start
        live_rate = events / seconds
        offline_rate = events / offline_seconds
        print("collector ingest, live analysis: %d producers, %.0f MB, %d events in %.2f s: %.0f MB/s, "
              "%.2f M events/s; collector peak RSS %.1f MiB" % (args.producers, total / 1e6, events, seconds,
                                                                total / 1e6 / seconds, live_rate / 1e6, rss / 1024))
        print("offline engine (gapwatch report of the %d recordings, one after the other): %.2f s, %.2f M events/s"
              % (len(files), offline_seconds, offline_rate / 1e6))
        print("collector / offline, events per second: %.2f" % (live_rate / offline_rate))
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
