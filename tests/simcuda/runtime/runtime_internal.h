// Shared by the simulated runtime's files: traced-call helpers, the kernel and memory registries.
#pragma once

#include <cuda_runtime_api.h>
// cupti.h (through sim_driver.h) brings the runtime and driver params structs of the callbacks.

#include "../driver/sim_driver.h"

namespace simcuda::runtime {

cudaError_t record_error(cudaError_t error);  // sets the thread's last error when not success

// Runs `body(scope)` as one traced runtime call: initialises the driver (cuInit's injection) and
// the context first, as the first call of a real runtime does.
template <class Body>
cudaError_t traced(CUpti_CallbackId cbid, const char* name, SimCallKind kind, const void* params, Body&& body,
                   const char* symbol = nullptr) {
  ensure_initialized();
  primary_context(current_device());
  cudaError_t ret = cudaSuccess;
  ApiScope scope(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name, kind, params, &ret, symbol);
  ret = body(scope);
  scope.finish();
  return record_error(ret);
}

// The driver call a runtime call makes underneath: fires the driver-domain callbacks, nested.
template <class Body>
CUresult driver_call(CUpti_CallbackId cbid, const char* name, SimCallKind kind, const void* params, Body&& body,
                     const char* symbol = nullptr) {
  CUresult ret = CUDA_SUCCESS;
  ApiScope scope(CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, kind, params, &ret, symbol);
  ret = body(scope);
  scope.finish();
  return ret;
}

// A registered kernel; what cudaKernel_t points to in the simulator.
struct Kernel {
  const void* host_stub;
  const char* name;  // mangled device name
};
const Kernel* kernel_for_stub(const void* host_stub);

// Stream capture (CUDA graphs): a launch on a capturing stream becomes a node instead of work.
bool capture_if_active(Stream* stream, const OpRequest& request);
bool stream_is_capturing(Stream* stream);
// A "potentially unsafe" call (cudaMalloc, synchronous copies and memsets, syncs, queries) while
// this thread's capture mode prohibits it (cudaStreamCaptureModeGlobal / ThreadLocal, as
// documented at cudaStreamBeginCapture): cudaErrorStreamCaptureUnsupported, and the captures that
// prohibit it are invalidated. `unsafe` false: nothing to check (returns cudaSuccess).
cudaError_t capture_check_unsafe(bool unsafe);
// cudaEventRecord on a capturing stream: the event captures the stream's current nodes; true when
// the stream is capturing (then nothing is queued on the device).
bool capture_event_record(Stream* stream, const Event* event);
// cudaStreamWaitEvent on an event recorded in a capture: the stream joins that capture (or adds
// the event's nodes to its dependencies). Returns false (and sets *error = cudaSuccess) when the
// capture machinery has nothing to do with it; otherwise true with the call's result in *error.
bool capture_stream_wait(Stream* stream, const Event* event, cudaError_t* error);
// Whether the event was last recorded in a capture still in progress (cudaEventQuery and
// cudaEventSynchronize then fail with cudaErrorCapturedEvent, as documented).
bool event_is_captured(const Event* event);

// Copies and memsets as graph nodes: the op a node runs, from the pointers and sizes.
OpRequest copy_request(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
OpRequest memset_request(void* ptr, size_t bytes);

// Memory: what a pointer is, for copy kinds and pageable/pinned.
SimMemKind memory_kind(const void* ptr);
size_t device_bytes_in_use();  // cudaMalloc'd and cudaMallocManaged bytes not yet freed
void* reserve_device(size_t size);  // device address space (nullptr when exhausted)
bool forget(void* ptr, SimMemKind kind);  // drops an allocation of that kind starting at ptr
bool pointer_info(const void* ptr, SimMemKind* kind, bool* registered);  // false: not known memory
// The bodies of cudaMemcpy(Async) and cudaMemset(Async); per_thread: the _ptds/_ptsz forms (a
// null stream is the per-thread default stream).
cudaError_t copy_call(ApiScope& scope, void* dst, const void* src, size_t count, cudaMemcpyKind kind, void* stream,
                      bool async, bool per_thread);
cudaError_t memset_call(ApiScope& scope, void* ptr, size_t count, void* stream, bool async, bool per_thread);
// A launch (runtime_launch.cpp), for the launch entry points of other files.
cudaError_t launch_kernel(CUpti_CallbackId cbid, const char* api, const void* params, const void* func, dim3 grid,
                          dim3 block, void** args, size_t shared_mem, cudaStream_t stream, bool per_thread);

// Device properties (runtime_properties.cpp).
bool device_attribute(int attr, int device, int* value);  // false: not a (non-reserved) attribute
size_t device_total_memory();
unsigned device_flags();  // cudaSetDeviceFlags

}  // namespace simcuda::runtime
