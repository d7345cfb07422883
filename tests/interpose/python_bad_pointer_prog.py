"""A blocking call made while the calling frame's code object names its file through a pointer to
unmapped memory: what a build laid out otherwise than gapwatch's table looks like to the walk (a
field read where another lies). The pointer is put back right after the call; Python itself does
not read co_filename in between. The next calls are plain ones. Exits 0.

    python_bad_pointer_prog.py SIMLIB"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_stacks_prog import Runtime  # noqa: E402

NOWHERE = 0x100000000000  # 16 TiB: aligned, in the user half, checked unmapped below


def mapped(address):
    with open("/proc/self/maps") as f:
        for line in f:
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            if start <= address < end:
                return True
    return False


def victim(runtime):
    runtime.rt.cudaDeviceSynchronize()  # LINE victim


def plain(runtime):
    runtime.rt.cudaDeviceSynchronize()  # LINE plain


def main():
    runtime = Runtime(sys.argv[1])
    plain(runtime)
    code = victim.__code__
    words = (ctypes.c_uint64 * 32).from_address(id(code))
    filename = id(code.co_filename)  # read before the slot points nowhere: Python reads it too
    slots = [i for i in range(32) if words[i] == filename]
    assert len(slots) == 1, "co_filename's slot not found once in the code object: %s" % slots
    assert not mapped(NOWHERE)
    words[slots[0]] = NOWHERE
    try:
        victim(runtime)
    finally:
        words[slots[0]] = filename
    plain(runtime)


if __name__ == "__main__":
    main()
