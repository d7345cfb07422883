// The bench's libcupti.so.13: one subscriber, the callbacks it enables, and an activity API that
// accepts everything and never has a record to hand back (the bench's kernels never run).
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "fast_dispatch.h"

namespace {
CUpti_SubscriberHandle const kHandle = reinterpret_cast<CUpti_SubscriberHandle>(uintptr_t(0x5b));
CUpti_BuffersCallbackRequestFunc g_requested = nullptr;
CUpti_BuffersCallbackCompleteFunc g_completed = nullptr;

bool known(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE && cbid < 1024;
}
}  // namespace

extern "C" {
CUptiResult cuptiGetVersion(uint32_t* version) {
  if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (bench fastcuda)";
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetLastError(void) { return CUPTI_SUCCESS; }

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc fn, void* userdata) {
  if (!handle || !fn) return CUPTI_ERROR_INVALID_PARAMETER;
  FastCallbackTable* t = fastcuda_callback_table();
  if (t->subscriber) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  t->userdata = userdata;
  t->subscriber = fn;
  *handle = kHandle;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc fn, void* userdata,
                              CUpti_SubscriberParams*) {
  return cuptiSubscribe(handle, fn, userdata);
}
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  FastCallbackTable* t = fastcuda_callback_table();
  t->subscriber = nullptr;
  memset(t->enabled, 0, sizeof t->enabled);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid) {
  if (!known(domain, cbid)) return CUPTI_ERROR_INVALID_PARAMETER;
  fastcuda_callback_table()->enabled[domain][cbid] = enable ? 1 : 0;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  if (!known(domain, 0)) return CUPTI_ERROR_INVALID_PARAMETER;
  memset(fastcuda_callback_table()->enabled[domain], enable ? 1 : 0, 1024);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                           CUpti_BuffersCallbackCompleteFunc completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  g_requested = requested;
  g_completed = completed;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivityDisable(CUpti_ActivityKind) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivityFlushAll(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivityGetNextRecord(uint8_t*, size_t, CUpti_Activity**) { return CUPTI_ERROR_MAX_LIMIT_REACHED; }
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = 0;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc) { return CUPTI_SUCCESS; }
CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *timestamp = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiFinalize(void) { return CUPTI_SUCCESS; }
}
