// Kernel registration and launches: the entry points nvcc-generated code and frameworks call.
//
// CUDA 13's `<<<>>>` compiles to __cudaPushCallConfiguration / __cudaPopCallConfiguration, then
// __cudaGetKernel + __cudaLaunchKernel (or _ptsz); cudaLaunchKernel and cudaLaunchKernelExC are
// what frameworks call directly. All of them end in the driver's cuLaunchKernel, whose callback
// fires nested inside the runtime one. A kernel's device time comes from kernel_duration.cpp's
// model (a per-name table, a duration argument, or the grid's shape).
#include <string.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime_internal.h"

namespace simcuda::runtime {
namespace {

std::mutex g_kernels_mu;
std::unordered_map<const void*, Kernel*>& kernels() {
  static auto* map = new std::unordered_map<const void*, Kernel*>;
  return *map;
}

struct CallConfig {
  dim3 grid, block;
  size_t shared_mem;
  cudaStream_t stream;
};
thread_local std::vector<CallConfig> t_call_configs;

// The params layout CUPTI passes for __cudaLaunchKernel(_ptsz): the CUDA 13 headers define no
// struct for cbids 505/506, so the simulator uses cudaLaunchKernel's layout with the cudaKernel_t
// in place of the host function [verify on GPU].
struct CudaLaunchKernelV13000Params {
  cudaKernel_t kernel;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};

cudaError_t launch(CUpti_CallbackId cbid, const char* api, const void* params, const Kernel* kernel, dim3 grid,
                   dim3 block, void** args, size_t shared_mem, cudaStream_t stream_handle, bool per_thread) {
  const char* symbol = kernel ? kernel->name : nullptr;
  return traced(cbid, api, SIM_CALL_LAUNCH, params, [&](ApiScope& scope) -> cudaError_t {
    if (!kernel) return cudaErrorInvalidDeviceFunction;
    int device = current_device();
    void* handle = stream_handle;
    if (per_thread && handle == nullptr) handle = reinterpret_cast<void*>(cudaStreamPerThread);
    Stream* stream = resolve_stream(handle, device);
    scope.set_stream(stream_id(stream));
    spend(config().launch_api_ns);
    OpRequest request;
    request.kind = SIM_OP_KERNEL;
    request.stream = stream;
    const unsigned grid_dims[3] = {grid.x, grid.y, grid.z}, block_dims[3] = {block.x, block.y, block.z};
    request.duration_ns = kernel_duration_ns(kernel->name, grid_dims, block_dims, args);
    request.name = kernel->name;
    request.correlation_id = scope.correlation_id();
    request.grid[0] = int(grid.x), request.grid[1] = int(grid.y), request.grid[2] = int(grid.z);
    request.block[0] = int(block.x), request.block[1] = int(block.y), request.block[2] = int(block.z);
    cuLaunchKernel_params dp{reinterpret_cast<CUfunction>(const_cast<Kernel*>(kernel)),
                             grid.x, grid.y, grid.z, block.x, block.y, block.z,
                             unsigned(shared_mem), reinterpret_cast<CUstream>(stream_handle), args, nullptr};
    CUresult r = driver_call(per_thread ? CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz
                                        : CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                             per_thread ? "cuLaunchKernel_ptsz" : "cuLaunchKernel", SIM_CALL_LAUNCH, &dp,
                             [&](ApiScope&) -> CUresult {
                               if (!capture_if_active(stream, request)) scope.set_op(enqueue(request));
                               return CUDA_SUCCESS;
                             }, kernel->name);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
  }, symbol);
}

}  // namespace

cudaError_t launch_kernel(CUpti_CallbackId cbid, const char* api, const void* params, const void* func, dim3 grid,
                          dim3 block, void** args, size_t shared_mem, cudaStream_t stream, bool per_thread) {
  return launch(cbid, api, params, kernel_for_stub(func), grid, block, args, shared_mem, stream, per_thread);
}

const Kernel* kernel_for_stub(const void* host_stub) {
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  auto it = kernels().find(host_stub);
  return it == kernels().end() ? nullptr : it->second;
}

}  // namespace simcuda::runtime

using namespace simcuda;
using namespace simcuda::runtime;

extern "C" {

// ---- what nvcc's registration code calls at start-up ---------------------------------------------
SIMCUDA_EXPORT void** __cudaRegisterFatBinary(void* fat_cubin) {
  // The handle only has to be unique and non-null; keep the fatbin pointer in it.
  auto** handle = new void*[1];
  handle[0] = fat_cubin;
  return handle;
}

SIMCUDA_EXPORT void __cudaRegisterFatBinaryEnd(void**) {}

SIMCUDA_EXPORT void __cudaUnregisterFatBinary(void**) {}

SIMCUDA_EXPORT void __cudaRegisterFunction(void**, const char* host_fun, char* device_fun, const char* device_name,
                                           int, uint3*, uint3*, dim3*, dim3*, int*) {
  const char* name = device_name ? device_name : device_fun;
  auto* k = new Kernel{host_fun, intern(name ? name : "")};
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  kernels()[host_fun] = k;
}

SIMCUDA_EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_mem, struct CUstream_st* stream) {
  t_call_configs.push_back({grid, block, shared_mem, stream});
  return 0;
}

SIMCUDA_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_mem, void* stream) {
  if (t_call_configs.empty()) return cudaErrorInvalidConfiguration;
  CallConfig c = t_call_configs.back();
  t_call_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared_mem = c.shared_mem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

SIMCUDA_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_stub) {
  struct Params {
    cudaKernel_t* kernel;
    const void* entryFuncAddr;
  } params{kernel, host_stub};
  return traced(CUPTI_RUNTIME_TRACE_CBID___cudaGetKernel_v13000, "__cudaGetKernel", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  const Kernel* k = kernel_for_stub(host_stub);
                  if (!k || !kernel) return cudaErrorInvalidDeviceFunction;
                  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<Kernel*>(k));
                  return cudaSuccess;
                });
}

// ---- launches ----------------------------------------------------------------------------------
SIMCUDA_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_mem,
                                              cudaStream_t stream) {
  CudaLaunchKernelV13000Params params{kernel, grid, block, args, shared_mem, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "__cudaLaunchKernel", &params,
                reinterpret_cast<const Kernel*>(kernel), grid, block, args, shared_mem, stream, false);
}

SIMCUDA_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                                   size_t shared_mem, cudaStream_t stream) {
  CudaLaunchKernelV13000Params params{kernel, grid, block, args, shared_mem, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, "__cudaLaunchKernel_ptsz", &params,
                reinterpret_cast<const Kernel*>(kernel), grid, block, args, shared_mem, stream, true);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem,
                                            cudaStream_t stream) {
  cudaLaunchKernel_v7000_params params{func, grid, block, args, shared_mem, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &params, kernel_for_stub(func),
                grid, block, args, shared_mem, stream, false);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                                 size_t shared_mem, cudaStream_t stream) {
  cudaLaunchKernel_ptsz_v7000_params params{func, grid, block, args, shared_mem, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, "cudaLaunchKernel_ptsz", &params,
                kernel_for_stub(func), grid, block, args, shared_mem, stream, true);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  cudaLaunchKernelExC_v11060_params params{config, func, args};
  if (!config) return record_error(cudaErrorInvalidValue);
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC", &params,
                kernel_for_stub(func), config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                config->stream, false);
}

}  // extern "C"
