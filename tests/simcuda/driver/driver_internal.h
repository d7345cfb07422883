// Shared by the driver API's files (driver_*.cpp): how an exported driver entry point is traced.
#pragma once

#include <cuda.h>

#include "sim_driver.h"
#include "sim_driver_state.h"

namespace simcuda::driver {

// Runs `body(scope)` as one traced driver call: the CUPTI driver-domain ENTER and EXIT callbacks
// with `cbid`, `name` (the exported, versioned symbol: "cuMemAlloc_v2") and `params` (the struct of
// generated_cuda_meta.h), a correlation id of its own when the call is outermost, and an entry in
// the sim's API log with `kind`. Before cuInit every call fails with CUDA_ERROR_NOT_INITIALIZED,
// untraced, as the real driver does.
template <class Body>
CUresult traced(CUpti_CallbackId cbid, const char* name, SimCallKind kind, const void* params, Body&& body,
                const char* symbol = nullptr) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult ret = CUDA_SUCCESS;
  ApiScope scope(CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, kind, params, &ret, symbol);
  ret = body(scope);
  scope.finish();
  return ret;
}

// The context a call that needs one works in; nullptr when the thread has none.
inline CUcontext require_context() { return current_context(); }

inline bool valid_device(CUdevice d) { return d >= 0 && d < device_count(); }

// Host-side record of a synchronising call (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION).
void sync_record(ApiScope& scope, CUpti_ActivitySynchronizationType type, uint64_t enter, Stream* stream,
                 const Event* event);

// A stream handle as users pass it (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created one).
inline Stream* stream_of(CUstream handle) { return resolve_stream(handle, current_device()); }

// H200-like device facts the driver reports (driver_device.cpp).
size_t device_total_memory();
int device_attribute(CUdevice_attribute attr, bool* valid);

// A kernel as the driver API hands it out (CUfunction); driver_module.cpp makes them.
struct Function {
  uint32_t magic;
  const char* name;  // mangled, interned: kernel records and callbacks name it
  void* module;      // the Module it came from
  int max_dynamic_shared;
  int preferred_carveout;
  int required_cluster[3];
  int non_portable_cluster;
  int cluster_scheduling;
};
// The Function behind a handle, or nullptr (not a function, or its module was unloaded). Accepts a
// CUkernel too (cuLaunchKernel takes either since CUDA 12), giving the current context's function.
const Function* as_function(CUfunction f);

}  // namespace simcuda::driver
