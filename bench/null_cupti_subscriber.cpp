// A CUPTI subscriber that asks for what gapwatch asks for (the same callbacks, the same activity
// kinds, buffers handed back) and does nothing with it. Injected in place of gapwatch
// (CUDA_INJECTION64_PATH), it measures what CUPTI itself costs a launch, so the benchmarks can tell
// that apart from gapwatch's own cost.
//
// It finds CUPTI as gapwatch does: GAPWATCH_CUPTI_PATH, else the copy the process already has
// (PyTorch's wheel loads its own), else libcupti.so.13 or .12 from the loader's path; so the same
// library serves the simulator, the bench-only trio and a real GPU.
// NULL_SUBSCRIBER_DOMAINS=runtime|driver|both (default both) enables only that domain's share of
// gapwatch's ids: what each domain's callbacks cost a launch.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <initializer_list>

#include <cupti.h>

#include "cuda_api_map.h"

namespace {
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 2 * 1024 * 1024;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) { free(buffer); }

void* open_cupti() {
  if (const char* path = getenv("GAPWATCH_CUPTI_PATH"); path && *path) return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return h;
  for (const char* name : {"libcupti.so.13", "libcupti.so.12"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  void* lib = open_cupti();
  auto subscribe = lib ? symbol<decltype(&cuptiSubscribe)>(lib, "cuptiSubscribe") : nullptr;
  auto enable_callback = lib ? symbol<decltype(&cuptiEnableCallback)>(lib, "cuptiEnableCallback") : nullptr;
  auto register_callbacks =
      lib ? symbol<decltype(&cuptiActivityRegisterCallbacks)>(lib, "cuptiActivityRegisterCallbacks") : nullptr;
  auto activity_enable = lib ? symbol<decltype(&cuptiActivityEnable)>(lib, "cuptiActivityEnable") : nullptr;
  auto flush_period = lib ? symbol<decltype(&cuptiActivityFlushPeriod)>(lib, "cuptiActivityFlushPeriod") : nullptr;
  if (!subscribe || !enable_callback || !register_callbacks || !activity_enable) {
    fprintf(stderr, "null_cupti_subscriber: no usable libcupti (%s)\n", lib ? "entry points missing" : dlerror());
    return 1;
  }
  const char* domains = getenv("NULL_SUBSCRIBER_DOMAINS");
  const bool runtime = !domains || strcmp(domains, "driver") != 0;
  const bool driver = !domains || strcmp(domains, "runtime") != 0;
  CUpti_SubscriberHandle sub;
  if (subscribe(&sub, on_callback, nullptr) != CUPTI_SUCCESS) {
    fprintf(stderr, "null_cupti_subscriber: cuptiSubscribe failed\n");
    return 1;
  }
  if (runtime)
    for (const CUpti_CallbackId* id = gapwatch::kRecordedRuntimeCbids; *id; ++id)
      enable_callback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  if (driver)
    for (const CUpti_CallbackId* id = gapwatch::kRecordedDriverCbids; *id; ++id)
      enable_callback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  register_callbacks(requested, completed);
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    activity_enable(k);
  if (flush_period) flush_period(100);
  if (getenv("NULL_SUBSCRIBER_VERBOSE")) fprintf(stderr, "null_cupti_subscriber: subscribed\n");
  return 1;
}
