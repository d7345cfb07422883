"""A tiny CUDA program for cupti12_check.sh, standard library only (ctypes on libcuda.so.1): 20
launches of an empty kernel (from PTX, so no compiler is needed), a memset and a host-to-device
copy, then a sync. Prints one JSON line: what it did and every libcupti mapped in the process.

    cupti12_probe.py [--load-first LIBCUPTI]

--load-first loads that libcupti (RTLD_GLOBAL) before CUDA starts, as a cu12 PyTorch has its
wheel's libcupti.so.12 loaded: gapwatch must use that copy and load no second one."""
import ctypes
import json
import sys

PTX = b"""
.version 7.0
.target sm_50
.address_size 64
.visible .entry gw_cupti12_noop()
{
  ret;
}
"""
LAUNCHES = 20
BYTES = 1 << 20


def main(argv):
    out = {"launches": 0, "copies": 0, "memsets": 0, "error": ""}
    if len(argv) == 2 and argv[0] == "--load-first":
        ctypes.CDLL(argv[1], mode=ctypes.RTLD_GLOBAL)
        out["loaded_first"] = argv[1]
    try:
        cuda = ctypes.CDLL("libcuda.so.1")

        def check(name, *args):
            r = getattr(cuda, name)(*args)
            if r != 0:
                raise RuntimeError("%s returned %d" % (name, r))

        check("cuInit", 0)
        dev = ctypes.c_int()
        check("cuDeviceGet", ctypes.byref(dev), 0)
        ctx = ctypes.c_void_p()
        check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        check("cuCtxSetCurrent", ctx)
        module = ctypes.c_void_p()
        check("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(PTX))
        fn = ctypes.c_void_p()
        check("cuModuleGetFunction", ctypes.byref(fn), module, b"gw_cupti12_noop")
        for _ in range(LAUNCHES):
            check("cuLaunchKernel", fn, 1, 1, 1, 32, 1, 1, 0, None, None, None)
            out["launches"] += 1
        dptr = ctypes.c_uint64()
        check("cuMemAlloc_v2", ctypes.byref(dptr), ctypes.c_size_t(BYTES))
        check("cuMemsetD8_v2", dptr, ctypes.c_ubyte(0), ctypes.c_size_t(BYTES))
        out["memsets"] += 1
        host = ctypes.create_string_buffer(BYTES)
        check("cuMemcpyHtoD_v2", dptr, host, ctypes.c_size_t(BYTES))
        out["copies"] += 1
        check("cuCtxSynchronize")
    except (OSError, RuntimeError, AttributeError) as e:
        out["error"] = str(e)
    mapped = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libcupti" in line and "/" in line:
                mapped.add(line[line.index("/"):].strip())
    out["libcupti_mapped"] = sorted(mapped)
    print(json.dumps(out))
    return 0 if not out["error"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
