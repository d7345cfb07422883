// fast_calls.h: one traced call of the bench-only CUDA trio: the enter callback when constructed,
// the exit callback when destroyed, each only if the call's id is enabled.
#pragma once

#include <atomic>

#include <cupti.h>

#include "fast_dispatch.h"

namespace fastcuda {

extern thread_local int t_depth;
extern thread_local uint32_t t_correlation;
extern thread_local uint64_t t_callbacks;
uint32_t next_correlation_id();
void init_once();

// A fake context: gapwatch reads the pointer and its uid, never what it points at.
inline CUcontext fake_context() { return reinterpret_cast<CUcontext>(uintptr_t(0x1000)); }

class TracedCall {
 public:
  TracedCall(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name, const void* params,
             void* result, const char* symbol)
      : domain_(domain), cbid_(cbid), result_(result) {
    if (t_depth++ == 0) t_correlation = next_correlation_id();
    FastCallbackTable* table = fastcuda_callback_table();
    if (!table->enabled[domain][cbid]) return;
    CUpti_CallbackFunc fn = table->subscriber;
    if (!fn) return;
    data_.functionName = name;
    data_.functionParams = params;
    data_.symbolName = symbol;
    data_.context = fake_context();
    data_.contextUid = 1;
    data_.correlationData = &correlation_data_;
    data_.correlationId = t_correlation;
    fire(CUPTI_API_ENTER);
  }
  ~TracedCall() {
    --t_depth;
    if (!data_.functionName) return;
    data_.functionReturnValue = result_;  // valid at exit only, as CUPTI gives it
    fire(CUPTI_API_EXIT);
  }
  TracedCall(const TracedCall&) = delete;
  TracedCall& operator=(const TracedCall&) = delete;

 private:
  void fire(CUpti_ApiCallbackSite site) {
    FastCallbackTable* table = fastcuda_callback_table();
    if (!table->subscriber) return;
    data_.callbackSite = site;
    ++t_callbacks;
    table->subscriber(table->userdata, domain_, cbid_, &data_);
  }
  CUpti_CallbackDomain domain_;
  CUpti_CallbackId cbid_;
  void* result_;
  uint64_t correlation_data_ = 0;
  CUpti_CallbackData data_{};
};

}  // namespace fastcuda
