// Host functions in stream order: cudaLaunchHostFunc and cudaStreamAddCallback.
//
// What the CUDA documentation says, and the simulator does: the function runs on the host once all
// work queued on the stream before it has completed; work queued on the stream after it does not
// start until the function has returned; the functions of one context run one at a time on a thread
// the runtime owns, not on the calling thread. The virtual device computes device times without a
// thread per stream, but a host function needs a real thread, so each call queues a
// SIM_OP_HOST_FUNC op whose end is unknown until the function returns (as an NCCL kernel's end is
// unknown until its peers arrive); the device's callback thread (virtual_device.cpp) runs it as soon
// as what it waits for has finished, with no lock held, so the function may make CUDA calls (on
// other streams) or start threads. A callback that waits for its own stream deadlocks, as the
// documentation warns it does on a GPU. cudaStreamAddCallback's callback gets the stream handle it
// was added to and cudaSuccess (the simulator has no asynchronous errors). During stream capture,
// cudaLaunchHostFunc becomes a host node; cudaStreamAddCallback is not allowed there (the
// documentation points to cudaLaunchHostFunc), and returns cudaErrorStreamCaptureUnsupported.
#include "runtime_internal.h"

using namespace simcuda;
using namespace simcuda::runtime;

namespace {

struct StreamCallback {
  cudaStreamCallback_t callback;
  cudaStream_t stream;
  void* user_data;
};

void run_stream_callback(void* p) {
  auto* cb = static_cast<StreamCallback*>(p);
  cb->callback(cb->stream, cudaSuccess, cb->user_data);
  delete cb;
}

cudaError_t host_func(ApiScope& scope, cudaStream_t handle, void (*fn)(void*), void* user_data, bool per_thread,
                      bool allow_capture) {
  if (!fn) return cudaErrorInvalidValue;
  void* h = handle;
  if (per_thread && h == nullptr) h = reinterpret_cast<void*>(cudaStreamPerThread);
  Stream* stream = resolve_stream(h, current_device());
  scope.set_stream(stream_id(stream));
  spend(config().launch_api_ns);
  OpRequest r;
  r.kind = SIM_OP_HOST_FUNC;
  r.stream = stream;
  r.correlation_id = scope.correlation_id();
  r.host_fn = fn;
  r.host_user_data = user_data;
  if (stream_is_capturing(stream)) {
    if (!allow_capture) return cudaErrorStreamCaptureUnsupported;
    return capture_if_active(stream, r) ? cudaSuccess : cudaErrorStreamCaptureInvalidated;
  }
  scope.set_op(enqueue(r));
  return cudaSuccess;
}

cudaError_t launch_host_func(CUpti_CallbackId cbid, const char* name, cudaStream_t stream, cudaHostFn_t fn,
                             void* user_data, bool per_thread) {
  cudaLaunchHostFunc_v10000_params params{stream, fn, user_data};
  return traced(cbid, name, SIM_CALL_HOST_FUNC, &params, [&](ApiScope& scope) -> cudaError_t {
    cuLaunchHostFunc_params dp{reinterpret_cast<CUstream>(stream), fn, user_data};
    cudaError_t ret = cudaSuccess;
    driver_call(per_thread ? CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz : CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc,
                per_thread ? "cuLaunchHostFunc_ptsz" : "cuLaunchHostFunc", SIM_CALL_HOST_FUNC, &dp,
                [&](ApiScope&) {
                  ret = host_func(scope, stream, fn, user_data, per_thread, true);
                  return ret == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
                });
    return ret;
  });
}

cudaError_t add_callback(CUpti_CallbackId cbid, const char* name, cudaStream_t stream, cudaStreamCallback_t callback,
                         void* user_data, unsigned flags, bool per_thread) {
  cudaStreamAddCallback_v5000_params params{stream, callback, user_data, flags};
  return traced(cbid, name, SIM_CALL_HOST_FUNC, &params, [&](ApiScope& scope) -> cudaError_t {
    if (!callback || flags != 0) return cudaErrorInvalidValue;  // "flags: reserved, must be 0"
    cuStreamAddCallback_params dp{reinterpret_cast<CUstream>(stream), reinterpret_cast<CUstreamCallback>(callback),
                                  user_data, flags};
    cudaError_t ret = cudaSuccess;
    driver_call(per_thread ? CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz
                           : CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback,
                per_thread ? "cuStreamAddCallback_ptsz" : "cuStreamAddCallback", SIM_CALL_HOST_FUNC, &dp,
                [&](ApiScope&) {
                  auto* cb = new StreamCallback{callback, stream, user_data};
                  ret = host_func(scope, stream, run_stream_callback, cb, per_thread, false);
                  if (ret != cudaSuccess) delete cb;
                  return ret == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
                });
    return ret;
  });
}

}  // namespace

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  return launch_host_func(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc", stream, fn,
                          user_data, false);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  return launch_host_func(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000, "cudaLaunchHostFunc_ptsz", stream,
                          fn, user_data, true);
}

SIMCUDA_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data,
                                                 unsigned int flags) {
  return add_callback(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000, "cudaStreamAddCallback", stream, callback,
                      user_data, flags, false);
}

SIMCUDA_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                                      void* user_data, unsigned int flags) {
  return add_callback(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000, "cudaStreamAddCallback_ptsz", stream,
                      callback, user_data, flags, true);
}

}  // extern "C"
