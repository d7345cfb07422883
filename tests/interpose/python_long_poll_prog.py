"""A Python thread that polls one stream for longer than the recorder keeps an unclaimed stack
(two flushes, about 100 ms, before issue 36): a kernel of SECONDS, then cudaStreamQuery in a loop
on the marked line until it is done. The poll loop's record is published when the loop ends; its
stack, posted at the loop's first not-ready poll, must still be there (python_long_poll_test.py).

    python_long_poll_prog.py SIMLIB SECONDS"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_stacks_prog import Runtime  # noqa: E402


def wait_by_polling(runtime):
    while runtime.rt.cudaStreamQuery(None) != 0:  # LINE poll
        pass


def main():
    runtime = Runtime(sys.argv[1])
    runtime.rt.cudaStreamQuery.argtypes = [ctypes.c_void_p]
    runtime.launch(int(float(sys.argv[2]) * 1e9))
    wait_by_polling(runtime)
    runtime.rt.cudaDeviceSynchronize()


if __name__ == "__main__":
    main()
