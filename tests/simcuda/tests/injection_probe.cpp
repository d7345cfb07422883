// A stand-in for an injected profiler: the library CUDA_INJECTION64_PATH names in
// injection_test. InitializeInjection counts its calls, notes when it ran, and subscribes to CUPTI
// as real profilers do there, counting the runtime calls it then sees.
#include <cupti.h>
#include <time.h>

#include <atomic>

#define PROBE_EXPORT extern "C" __attribute__((visibility("default")))

// Read by the test through dlsym on this library.
extern "C" {

__attribute__((visibility("default"))) std::atomic<int> probe_initialize_calls{0};
__attribute__((visibility("default"))) std::atomic<uint64_t> probe_initialize_ns{0};
__attribute__((visibility("default"))) std::atomic<int> probe_runtime_enters{0};
__attribute__((visibility("default"))) std::atomic<int> probe_first_cbid{-1};
}

static void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || d->callbackSite != CUPTI_API_ENTER) return;
  int expected = -1;
  probe_first_cbid.compare_exchange_strong(expected, int(cbid));
  ++probe_runtime_enters;
}

PROBE_EXPORT int InitializeInjection(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  probe_initialize_ns = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  ++probe_initialize_calls;
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_callback, nullptr) == CUPTI_SUCCESS) cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  return 1;
}
