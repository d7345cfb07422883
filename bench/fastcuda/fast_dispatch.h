// fast_dispatch.h: the callback table the bench-only CUDA trio shares (bench/fastcuda/README.md).
//
// The bench's libcuda owns the table; its libcupti fills it in (subscriber, enabled ids) and its
// libcudart and libcuda fire through it. A launch is an enter callback, nothing, an exit callback
// per enabled domain, so what a profiler adds to a launch is most of what the bench times.
#pragma once

#include <stdint.h>

#include <cupti.h>

struct FastCallbackTable {
  CUpti_CallbackFunc subscriber;  // nullptr: nobody subscribed
  void* userdata;
  // enabled[domain][cbid]: one byte read per call site, as cheap a "is anybody listening" as any.
  uint8_t enabled[CUPTI_CB_DOMAIN_SIZE][1024];
};

extern "C" {
// Exported by the bench's libcuda.so.1.
FastCallbackTable* fastcuda_callback_table();
// Callbacks this thread has had fired at it so far (enter and exit each count one).
uint64_t fastcuda_callbacks_on_this_thread();
}
