"""The hard rules of the injected library (ARCHITECTURE.md section 4, issue 3):
- it exports only InitializeInjection, the hooked symbols, the NCCL profiler plugin structs and
  gapwatch_*, and needs no CUDA
  library, libprotobuf, spdlog, fmt or C++ runtime;
- in a process that never initialises CUDA it does nothing: same output, same exit code, no
  file, no line on stderr;
- on the user's launching thread it allocates nothing, takes no lock, makes no system call."""
import os
import re
import subprocess
import tempfile
import unittest

import gwtest

HOOKED = {
    "cudaLaunchKernel", "__cudaLaunchKernel", "__cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cudaGraphLaunch",
    "cudaMemcpy", "cudaMemcpyAsync", "cudaMemset", "cudaMemsetAsync", "cudaStreamSynchronize",
    "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaEventRecord", "cudaStreamWaitEvent", "cudaMalloc",
    "cudaFree", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost", "ncclAllReduce", "ncclBroadcast", "ncclReduce",
    "ncclAllGather", "ncclReduceScatter", "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd",
    "ncclCommInitRank", "ncclCommDestroy", "ncclBcast", "ncclAlltoAll", "ncclGather", "ncclScatter",
    "ncclCommInitRankConfig", "ncclCommInitRankScalable", "ncclCommInitAll", "ncclCommSplit", "ncclCommAbort",
    # The CUPTI functions another client shares CUPTI through (cupti_sharing.h).
    "cuptiSubscribe", "cuptiSubscribe_v2", "cuptiUnsubscribe", "cuptiEnableCallback", "cuptiEnableDomain",
    "cuptiEnableAllDomains", "cuptiGetCallbackState", "cuptiActivityRegisterCallbacks", "cuptiActivityEnable",
    "cuptiActivityDisable", "cuptiActivityFlushAll", "cuptiActivityFlushPeriod", "cuptiActivityGetNextRecord",
    "cuptiActivityRegisterTimestampCallback", "cuptiFinalize",
    # os._exit() and _exit(): a worker leaving by them ends its recording as at exit() (entry.cpp).
    "_exit",
}
# The NCCL profiler plugin's structs (NCCL_PROFILER_PLUGIN names libgapwatch.so).
PLUGIN = {"ncclProfiler_v6", "ncclProfiler_v5", "ncclProfiler_v4"}


def unexpected_exports(library):
    """The dynamic symbols `library` defines beyond the entry point, the hooks, the plugin structs
    and gapwatch_*; raises when InitializeInjection or a plugin struct is missing. Shared with
    tests/install, which checks the installed copy by the same rules."""
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True)
    names = {line.split()[-1].split("@")[0] for line in out.stdout.splitlines() if line.strip()}
    if "InitializeInjection" not in names or not PLUGIN <= names:
        raise AssertionError("%s lacks InitializeInjection or a plugin struct: %s"
                             % (library, sorted(({"InitializeInjection"} | PLUGIN) - names)))
    return {n for n in names if n != "InitializeInjection" and n not in HOOKED | PLUGIN
            and not n.startswith("gapwatch_")}


FORBIDDEN_NEEDED = r"(?i)cuda|cupti|nccl|protobuf|spdlog|fmt|stdc\+\+"


def forbidden_needs(library):
    """The NEEDED entries of `library` that name a CUDA library, libprotobuf, spdlog, fmt or the
    C++ runtime; raises when readelf finds none at all (not a shared library)."""
    out = subprocess.run(["readelf", "-d", library], capture_output=True, text=True, check=True)
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", out.stdout)
    if not needed:
        raise AssertionError("readelf found no NEEDED entries at all in " + library)
    return [lib for lib in needed if re.search(FORBIDDEN_NEEDED, lib)]


# The newest glibc the library may need. It is loaded into the user's process, on the user's
# distribution: a symbol version that glibc lacks is a fatal error of the dynamic loader, which
# would stop the job. 2.35 is Ubuntu 22.04's; what needs it is _dl_find_object, which the static
# libgcc unwinder of Debian 12's GCC uses. arc4random (2.36) came with libstdc++'s iostreams and
# std::random_device, which the library does not use (process_info.cpp reads /proc with read(2)).
NEWEST_GLIBC = (2, 35)


def glibc_versions_needed(library):
    """Each GLIBC_x.y version `library` references, with the symbols that need it, newest first."""
    out = subprocess.run(["objdump", "-T", library], capture_output=True, text=True, check=True)
    versions = {}
    for line in out.stdout.splitlines():
        m = re.search(r"\(GLIBC_(\d+)\.(\d+)(?:\.\d+)?\)\s+(\S+)$", line)
        if m:
            versions.setdefault((int(m.group(1)), int(m.group(2))), []).append(m.group(3))
    if not versions:
        raise AssertionError("objdump found no GLIBC symbol version in " + library)
    return sorted(versions.items(), reverse=True)


class ExportsAndDependencies(unittest.TestCase):
    def test_exports_only_the_entry_point_hooks_and_gapwatch_symbols(self):
        self.assertEqual(unexpected_exports(gwtest.LIB), set())

    def test_needs_no_cuda_protobuf_spdlog_fmt_or_cxx_runtime(self):
        self.assertEqual(forbidden_needs(gwtest.LIB), [])

    def test_loads_on_glibc_2_35(self):
        too_new = [(v, names) for v, names in glibc_versions_needed(gwtest.LIB) if v > NEWEST_GLIBC]
        self.assertEqual(too_new, [], "symbols that need a glibc newer than %d.%d" % NEWEST_GLIBC)


class NothingWithoutCuda(unittest.TestCase):
    COMMANDS = [["/bin/true"], ["sh", "-c", "echo hi"], ["python3", "-c", "print(1)"], ["sh", "-c", "exit 3"]]

    def test_non_cuda_programs_behave_exactly_as_without_gapwatch(self):
        for cmd in self.COMMANDS:
            with self.subTest(cmd=cmd), tempfile.TemporaryDirectory() as plain_dir, \
                    tempfile.TemporaryDirectory() as preload_dir:
                plain = gwtest.run(cmd, gwtest.gapwatch_env(None), cwd=plain_dir)
                env = gwtest.gapwatch_env("preload")
                env.pop("GAPWATCH_CUPTI_PATH")
                preloaded = gwtest.run(cmd, env, cwd=preload_dir)
                self.assertEqual(preloaded.returncode, plain.returncode)
                self.assertEqual(preloaded.stdout, plain.stdout)
                self.assertEqual(preloaded.stderr, "")
                self.assertEqual(os.listdir(preload_dir), [])


class HotPath(unittest.TestCase):
    PROBE = os.path.join(gwtest.BUILD, "bin", "hot_path_probe")

    def counts(self, mode, extra=None):
        with tempfile.TemporaryDirectory() as d:
            r = gwtest.run([self.PROBE, "20000"], gwtest.gapwatch_env(mode, os.path.join(d, "r.gwt"), extra), cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            m = re.search(r"allocations=(\d+) locks=(\d+)", r.stdout)
            self.assertIsNotNone(m, r.stdout)
            if mode:
                self.assertTrue(os.path.getsize(os.path.join(d, "r.gwt")) > 1000, "nothing was recorded")
            return int(m.group(1)), int(m.group(2))

    def test_gapwatch_adds_no_allocation_and_no_lock_to_the_launch_loop(self):
        base = self.counts(None)
        for mode, extra in [("preload", None), ("injection", None), ("preload", {"GAPWATCH_PROBES": "symbols"})]:
            with self.subTest(mode=mode, extra=extra):
                self.assertEqual(self.counts(mode, extra), base)

    def syscalls_in_window(self, mode, extra=None):
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "strace.txt")
            env = gwtest.gapwatch_env(mode, os.path.join(d, "r.gwt"), extra)
            r = gwtest.run(["strace", "-f", "-o", trace, self.PROBE, "5000"], env, cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(trace) as f:
                lines = f.read().splitlines()
            main_tid = lines[0].split()[0]
            mine = [l.split(None, 1)[1] for l in lines if l.split()[0] == main_tid]
            marks = [i for i, l in enumerate(mine) if l.startswith("getppid(")]
            self.assertEqual(len(marks), 2, "window markers not found")
            # futex here can only be a mutex of the simulator's, contended by CUPTI's worker
            # thread: gapwatch's share of locks is checked (zero) by the lock count instead.
            # What remains is the simulator's own (its logs growing by mmap): the same with and
            # without gapwatch.
            return sorted(re.sub(r"[(<].*", "", l) for l in mine[marks[0] + 1:marks[1]]
                          if not l.startswith(("futex(", "<...")))

    def test_gapwatch_adds_no_system_call_to_the_launching_thread(self):
        base = self.syscalls_in_window(None)
        for extra in [None, {"GAPWATCH_PROBES": "symbols"}]:
            with self.subTest(extra=extra):
                self.assertEqual(self.syscalls_in_window("preload", extra), base)


if __name__ == "__main__":
    gwtest.main(__name__)
