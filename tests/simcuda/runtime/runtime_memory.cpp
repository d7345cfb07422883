// Allocations, copies and memsets, with the host-blocking rules of the CUDA runtime documentation
// ("API synchronization behavior"), as the simulator applies them:
//   cudaMemcpy:      D2H and H2H return when the copy is done; H2D returns when it is done except
//                    for 64 KiB or less, which the runtime stages and returns at once; D2D does not
//                    block the host.
//   cudaMemcpyAsync: blocks until the copy is done when a host side is pageable (the driver stages
//                    through pinned memory) or for H2H; otherwise returns at once.
//   cudaMemset:      does not block the host for device memory; cudaMemsetAsync never does.
//   cudaMalloc, cudaFree, cudaFreeHost: wait for the device to finish all queued work.
// Device memory is address space only (reserved PROT_NONE, never touched); pinned host memory is
// real memory the program may use.
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "runtime_internal.h"

namespace simcuda::runtime {
namespace {

// The registry of allocations lives in the driver (driver_memory.cpp), shared with the driver
// API, so a pointer has the same kind whichever API made or copies it.
void* reserve_device(size_t size) { return reserve_device_memory(size, current_device()); }

bool forget(void* ptr, SimMemKind kind) { return unregister_memory(ptr, kind); }

double gbps_for(uint32_t copy_kind) {
  const SimDeviceConfig& c = config();
  switch (copy_kind) {
    case SIM_COPY_H2D: return c.h2d_gbps;
    case SIM_COPY_D2H: return c.d2h_gbps;
    case SIM_COPY_D2D: return c.d2d_gbps;
    default: return c.h2d_gbps;
  }
}

int64_t transfer_ns(uint64_t bytes, double gbps) { return int64_t(double(bytes) / gbps); }  // GB/s == bytes/ns

uint32_t copy_kind_of(cudaMemcpyKind kind, SimMemKind src, SimMemKind dst) {
  switch (kind) {
    case cudaMemcpyHostToHost: return SIM_COPY_H2H;
    case cudaMemcpyHostToDevice: return SIM_COPY_H2D;
    case cudaMemcpyDeviceToHost: return SIM_COPY_D2H;
    case cudaMemcpyDeviceToDevice: return SIM_COPY_D2D;
    default: {  // cudaMemcpyDefault: inferred from the pointers, as with unified addressing
      bool s = src == SIM_MEM_DEVICE, d = dst == SIM_MEM_DEVICE;
      return s && d ? SIM_COPY_D2D : s ? SIM_COPY_D2H : d ? SIM_COPY_H2D : SIM_COPY_H2H;
    }
  }
}

struct DriverCopyApi {
  CUpti_CallbackId cbid;
  const char* name;
};

DriverCopyApi driver_copy_api(uint32_t copy_kind, bool async) {
  switch (copy_kind) {
    case SIM_COPY_H2D:
      return async ? DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2"}
                   : DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2"};
    case SIM_COPY_D2H:
      return async ? DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2"}
                   : DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2"};
    case SIM_COPY_D2D:
      return async ? DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2"}
                   : DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2"};
    default:
      return async ? DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, "cuMemcpyAsync"}
                   : DriverCopyApi{CUPTI_DRIVER_TRACE_CBID_cuMemcpy, "cuMemcpy"};
  }
}

constexpr size_t kSmallH2DBytes = 64 * 1024;

cudaError_t copy(ApiScope& scope, void* dst, const void* src, size_t count, cudaMemcpyKind kind, void* stream_handle,
                 bool async) {
  if ((!dst || !src) && count) return cudaErrorInvalidValue;
  SimMemKind src_kind = memory_kind(src), dst_kind = memory_kind(dst);
  uint32_t ck = copy_kind_of(kind, src_kind, dst_kind);
  bool pageable = src_kind == SIM_MEM_PAGEABLE || dst_kind == SIM_MEM_PAGEABLE;
  bool blocking = async ? (pageable || ck == SIM_COPY_H2H)
                        : (ck == SIM_COPY_D2H || ck == SIM_COPY_H2H || (ck == SIM_COPY_H2D && count > kSmallH2DBytes));
  Stream* stream = async ? resolve_stream(stream_handle, current_device()) : legacy_stream(current_device());
  scope.set_stream(stream_id(stream));
  scope.set_bytes(count);
  spend(config().copy_api_ns);
  OpRequest r;
  r.kind = SIM_OP_MEMCPY;
  r.stream = stream;
  r.bytes = count;
  r.copy_kind = ck;
  r.src_kind = src_kind;
  r.dst_kind = dst_kind;
  r.is_async = async;
  r.correlation_id = scope.correlation_id();
  double gbps = gbps_for(ck);
  if (pageable) gbps /= config().pageable_factor;
  r.duration_ns = transfer_ns(count, gbps);
  DriverCopyApi api = driver_copy_api(ck, async);
  // The driver params differ per call; CUPTI users read the runtime ones. Pass the runtime call's.
  cudaMemcpyAsync_v3020_params dp{dst, src, count, kind, static_cast<cudaStream_t>(stream_handle)};
  driver_call(api.cbid, api.name, async ? SIM_CALL_MEMCPY_ASYNC : SIM_CALL_MEMCPY, &dp, [&](ApiScope& inner) {
    if (capture_if_active(stream, r)) return CUDA_SUCCESS;
    int64_t op = enqueue(r);
    scope.set_op(op);
    inner.set_op(op);
    if (blocking) scope.set_blocked(wait_op(op));
    return CUDA_SUCCESS;
  });
  return cudaSuccess;
}

cudaError_t memset_op(ApiScope& scope, void* ptr, size_t count, void* stream_handle, bool async) {
  if (!ptr && count) return cudaErrorInvalidValue;
  SimMemKind target = memory_kind(ptr);
  Stream* stream = async ? resolve_stream(stream_handle, current_device()) : legacy_stream(current_device());
  scope.set_stream(stream_id(stream));
  scope.set_bytes(count);
  spend(config().copy_api_ns);
  OpRequest r;
  r.kind = SIM_OP_MEMSET;
  r.stream = stream;
  r.bytes = count;
  r.dst_kind = target;
  r.is_async = async;
  r.correlation_id = scope.correlation_id();
  r.duration_ns = transfer_ns(count, config().memset_gbps);
  bool blocking = !async && target != SIM_MEM_DEVICE;
  cuMemsetD8Async_params dp{reinterpret_cast<CUdeviceptr>(ptr), 0, count, static_cast<CUstream>(stream_handle)};
  driver_call(async ? CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async : CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
              async ? "cuMemsetD8Async" : "cuMemsetD8_v2", async ? SIM_CALL_MEMSET_ASYNC : SIM_CALL_MEMSET, &dp,
              [&](ApiScope& inner) {
                if (capture_if_active(stream, r)) return CUDA_SUCCESS;
                int64_t op = enqueue(r);
                scope.set_op(op);
                inner.set_op(op);
                if (blocking) scope.set_blocked(wait_op(op));
                return CUDA_SUCCESS;
              });
  return cudaSuccess;
}

}  // namespace

SimMemKind memory_kind(const void* ptr) { return memory_kind_of(ptr); }

}  // namespace simcuda::runtime

using namespace simcuda;
using namespace simcuda::runtime;

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  cudaMemcpy_v3020_params params{dst, src, count, kind};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) { return copy(s, dst, src, count, kind, nullptr, false); });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                           cudaStream_t stream) {
  cudaMemcpyAsync_v3020_params params{dst, src, count, kind, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", SIM_CALL_MEMCPY_ASYNC, &params,
                [&](ApiScope& s) { return copy(s, dst, src, count, kind, stream, true); });
}

SIMCUDA_EXPORT cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  cudaMemset_v3020_params params{ptr, value, count};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset", SIM_CALL_MEMSET, &params,
                [&](ApiScope& s) { return memset_op(s, ptr, count, nullptr, false); });
}

SIMCUDA_EXPORT cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  cudaMemsetAsync_v3020_params params{ptr, value, count, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", SIM_CALL_MEMSET_ASYNC, &params,
                [&](ApiScope& s) { return memset_op(s, ptr, count, stream, true); });
}

SIMCUDA_EXPORT cudaError_t cudaMalloc(void** ptr, size_t size) {
  cudaMalloc_v3020_params params{ptr, size};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", SIM_CALL_MALLOC, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (!ptr) return cudaErrorInvalidValue;
                  s.set_bytes(size);
                  spend(config().alloc_api_ns);
                  cuMemAlloc_v2_params dp{reinterpret_cast<CUdeviceptr*>(ptr), size};
                  CUresult r = driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", SIM_CALL_MALLOC,
                                           &dp, [&](ApiScope&) {
                                             s.set_blocked(wait_device(current_device()));
                                             *ptr = reserve_device(size);
                                             return *ptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
                                           });
                  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
                });
}

SIMCUDA_EXPORT cudaError_t cudaFree(void* ptr) {
  cudaFree_v3020_params params{ptr};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", SIM_CALL_FREE, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (!ptr) return cudaSuccess;  // cudaFree(0): a no-op that only makes the context
                  spend(config().alloc_api_ns);
                  cuMemFree_v2_params dp{reinterpret_cast<CUdeviceptr>(ptr)};
                  CUresult r = driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", SIM_CALL_FREE, &dp,
                                           [&](ApiScope&) {
                                             s.set_blocked(wait_device(current_device()));
                                             return forget(ptr, SIM_MEM_DEVICE) ? CUDA_SUCCESS
                                                                                : CUDA_ERROR_INVALID_VALUE;
                                           });
                  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
                });
}

static cudaError_t host_alloc(ApiScope& s, void** ptr, size_t size, CUpti_CallbackId cbid, const char* name) {
  if (!ptr) return cudaErrorInvalidValue;
  s.set_bytes(size);
  spend(config().alloc_api_ns);
  cuMemAllocHost_v2_params dp{ptr, size};
  CUresult r = driver_call(cbid, name, SIM_CALL_HOST_ALLOC, &dp, [&](ApiScope&) {
    void* p = aligned_alloc(4096, (std::max<size_t>(size, 1) + 4095) & ~size_t(4095));
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    register_memory(p, size, SIM_MEM_PINNED, current_device());
    *ptr = p;
    return CUDA_SUCCESS;
  });
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
}

SIMCUDA_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  cudaMallocHost_v3020_params params{ptr, size};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, "cudaMallocHost", SIM_CALL_HOST_ALLOC, &params,
                [&](ApiScope& s) {
                  return host_alloc(s, ptr, size, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, "cuMemAllocHost_v2");
                });
}

SIMCUDA_EXPORT cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  cudaHostAlloc_v3020_params params{ptr, size, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, "cudaHostAlloc", SIM_CALL_HOST_ALLOC, &params,
                [&](ApiScope& s) {
                  return host_alloc(s, ptr, size, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, "cuMemHostAlloc");
                });
}

SIMCUDA_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  cudaFreeHost_v3020_params params{ptr};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, "cudaFreeHost", SIM_CALL_HOST_FREE, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (!ptr) return cudaSuccess;
                  spend(config().alloc_api_ns);
                  cuMemFreeHost_params dp{ptr};
                  CUresult r = driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, "cuMemFreeHost",
                                           SIM_CALL_HOST_FREE, &dp, [&](ApiScope&) {
                                             s.set_blocked(wait_device(current_device()));
                                             if (!forget(ptr, SIM_MEM_PINNED)) return CUDA_ERROR_INVALID_VALUE;
                                             free(ptr);
                                             return CUDA_SUCCESS;
                                           });
                  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
                });
}

}  // extern "C"
