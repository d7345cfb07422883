// Runtime symbol hooks (LD_PRELOAD only): the fallback probe when CUPTI cannot be had. Each hook
// calls the real function and, in fallback mode, records the call with the params struct CUPTI
// would have passed, so both modes classify it the same way. Host times only: without CUPTI
// there are no device timestamps, and calls that bypass libcudart (cuBLAS, NCCL, Triton use the
// driver directly; nvcc links cudart statically by default) are not seen. The report says so.
#include <cuda_runtime_api.h>

#include "symbol_hooks.h"

using namespace gapwatch;

extern "C" {
cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
}

namespace {

struct LaunchKernelV13000Params {  // layout of cudaLaunchKernel's, with the cudaKernel_t first
  cudaKernel_t kernel;
  dim3 gridDim, blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};

// Declares the cache for the real function and a hook body that records `cbid` with `params`.
#define REAL(fn) \
  static std::atomic<decltype(&fn)> real_##fn{nullptr}; \
  auto real = real_function(real_##fn, #fn); \
  if (!real) return cudaErrorInitializationError

}  // namespace

GAPWATCH_HOOK cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shmem,
                                           cudaStream_t stream) {
  REAL(cudaLaunchKernel);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(func, grid, block, args, shmem, stream);
  cudaLaunchKernel_v7000_params p{func, grid, block, args, shmem, stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, "cudaLaunchKernel", r);
  return r;
}

GAPWATCH_HOOK cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shmem,
                                             cudaStream_t stream) {
  REAL(__cudaLaunchKernel);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(kernel, grid, block, args, shmem, stream);
  LaunchKernelV13000Params p{kernel, grid, block, args, shmem, stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &p, "__cudaLaunchKernel", r);
  return r;
}

GAPWATCH_HOOK cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                                  size_t shmem, cudaStream_t stream) {
  REAL(__cudaLaunchKernel_ptsz);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(kernel, grid, block, args, shmem, stream);
  LaunchKernelV13000Params p{kernel, grid, block, args, shmem, stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, &p, "__cudaLaunchKernel_ptsz", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  REAL(cudaLaunchKernelExC);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(config, func, args);
  cudaLaunchKernelExC_v11060_params p{config, func, args};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, &p, "cudaLaunchKernelExC", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  REAL(cudaGraphLaunch);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(exec, stream);
  cudaGraphLaunch_v10000_params p{exec, stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &p, "cudaGraphLaunch", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  REAL(cudaMemcpy);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(dst, src, count, kind);
  cudaMemcpy_v3020_params p{dst, src, count, kind};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &p, "cudaMemcpy", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  REAL(cudaMemcpyAsync);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(dst, src, count, kind, stream);
  cudaMemcpyAsync_v3020_params p{dst, src, count, kind, stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &p, "cudaMemcpyAsync", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  REAL(cudaMemset);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(ptr, value, count);
  cudaMemset_v3020_params p{ptr, value, count};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, &p, "cudaMemset", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  REAL(cudaMemsetAsync);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(ptr, value, count, stream);
  cudaMemsetAsync_v3020_params p{ptr, value, count, stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, &p, "cudaMemsetAsync", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  REAL(cudaStreamSynchronize);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(stream);
  cudaStreamSynchronize_v3020_params p{stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &p, "cudaStreamSynchronize", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaDeviceSynchronize(void) {
  REAL(cudaDeviceSynchronize);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real();
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, nullptr, "cudaDeviceSynchronize", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  REAL(cudaEventSynchronize);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(event);
  cudaEventSynchronize_v3020_params p{event};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, &p, "cudaEventSynchronize", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  REAL(cudaEventRecord);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(event, stream);
  cudaEventRecord_v3020_params p{event, stream};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, &p, "cudaEventRecord", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  REAL(cudaStreamWaitEvent);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(stream, event, flags);
  cudaStreamWaitEvent_v3020_params p{stream, event, flags};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, &p, "cudaStreamWaitEvent", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaMalloc(void** ptr, size_t size) {
  REAL(cudaMalloc);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(ptr, size);
  cudaMalloc_v3020_params p{ptr, size};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p, "cudaMalloc", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaFree(void* ptr) {
  REAL(cudaFree);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(ptr);
  cudaFree_v3020_params p{ptr};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &p, "cudaFree", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaMallocHost(void** ptr, size_t size) {
  REAL(cudaMallocHost);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(ptr, size);
  cudaMallocHost_v3020_params p{ptr, size};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, &p, "cudaMallocHost", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  REAL(cudaHostAlloc);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(ptr, size, flags);
  cudaHostAlloc_v3020_params p{ptr, size, flags};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, &p, "cudaHostAlloc", r);
  return r;
}

GAPWATCH_HOOK cudaError_t cudaFreeHost(void* ptr) {
  REAL(cudaFreeHost);
  RuntimeHookScope scope(__builtin_return_address(0));
  cudaError_t r = real(ptr);
  cudaFreeHost_v3020_params p{ptr};
  scope.finish(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, &p, "cudaFreeHost", r);
  return r;
}
