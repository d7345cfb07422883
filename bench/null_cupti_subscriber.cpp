// A CUPTI subscriber that asks for what gapwatch asks for (the same callbacks, the same activity
// kinds, buffers handed back) and does nothing with it. Injected in place of gapwatch, it measures
// what CUPTI itself costs a launch, so the benchmark can tell that apart from gapwatch's own cost.
#include <stdlib.h>

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
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_callback, nullptr) != CUPTI_SUCCESS) return 1;
  for (const CUpti_CallbackId* id = gapwatch::kRecordedRuntimeCbids; *id; ++id)
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  for (const CUpti_CallbackId* id = gapwatch::kRecordedDriverCbids; *id; ++id)
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  cuptiActivityRegisterCallbacks(requested, completed);
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    cuptiActivityEnable(k);
  cuptiActivityFlushPeriod(100);
  return 1;
}
