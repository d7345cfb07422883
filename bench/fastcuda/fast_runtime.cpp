// The bench's libcudart.so.13: what a launch loop needs and nothing else. A runtime launch fires
// the runtime callbacks around the driver's cuLaunchKernel, as the real runtime's launch reaches
// the driver inside it (both domains' callbacks fire: research/cupti-field-notes.md, section 5).
#include <stdint.h>

#include <atomic>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include "fast_calls.h"

namespace {
// Kernel names by host stub, registered once before any launch; a launch looks its name up here
// (CUPTI's symbolName) without a lock, as few kernels as a bench registers.
constexpr int kMaxKernels = 64;
const void* g_stubs[kMaxKernels];
const char* g_names[kMaxKernels];
std::atomic<int> g_kernels{0};

const char* kernel_name(const void* stub) {
  int n = g_kernels.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (g_stubs[i] == stub) return g_names[i];
  return nullptr;
}

char g_streams[1024];
std::atomic<int> g_next_stream{1};
}  // namespace

extern "C" {
void** __cudaRegisterFatBinary(void* fatbin) {
  cuInit(0);
  static void* handle[1];
  handle[0] = fatbin;
  return handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* stub, char*, const char* device_name, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  int i = g_kernels.load(std::memory_order_relaxed);
  if (i >= kMaxKernels) return;
  g_stubs[i] = stub;
  g_names[i] = device_name;
  g_kernels.store(i + 1, std::memory_order_release);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  cuInit(0);
  if (!stream) return cudaErrorInvalidValue;
  int i = g_next_stream.fetch_add(1) % int(sizeof g_streams);
  *stream = reinterpret_cast<cudaStream_t>(&g_streams[i]);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return cudaErrorInvalidValue;
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t stream) {
  cudaLaunchKernel_v7000_params p{func, grid, block, args, shmem, stream};
  cudaError_t result = cudaSuccess;
  {
    fastcuda::TracedCall call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                              "cudaLaunchKernel", &p, &result, kernel_name(func));
    CUresult r = cuLaunchKernel(reinterpret_cast<CUfunction>(const_cast<void*>(func)), grid.x, grid.y, grid.z,
                                block.x, block.y, block.z, unsigned(shmem), reinterpret_cast<CUstream>(stream), args,
                                nullptr);
    if (r != CUDA_SUCCESS) result = cudaErrorLaunchFailure;
  }
  return result;
}
}
