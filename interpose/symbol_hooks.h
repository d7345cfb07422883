// symbol_hooks.h: what every LD_PRELOAD hook shares: finding the real function, and recording a
// call when the hooks are the probe (CUPTI could not be had) or for NCCL, which CUPTI does not see.
#pragma once

#include <dlfcn.h>

#include <atomic>

#include <cupti.h>

#include "cuda_api_map.h"
#include "host_clock.h"
#include "process_info.h"
#include "raw_event.h"
#include "recorder.h"

namespace gapwatch {

// Set once recording starts: true when the runtime hooks are the probe (no CUPTI).
extern std::atomic<bool> g_symbol_mode;
// Whether recording has been started (or found impossible) in this process.
extern std::atomic<bool> g_start_attempted;
// Whether the driver will call our InitializeInjection (CUDA_INJECTION64_PATH names us).
extern bool g_injection_is_us;
void ensure_started();
// True on the thread that is inside ensure_started(): a CUPTI call made while gapwatch starts
// (libcupti's own start-up reaching an exported name) must not start it again.
bool starting_on_this_thread();

// The next definition of `name` after this library (the real one), resolved on first use.
template <class F>
F real_function(std::atomic<F>& cache, const char* name) {
  F f = cache.load(std::memory_order_acquire);
  if (__builtin_expect(f == nullptr, 0)) {
    f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
    cache.store(f, std::memory_order_release);
  }
  return f;
}

// One hooked runtime call. Costs one relaxed load when CUPTI is the probe; records the call (with
// the same classification as the CUPTI probe) when the hooks are.
// The caller of the hooked runtime function in progress on this thread (its return address), for
// the CUPTI probe to attach to the call it records: "where did this sync come from". Set and
// cleared by the hooks (one thread-local store each way); nullptr when no hook is in progress.
extern thread_local const void* t_call_site __attribute__((tls_model("initial-exec")));

class RuntimeHookScope {
 public:
  // `caller`: __builtin_return_address(0) of the hook, taken in the hook itself.
  explicit RuntimeHookScope(const void* caller) : caller_(caller) {
    if (!t_call_site) t_call_site = caller, owns_call_site_ = true;
    if (__builtin_expect(!g_start_attempted.load(std::memory_order_acquire), 0)) {
      // Nobody will call InitializeInjection for us (another tool owns CUDA_INJECTION64_PATH):
      // start here. Otherwise the driver starts us inside this very call.
      if (!g_injection_is_us) ensure_started();
      enter_ = host_ticks();
    } else if (g_symbol_mode.load(std::memory_order_relaxed) && !t_inside_) {
      enter_ = host_ticks();
    }
    if (enter_) t_inside_ = true, owner_ = true;
  }
  ~RuntimeHookScope() {
    if (owner_) t_inside_ = false;
    if (owns_call_site_) t_call_site = nullptr;
  }
  void finish(CUpti_CallbackId cbid, const void* params, const char* name, int result) {
    if (!enter_ || !g_symbol_mode.load(std::memory_order_relaxed)) return;
    Recorder* recorder = Recorder::active();
    if (!recorder || Recorder::on_internal_thread()) return;
    uint64_t exit_ticks = host_ticks();
    ApiCallRecord* e = recorder->reserve_api_call();
    if (!e) return note_host_memory(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, params, result);  // dropped
    if (!classify_api_call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, params, e)) return;
    // Pinning and unpinning calls (rare): the table async copies are classified by.
    if (__builtin_expect(e->kind == wire::ApiKind::kHostAlloc || e->kind == wire::ApiKind::kHostFree, 0))
      note_host_memory(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, params, result);
    e->start_ticks = enter_;
    e->end_ticks = exit_ticks;
    e->api_name = name;
    e->return_code = result;
    e->call_site = caller_;
    recorder->attach_python_stack(e);
    recorder->publish();
  }

 private:
  uint64_t enter_ = 0;
  const void* caller_;
  bool owner_ = false;
  bool owns_call_site_ = false;
  // A hooked call made inside another (the runtime calling itself through our symbols) is not a
  // second call.
  static thread_local bool t_inside_ __attribute__((tls_model("initial-exec")));
};

}  // namespace gapwatch

#define GAPWATCH_HOOK extern "C" __attribute__((visibility("default")))
