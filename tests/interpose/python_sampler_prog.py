"""A Python job on the simulated CUDA runtime (through ctypes) whose launching thread spends time
outside CUDA calls in functions the test knows: python_sampler_test.py checks what the sampler
(interpose/python_sampler.h) saw there.

Usage: python_sampler_prog.py SIMLIB_DIR MODE SECONDS
  MODE lines   each step: a launch, then `in_python_work` busy in Python for 30 ms, then
               `in_sleep` asleep for 30 ms (a thread blocked in C, as a DataLoader's queue wait
               is), then a sync; the stretches are long against the 1 ms threshold and the
               period, so each is sampled.
  MODE churn   the launching thread changes its stack as fast as Python can between its launches
               (recursion to depth 300, generators, exceptions, code compiled on the fly), while
               other threads start and end; for the sampler's safety: no crash, every sample
               either read whole or counted as a miss.
  MODE busy    the launching thread waits inside CUDA (a sync) for all but a few microseconds of
               each step: nothing should be sampled.
"""
import ctypes
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_stacks_prog import Runtime  # noqa: E402


def in_python_work(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:  # LINE python_work
        total += 1  # LINE python_work
    return total


def in_sleep(seconds):
    time.sleep(seconds)  # LINE sleep


def recurse(depth):
    if depth == 0:
        try:
            raise ValueError("bottom")
        except ValueError:
            return sum(x for x in range(20))
    return recurse(depth - 1) + 1


def generated(n):
    for i in range(n):
        yield i * i


def churn(seconds):
    end = time.perf_counter() + seconds
    k = 0
    while time.perf_counter() < end:
        k += 1
        recurse(k % 300)
        sum(generated(k % 50))
        code = compile("def f%d(x):\n    return x + %d\n" % (k % 7, k), "<churn>", "exec")
        space = {}
        exec(code, space)
        try:
            [].pop()
        except IndexError:
            pass


def short_lived():
    recurse(50)


def main():
    simlib, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    runtime = Runtime(simlib)
    end = time.perf_counter() + seconds
    spawner_stop = threading.Event()

    def spawner():
        while not spawner_stop.is_set():
            t = threading.Thread(target=short_lived)
            t.start()
            t.join()

    helper = None
    if mode == "churn":
        helper = threading.Thread(target=spawner)
        helper.start()
    steps = 0
    while time.perf_counter() < end or steps == 0:  # LINE between
        runtime.launch(1000000)  # LINE between
        if mode == "lines":  # LINE between
            in_python_work(0.03)  # LINE between
            in_sleep(0.03)  # LINE between
        elif mode == "churn":
            churn(0.02)
        elif mode == "busy":
            runtime.launch(20000000)
        runtime.rt.cudaDeviceSynchronize()  # LINE between
        steps += 1  # LINE between
    if helper:
        spawner_stop.set()
        helper.join()
    print("steps", steps)


if __name__ == "__main__":
    main()
