// The bench's libcuda.so.1: cuInit loads CUDA_INJECTION64_PATH as the real driver does (a tool's
// InitializeInjection, gapwatch's under LD_PRELOAD), and a launch does nothing but fire the driver
// callbacks. Nested in a runtime launch, the driver call fires its own callbacks under the runtime
// call's correlation id (the simulator's convention, tests/simcuda/driver/api_trace.cpp).
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <mutex>

#include <cuda.h>
#include <cupti.h>

#include "fast_calls.h"
#include "fast_dispatch.h"

namespace {
FastCallbackTable g_table;
std::once_flag g_init_once;

void load_injection() {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path) return;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "fastcuda: CUDA_INJECTION64_PATH: cannot load %s: %s\n", path, dlerror());
    return;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(h, "InitializeInjection"));
  if (!init) {
    fprintf(stderr, "fastcuda: CUDA_INJECTION64_PATH: %s has no InitializeInjection\n", path);
    return;
  }
  init();
}
}  // namespace

namespace fastcuda {
thread_local int t_depth = 0;
thread_local uint32_t t_correlation = 0;
thread_local uint64_t t_callbacks = 0;
thread_local uint32_t t_next_id = 0, t_id_limit = 0;
std::atomic<uint32_t> g_id_blocks{1};

uint32_t next_correlation_id() {
  // Ids in blocks of 4096 per thread: unique across threads without a shared counter per call.
  if (t_next_id == t_id_limit) {
    t_next_id = g_id_blocks.fetch_add(1, std::memory_order_relaxed) << 12;
    t_id_limit = t_next_id + 4096;
  }
  return t_next_id++;
}

void init_once() { std::call_once(g_init_once, load_injection); }
}  // namespace fastcuda

extern "C" {
__attribute__((visibility("default"))) FastCallbackTable* fastcuda_callback_table() { return &g_table; }
__attribute__((visibility("default"))) uint64_t fastcuda_callbacks_on_this_thread() { return fastcuda::t_callbacks; }

__attribute__((visibility("default"))) CUresult cuInit(unsigned int) {
  fastcuda::init_once();
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                               unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                                               CUstream stream, void** params, void** extra) {
  cuLaunchKernel_params p{f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra};
  CUresult result = CUDA_SUCCESS;
  fastcuda::TracedCall call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &p,
                            &result, nullptr);
  return result;
}
}
