// cuInit and what hangs off it: the device configuration, contexts and the injection mechanism.
//
// CUDA_INJECTION64_PATH: the real driver, during cuInit, loads the named library and calls its
// exported `int InitializeInjection(void)`; so does this one, once per process, before cuInit (and
// so the first runtime call) returns. A library that cannot be loaded or lacks the entry point is
// skipped with one line on stderr; the application goes on.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "sim_driver.h"
#include "sim_driver_state.h"

namespace simcuda {
namespace {

SimDeviceConfig g_config = {3000, 2000, 4000, 1000, 10000, 20.0, 20.0, 1000.0, 2.0, 1000.0, 50.0, 10000};
std::atomic<bool> g_configured{false};
std::once_flag g_init_once;
std::atomic<bool> g_initialized{false};
uint64_t g_init_ns = 0;
int g_device_count = 1;
std::atomic<const CuptiSink*> g_sink{nullptr};
thread_local int t_device = 0;

struct Context {
  int device;
  uint32_t uid;
  bool primary = true;
  std::atomic<bool> live{true};
  unsigned flags = 0;
};
std::mutex g_ctx_mu;
// Read lock-free on every traced call (as a driver's context lookup is); written under g_ctx_mu.
std::atomic<Context*> g_contexts[64] = {};
uint32_t g_next_ctx_uid = 1;
// Contexts made by cuCtxCreate are numbered above every device's primary context id (device + 1,
// at most 64), so no CUPTI context id names two contexts.
uint32_t g_next_created_uid = 65;

void run_injection() {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path) return;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "simcuda: CUDA_INJECTION64_PATH: cannot load %s: %s\n", path, dlerror());
    return;
  }
  auto entry = reinterpret_cast<int (*)(void)>(dlsym(handle, "InitializeInjection"));
  if (!entry) {
    fprintf(stderr, "simcuda: CUDA_INJECTION64_PATH: %s has no InitializeInjection\n", path);
    return;
  }
  entry();
}

void initialize() {
  g_init_ns = now_ns();
  if (const char* n = getenv("SIMCUDA_DEVICES")) g_device_count = std::max(1, std::min(64, atoi(n)));
  run_injection();
  g_initialized.store(true, std::memory_order_release);
}

}  // namespace

CUresult ensure_initialized() {
  std::call_once(g_init_once, initialize);
  return CUDA_SUCCESS;
}

int device_count() { return g_device_count; }
const SimDeviceConfig& config() { return g_config; }
const CuptiSink* cupti_sink() { return g_sink.load(std::memory_order_acquire); }
void set_cupti_sink(const CuptiSink* sink) { g_sink.store(sink, std::memory_order_release); }
int current_device() { return t_device; }
void set_current_device(int device) { t_device = device; }

CUcontext primary_context(int device) {
  device = std::max(0, std::min(device, g_device_count - 1));
  if (Context* c = g_contexts[device].load(std::memory_order_acquire)) return reinterpret_cast<CUcontext>(c);
  Context* created = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_ctx_mu);
    if (!g_contexts[device].load()) {
      created = new Context{device, g_next_ctx_uid++, true, true, 0};
      g_contexts[device].store(created, std::memory_order_release);
    }
  }
  if (created) {
    if (const CuptiSink* sink = cupti_sink(); sink && sink->resource) {
      CUpti_ResourceData data{};
      data.context = reinterpret_cast<CUcontext>(created);
      sink->resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &data);
    }
  }
  return reinterpret_cast<CUcontext>(g_contexts[device].load());
}

uint32_t context_uid(CUcontext ctx) { return ctx ? reinterpret_cast<Context*>(ctx)->uid : 0; }

bool driver_initialized() { return g_initialized.load(std::memory_order_acquire); }

bool primary_context_exists(int device) {
  return device >= 0 && device < g_device_count && g_contexts[device].load(std::memory_order_acquire) != nullptr;
}

namespace {
std::vector<Context*>& created_contexts() {  // every context cuCtxCreate made, live or not
  static auto* v = new std::vector<Context*>;
  return *v;
}
}  // namespace

bool is_context(CUcontext ctx) {
  if (!ctx) return false;
  for (int d = 0; d < g_device_count; ++d)
    if (g_contexts[d].load(std::memory_order_acquire) == reinterpret_cast<Context*>(ctx)) return true;
  std::lock_guard<std::mutex> lock(g_ctx_mu);
  for (Context* c : created_contexts())
    if (c == reinterpret_cast<Context*>(ctx)) return c->live;
  return false;
}

bool context_live(CUcontext ctx) {
  auto* c = reinterpret_cast<Context*>(ctx);
  if (!c) return false;
  if (c->primary) return g_contexts[c->device].load(std::memory_order_acquire) == c;
  return c->live.load(std::memory_order_acquire);
}

bool created_context_id(CUcontext ctx, uint32_t* id, int* device) {
  if (!ctx) return false;
  std::lock_guard<std::mutex> lock(g_ctx_mu);
  for (Context* c : created_contexts())
    if (c == reinterpret_cast<Context*>(ctx) && c->live) {
      *id = c->uid;
      *device = c->device;
      return true;
    }
  return false;
}

bool is_primary_context(CUcontext ctx) { return ctx && reinterpret_cast<Context*>(ctx)->primary; }

int context_device(CUcontext ctx) { return is_context(ctx) ? reinterpret_cast<Context*>(ctx)->device : -1; }

unsigned context_flags(CUcontext ctx) { return ctx ? reinterpret_cast<Context*>(ctx)->flags : 0; }

void set_context_flags(CUcontext ctx, unsigned flags) {
  if (ctx) reinterpret_cast<Context*>(ctx)->flags = flags;
}

void fire_context_resource(CUpti_CallbackId cbid, CUcontext ctx) {
  if (const CuptiSink* sink = cupti_sink(); sink && sink->resource) {
    CUpti_ResourceData data{};
    data.context = ctx;
    sink->resource(cbid, &data);
  }
}

CUcontext create_context(int device, unsigned flags) {
  Context* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_ctx_mu);
    c = new Context{device, g_next_created_uid++, false, true, flags};
    created_contexts().push_back(c);
  }
  fire_context_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, reinterpret_cast<CUcontext>(c));
  return reinterpret_cast<CUcontext>(c);
}

void destroy_context(CUcontext ctx) {
  auto* c = reinterpret_cast<Context*>(ctx);
  if (!c || c->primary) return;
  fire_context_resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, ctx);
  c->live.store(false, std::memory_order_release);  // kept: records already traced still name it
}

void reset_device(int device) {
  wait_device(device);
  Context* old = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_ctx_mu);
    old = g_contexts[device].exchange(nullptr);
  }
  if (old) {
    if (const CuptiSink* sink = cupti_sink(); sink && sink->resource) {
      CUpti_ResourceData data{};
      data.context = reinterpret_cast<CUcontext>(old);
      sink->resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &data);
    }
    // The old context object is kept: records already traced still name it.
  }
}

}  // namespace simcuda

extern "C" {

SIMCUDA_EXPORT void simcuda_configure(const SimDeviceConfig* c) {
  using simcuda::g_config;
  if (!c) return;
  if (c->launch_api_ns > 0) g_config.launch_api_ns = c->launch_api_ns;
  if (c->launch_latency_ns > 0) g_config.launch_latency_ns = c->launch_latency_ns;
  if (c->copy_api_ns > 0) g_config.copy_api_ns = c->copy_api_ns;
  if (c->sync_api_ns > 0) g_config.sync_api_ns = c->sync_api_ns;
  if (c->alloc_api_ns > 0) g_config.alloc_api_ns = c->alloc_api_ns;
  if (c->h2d_gbps > 0) g_config.h2d_gbps = c->h2d_gbps;
  if (c->d2h_gbps > 0) g_config.d2h_gbps = c->d2h_gbps;
  if (c->d2d_gbps > 0) g_config.d2d_gbps = c->d2d_gbps;
  if (c->pageable_factor > 0) g_config.pageable_factor = c->pageable_factor;
  if (c->memset_gbps > 0) g_config.memset_gbps = c->memset_gbps;
  if (c->nccl_gbps > 0) g_config.nccl_gbps = c->nccl_gbps;
  if (c->nccl_latency_ns > 0) g_config.nccl_latency_ns = c->nccl_latency_ns;
  simcuda::g_configured = true;
}

SIMCUDA_EXPORT uint64_t simcuda_init_ns(void) { return simcuda::g_init_ns; }

}  // extern "C"
