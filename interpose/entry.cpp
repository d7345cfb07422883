// The two ways in, and the way out.
//
//  - CUDA_INJECTION64_PATH: the driver loads this library during cuInit and calls
//    InitializeInjection, once per process that uses CUDA.
//  - LD_PRELOAD: the constructor only points CUDA_INJECTION64_PATH at this library (when unset), so
//    the driver takes the same path; and the symbol hooks are in place. A process that never
//    initialises CUDA (a shell, a compiler, a DataLoader worker) gets no thread, no file, no output.
//  - Exit: an on_exit handler flushes CUPTI, writes Goodbye with the status the process passed to
//    exit() (on_exit, unlike atexit, is given it; returning from main is exit() too) and names the
//    file on stderr.
//  - _exit (LD_PRELOAD only): os._exit(), which Python's multiprocessing and DataLoader workers
//    leave by, skips on_exit; the hook has the flusher end the recording, waiting a bounded time
//    without a lock (it may run in a signal handler), then exits as _exit does.
//  - fork: a child of a process that was recording records nothing (its parent's threads and locks
//    are not there, and CUDA refuses a forked child of an initialised parent anyway), and closes its
//    copy of the parent's collector connection or file (Recorder::close_sink_in_child). A child forked
//    before its parent started (a worker forked before the first CUDA call) is a process like any
//    other: it records from its own first CUDA call, to its own file (output_path's fork rule).
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <string>

#include "cupti_probe.h"
#include "hook_reach.h"
#include "host_clock.h"
#include "recorder.h"
#include "settings.h"
#include "symbol_hooks.h"

namespace gapwatch {

std::atomic<bool> g_symbol_mode{false};
std::atomic<bool> g_start_attempted{false};
bool g_injection_is_us = false;
thread_local bool RuntimeHookScope::t_inside_ = false;
thread_local const void* t_call_site = nullptr;

namespace {

bool g_in_forked_child = false;
bool g_forked_before_start = false;  // this process was forked before its parent started recording
// Threads inside ensure_started() or about to take its lock: a fork while one is there leaves the
// child with a start half done (its mutex perhaps held by a thread that is not in the child).
std::atomic<int> g_threads_starting{0};

namespace probe = wire::Probe;

std::string own_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ensure_started), &info) && info.dli_fname) return info.dli_fname;
  return "";
}

// What the symbol hooks record when CUPTI cannot be had, in words for the stderr line.
std::string recorded_without_cupti(const HookReach& cudart, const HookReach& nccl) {
  std::string text;
  if (cudart.live) {
    text = "host-side runtime calls only (no device timestamps)";
    if (!cudart.behind.empty()) text += ", those " + cudart.behind + " passes on (it defines them ahead of gapwatch)";
    if (!nccl.live) text += "; no NCCL calls";
    return text;
  }
  if (nccl.live) return "nothing but NCCL calls (preload libgapwatch.so to hook the runtime)";
  return "nothing (preload libgapwatch.so to hook the runtime and NCCL)";
}

void on_process_exit(int status, void*) {
  Recorder* recorder = Recorder::active();
  if (!recorder || recorder->pid() != uint32_t(getpid())) return;
  cupti_flush();
  int seen_by_parent = status & 0xff;  // what wait() and the shell see: exit(-1) is 255
  recorder->finish(wire::ExitReason::kNormal, &seen_by_parent);
}

void on_fork_child() {
  if (g_start_attempted.load(std::memory_order_acquire) || g_threads_starting.load(std::memory_order_acquire) != 0) {
    g_in_forked_child = true;
    g_start_attempted.store(true, std::memory_order_release);  // nothing left to start in the child
    if (Recorder* recorder = Recorder::active()) recorder->abandon_in_child();
    else Recorder::close_sink_in_child();  // a start in progress at the fork may have opened it
    return;
  }
  g_forked_before_start = true;  // nothing started yet: the child may start on its own
}

}  // namespace

namespace {
thread_local bool t_starting = false;
}  // namespace

bool starting_on_this_thread() { return t_starting; }

void ensure_started() {
  static std::mutex mu;
  if (t_starting) return;
  if (g_start_attempted.load(std::memory_order_acquire)) return;
  // A child forked while a start was in progress records nothing, and must not take the lock:
  // the thread that held it at the fork is not in this process, so it is never released (the
  // child once blocked forever at its first CUDA call). Checked before the lock, not after.
  if (g_in_forked_child) return;
  struct Counted {
    Counted() { g_threads_starting.fetch_add(1, std::memory_order_acq_rel); }
    ~Counted() { g_threads_starting.fetch_sub(1, std::memory_order_acq_rel); }
  } counted;
  std::lock_guard<std::mutex> lock(mu);
  struct Starting {
    Starting() { t_starting = true; }
    ~Starting() { t_starting = false; }
  } starting;
  if (g_start_attempted.load(std::memory_order_acquire)) return;
  Settings settings = read_settings();
  settings.forked_child = g_forked_before_start;
  if (settings.disabled || g_in_forked_child) {
    g_start_attempted.store(true, std::memory_order_release);
    return;
  }
  CuptiAttach cupti;
  if (settings.symbols_only) cupti.why_not = "CUPTI not used (GAPWATCH_PROBES=symbols)";
  else cupti = cupti_attach(settings);

  std::vector<uint32_t> probes;
  const HookReach cudart = hook_reach("cudaLaunchKernel");
  const HookReach nccl = hook_reach("ncclAllReduce");
  if (cupti.ok) probes = {probe::kCuptiRuntimeCallbacks, probe::kCuptiDriverCallbacks, probe::kCuptiActivity};
  else if (cudart.live) probes = {probe::kCudartHooks};
  if (nccl.live) probes.push_back(probe::kNcclHooks);
  if (settings.python_sampling && settings.python_stacks) probes.push_back(probe::kPythonSampler);

  Recorder* recorder = Recorder::start(settings, probes, cupti.version, cupti.ok ? "" : cupti.why_not);
  if (recorder) {
    if (cupti.ok) {
      recorder->set_device_record_pull(cupti_flush_finished, cupti_flush);
      cupti_enable();
      log_line(settings, LogLevel::kInfo, "CUPTI %u: %s (%s)", cupti.version, cupti.library.c_str(), cupti.how.c_str());
      // Without LD_PRELOAD another CUPTI client here cannot share with gapwatch: it is refused a
      // subscription (older Kineto: torch.profiler traces CPU only) or takes the activity API
      // (current Kineto: gapwatch goes blind). Said once, where such a client is likely: the
      // process had libcupti before gapwatch (PyTorch loads it at import).
      if (cupti.already_loaded && !cupti_sharing_reachable())
        log_line(settings, LogLevel::kWarn,
                 "this process loaded libcupti before gapwatch: a profiler of its own (torch.profiler) cannot "
                 "share CUPTI with gapwatch unless libgapwatch.so is preloaded (LD_PRELOAD); without it, that "
                 "profiler loses its GPU activity or gapwatch its device records. Set GAPWATCH_DISABLE=1 to "
                 "leave CUPTI to the other profiler");
    } else {
      g_symbol_mode.store(true, std::memory_order_release);
      log_line(settings, LogLevel::kWarn, "%s; recording %s", cupti.why_not.c_str(),
               recorded_without_cupti(cudart, nccl).c_str());
    }
    on_exit(on_process_exit, nullptr);
  }
  g_start_attempted.store(true, std::memory_order_release);
}

}  // namespace gapwatch

// os._exit() and _exit(): the recording ends as at exit(), best effort. _exit is what signal and
// crash handlers call, being async-signal-safe, so this hook must be too: no lock, no allocation,
// no join, no CUPTI call on this thread, at most Recorder::kExitCallBoundMs of waiting
// (finish_from_exit_call; docs/usage.md says what it keeps). A vfork child (posix_spawn,
// subprocess) also calls _exit, sharing its parent's memory: the pid check leaves the parent's
// recorder alone, and the exit itself is the system call, not a symbol looked up.
extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  gapwatch::Recorder* recorder = gapwatch::Recorder::active();
  if (recorder && recorder->pid() == uint32_t(getpid())) recorder->finish_from_exit_call(status & 0xff);
  for (;;) syscall(SYS_exit_group, status);
}

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  gapwatch::choose_host_clock();  // again: a library loaded by the driver alone may run this first
  gapwatch::ensure_started();
  return 1;  // what NVIDIA's samples and Kineto return
}

__attribute__((constructor)) static void gapwatch_on_load() {
  using namespace gapwatch;
  if (disabled_by_environment()) return;
  choose_host_clock();
  std::string self = own_path();
  const char* injection = getenv("CUDA_INJECTION64_PATH");
  if (!injection || !*injection) {
    if (!self.empty()) setenv("CUDA_INJECTION64_PATH", self.c_str(), 0);
    g_injection_is_us = !self.empty();
  } else {
    char a[4096], b[4096];
    g_injection_is_us = realpath(injection, a) && realpath(self.c_str(), b) && strcmp(a, b) == 0;
  }
  pthread_atfork(nullptr, nullptr, on_fork_child);
}
