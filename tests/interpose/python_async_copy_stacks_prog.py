"""Async copies of every kind from Python through ctypes on the simulated CUDA stack: device to
device, to and from pinned host memory (cudaMallocHost, cudaHostAlloc, cudaHostRegister,
cuMemAllocHost, cuMemHostRegister), to and from pageable memory, with the direction given and with
cudaMemcpyDefault / cuMemcpyAsync, host to host, and into memory after it was unregistered. Each
copy is made on a line that ends `# COPY <bytes> stack|none`: it moves that many bytes (unique per
line) and must carry the line's Python stack (`stack`: it can block the host) or none (`none`: it
only enqueues) in the recording (python_async_copy_stacks_test.py). Every copy is made REPEATS
times. With --after-pause SECONDS it makes, instead, one pinned copy (`# COPY <bytes> after-pause`)
after that long out of CUDA: like a launch, a copy that only enqueues carries its stack when it ends
a stretch of host time of GAPWATCH_PY_GAP_MS or more.

    python_async_copy_stacks_prog.py SIMLIB_DIR [--after-pause SECONDS]"""
import ctypes
import mmap
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_stacks_prog import Runtime  # noqa: E402

REPEATS = 3
H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4  # cudaMemcpyKind
P = ctypes.c_void_p
SIZE = ctypes.c_size_t


def declare(lib, name, *argtypes):
    getattr(lib, name).argtypes = list(argtypes)


class Copies:
    def __init__(self, simlib):
        self.runtime = Runtime(simlib)
        rt = self.rt = self.runtime.rt
        cu = self.cu = ctypes.CDLL(os.path.join(simlib, "libcuda.so.1"))
        declare(rt, "cudaMalloc", ctypes.POINTER(P), SIZE)
        declare(rt, "cudaMallocHost", ctypes.POINTER(P), SIZE)
        declare(rt, "cudaHostAlloc", ctypes.POINTER(P), SIZE, ctypes.c_uint)
        declare(rt, "cudaFreeHost", P)
        declare(rt, "cudaHostRegister", P, SIZE, ctypes.c_uint)
        declare(rt, "cudaHostUnregister", P)
        declare(rt, "cudaMemcpyAsync", P, P, SIZE, ctypes.c_int, P)
        declare(rt, "cudaMemcpy2DAsync", P, SIZE, P, SIZE, SIZE, SIZE, ctypes.c_int, P)
        declare(rt, "cudaMemcpyPeerAsync", P, ctypes.c_int, P, ctypes.c_int, SIZE, P)
        declare(rt, "cudaStreamSynchronize", P)
        declare(cu, "cuMemAllocHost_v2", ctypes.POINTER(P), SIZE)
        declare(cu, "cuMemFreeHost", P)
        declare(cu, "cuMemHostRegister_v2", P, SIZE, ctypes.c_uint)
        declare(cu, "cuMemHostUnregister", P)
        declare(cu, "cuMemcpyHtoDAsync_v2", ctypes.c_uint64, P, SIZE, P)
        declare(cu, "cuMemcpyDtoHAsync_v2", P, ctypes.c_uint64, SIZE, P)
        declare(cu, "cuMemcpyDtoDAsync_v2", ctypes.c_uint64, ctypes.c_uint64, SIZE, P)
        declare(cu, "cuMemcpyAsync", ctypes.c_uint64, ctypes.c_uint64, SIZE, P)
        self.dev = self.alloc(rt.cudaMalloc)
        self.dev2 = self.alloc(rt.cudaMalloc)
        self.pinned = self.alloc(rt.cudaMallocHost)
        self.pinned2 = self.alloc(rt.cudaMallocHost)
        ptr = P()
        self.check(rt.cudaHostAlloc(ctypes.byref(ptr), 4096, 0), "cudaHostAlloc")
        self.host_alloc = ptr.value
        self.driver_pinned = self.alloc(cu.cuMemAllocHost_v2)
        # Pageable memory: the program's own (page-aligned, as cudaHostRegister wants it).
        self.pages = mmap.mmap(-1, 4 * 4096)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.pages))
        self.pageable = base
        self.registered = base + 4096      # cudaHostRegister'ed, then unregistered
        self.driver_registered = base + 8192  # cuMemHostRegister'ed, then unregistered

    @staticmethod
    def check(code, what):
        if code:
            sys.exit("%s failed: %d" % (what, code))

    def alloc(self, fn):
        ptr = P()
        self.check(fn(ctypes.byref(ptr), 4096), fn.__name__)
        return ptr.value

    def runtime_copies(self):
        rt, s = self.rt, None
        rt.cudaMemcpyAsync(self.dev2, self.dev, 101, D2D, s)  # COPY 101 none
        rt.cudaMemcpyAsync(self.dev, self.pinned, 102, H2D, s)  # COPY 102 none
        rt.cudaMemcpyAsync(self.pinned, self.dev, 103, D2H, s)  # COPY 103 none
        rt.cudaMemcpyAsync(self.host_alloc, self.dev, 104, D2H, s)  # COPY 104 none
        rt.cudaMemcpyAsync(self.pinned + 512, self.dev, 105, D2H, s)  # COPY 105 none
        rt.cudaMemcpyAsync(self.pageable, self.dev, 106, D2H, s)  # COPY 106 stack
        rt.cudaMemcpyAsync(self.dev, self.pageable, 107, H2D, s)  # COPY 107 stack
        rt.cudaMemcpyAsync(self.dev, self.pinned, 108, DEFAULT, s)  # COPY 108 none
        rt.cudaMemcpyAsync(self.pinned, self.dev, 109, DEFAULT, s)  # COPY 109 none
        rt.cudaMemcpyAsync(self.dev, self.pageable, 110, DEFAULT, s)  # COPY 110 stack
        rt.cudaMemcpyAsync(self.pinned2, self.pinned, 111, H2H, s)  # COPY 111 stack
        rt.cudaMemcpy2DAsync(self.pinned, 16, self.dev, 16, 16, 7, D2H, s)  # COPY 112 none
        rt.cudaMemcpy2DAsync(self.pageable, 16, self.dev, 16, 16, 8, D2H, s)  # COPY 128 stack
        rt.cudaMemcpyPeerAsync(self.dev2, 0, self.dev, 0, 113, s)  # COPY 113 none

    def registered_copies(self, registered):
        rt, s = self.rt, None
        if registered:
            rt.cudaMemcpyAsync(self.registered, self.dev, 114, D2H, s)  # COPY 114 none
            rt.cudaMemcpyAsync(self.dev, self.registered, 115, H2D, s)  # COPY 115 none
        else:
            rt.cudaMemcpyAsync(self.registered, self.dev, 116, D2H, s)  # COPY 116 stack

    def driver_copies(self, registered):
        cu, s = self.cu, None
        cu.cuMemcpyDtoHAsync_v2(self.driver_pinned, self.dev, 117, s)  # COPY 117 none
        cu.cuMemcpyHtoDAsync_v2(self.dev, self.driver_pinned, 118, s)  # COPY 118 none
        cu.cuMemcpyDtoDAsync_v2(self.dev2, self.dev, 119, s)  # COPY 119 none
        cu.cuMemcpyDtoHAsync_v2(self.pageable, self.dev, 120, s)  # COPY 120 stack
        cu.cuMemcpyAsync(self.driver_pinned, self.dev, 121, s)  # COPY 121 none
        cu.cuMemcpyAsync(self.pageable, self.dev, 122, s)  # COPY 122 stack
        if registered:
            cu.cuMemcpyHtoDAsync_v2(self.dev, self.driver_registered, 123, s)  # COPY 123 none
        else:
            cu.cuMemcpyHtoDAsync_v2(self.dev, self.driver_registered, 124, s)  # COPY 124 stack


def main():
    copies = Copies(sys.argv[1])
    if "--after-pause" in sys.argv:
        time.sleep(float(sys.argv[sys.argv.index("--after-pause") + 1]))
        copies.rt.cudaMemcpyAsync(copies.dev, copies.pinned, 125, H2D, None)  # COPY 125 after-pause
        copies.rt.cudaStreamSynchronize(None)
        return
    rt, cu = copies.rt, copies.cu
    Copies.check(rt.cudaHostRegister(copies.registered, 4096, 0), "cudaHostRegister")
    Copies.check(cu.cuMemHostRegister_v2(copies.driver_registered, 4096, 0), "cuMemHostRegister")
    for _ in range(REPEATS):
        copies.runtime_copies()
        copies.registered_copies(True)
        copies.driver_copies(True)
    rt.cudaStreamSynchronize(None)
    # Unregistered: pageable again, so its copies can block once more.
    Copies.check(rt.cudaHostUnregister(copies.registered), "cudaHostUnregister")
    Copies.check(cu.cuMemHostUnregister(copies.driver_registered), "cuMemHostUnregister")
    for _ in range(REPEATS):
        copies.registered_copies(False)
        copies.driver_copies(False)
    rt.cudaStreamSynchronize(None)
    Copies.check(rt.cudaFreeHost(copies.pinned), "cudaFreeHost")
    Copies.check(cu.cuMemFreeHost(copies.driver_pinned), "cuMemFreeHost")


if __name__ == "__main__":
    main()
