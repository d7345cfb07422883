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
//
// Host memory the device can reach: cudaMallocHost/cudaHostAlloc memory and cudaHostRegister'ed
// ranges count as pinned for copies (full bandwidth, async copies do not block). With unified
// addressing (which the simulated device has) every such range is mapped and portable, and its
// device pointer is its host pointer (cudaHostGetDevicePointer), so zero-copy kernels take host
// pointers. Managed memory (cudaMallocManaged) is one address range valid on host and device: it is
// backed by real host memory (the program reads and writes it) and counts as MANAGED in copies.
// Device variables (__device__, __constant__: __cudaRegisterVar) get device address space of
// their size; cudaMemcpyToSymbol/FromSymbol copy to and from it like cudaMemcpy (same blocking
// rules), and cudaGetSymbolAddress returns it. cudaMemcpy2D(Async) moves width x height bytes with
// the same rules as the 1D copy. Copies move no data: the device models time, not data.
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>

#include "runtime_internal.h"

namespace simcuda::runtime {
namespace {

// ---- the allocation registry ---------------------------------------------------------------------
// It lives in the driver (driver_memory.cpp), shared with the driver API, so a pointer has the
// same kind whichever API made or copies it. Everything below asks about memory only through these.
struct MemInfo {
  uintptr_t base = 0;
  size_t size = 0;
  SimMemKind kind = SIM_MEM_UNKNOWN;
  unsigned flags = 0;       // cudaHostAlloc / cudaHostRegister / cudaMallocManaged flags
  bool registered = false;  // cudaHostRegister: the program owns the memory
};

MemInfo info_of(const MemoryRange& r) { return {r.base, r.size, r.kind, r.flags, r.registered}; }

void mem_add(const void* base, size_t size, SimMemKind kind, unsigned flags, bool registered) {
  register_memory(base, size, kind, current_device(), kind == SIM_MEM_MANAGED, registered, flags);
}

// The range holding p.
bool mem_find(const void* p, MemInfo* out) {
  MemoryRange r;
  if (!find_memory(p, &r)) return false;
  *out = info_of(r);
  return true;
}

// Removes the range that starts exactly at base, if it has that kind and registration.
bool mem_take(const void* base, SimMemKind kind, bool registered, MemInfo* out = nullptr) {
  MemoryRange r;
  if (!find_memory(base, &r) || r.base != reinterpret_cast<uintptr_t>(base) || r.kind != kind ||
      r.registered != registered)
    return false;
  if (!unregister_memory(base, kind)) return false;
  if (out) *out = info_of(r);
  return true;
}

// Whether [p, p + size) overlaps a range of that kind.
bool mem_overlaps(const void* p, size_t size, SimMemKind kind) { return overlaps_memory(p, size, kind); }

struct Symbol {
  void* address;  // device address space
  size_t size;
};
std::mutex g_symbols_mu;  // guards symbols()
std::unordered_map<const void*, Symbol>& symbols() {
  static auto* map = new std::unordered_map<const void*, Symbol>;
  return *map;
}

}  // namespace

void* reserve_device(size_t size) { return reserve_device_memory(size, current_device()); }

bool forget(void* ptr, SimMemKind kind) { return mem_take(ptr, kind, false); }

namespace {

// The direction a cudaMemcpyKind names, as plan_copy takes it: -1 for cudaMemcpyDefault (inferred
// from the pointers, as with unified addressing).
int copy_kind_of(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return SIM_COPY_H2H;
    case cudaMemcpyHostToDevice: return SIM_COPY_H2D;
    case cudaMemcpyDeviceToHost: return SIM_COPY_D2H;
    case cudaMemcpyDeviceToDevice: return SIM_COPY_D2D;
    default: return -1;
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

cudaError_t copy(ApiScope& scope, void* dst, const void* src, size_t count, cudaMemcpyKind kind, void* stream_handle,
                 bool async, const DriverCopyApi* driver_api = nullptr, bool per_thread = false) {
  if ((!dst || !src) && count) return cudaErrorInvalidValue;
  if (int(kind) < cudaMemcpyHostToHost || int(kind) > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  if (cudaError_t e = capture_check_unsafe(!async); e != cudaSuccess) return e;
  OpPlan plan = plan_copy(dst, src, count, copy_kind_of(kind), async);
  OpRequest& r = plan.request;
  uint32_t ck = r.copy_kind;
  bool blocking = plan.blocks;
  if (per_thread && !stream_handle) stream_handle = reinterpret_cast<void*>(cudaStreamPerThread);
  Stream* stream = async || per_thread ? resolve_stream(stream_handle, current_device()) : legacy_stream(current_device());
  scope.set_stream(stream_id(stream));
  scope.set_bytes(count);
  spend(config().copy_api_ns);
  r.stream = stream;
  r.correlation_id = scope.correlation_id();
  DriverCopyApi api = driver_api ? *driver_api : driver_copy_api(ck, async);
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

cudaError_t memset_op(ApiScope& scope, void* ptr, size_t count, void* stream_handle, bool async,
                      bool per_thread = false) {
  if (!ptr && count) return cudaErrorInvalidValue;
  if (cudaError_t e = capture_check_unsafe(!async); e != cudaSuccess) return e;
  OpPlan plan = plan_memset(ptr, count, async);
  OpRequest& r = plan.request;
  bool blocking = plan.blocks;
  if (per_thread && !stream_handle) stream_handle = reinterpret_cast<void*>(cudaStreamPerThread);
  Stream* stream = async || per_thread ? resolve_stream(stream_handle, current_device()) : legacy_stream(current_device());
  scope.set_stream(stream_id(stream));
  scope.set_bytes(count);
  spend(config().copy_api_ns);
  r.stream = stream;
  r.correlation_id = scope.correlation_id();
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

// Graph nodes run asynchronously to the host, whatever memory they touch.
OpRequest copy_request(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return plan_copy(dst, src, count, copy_kind_of(kind), true).request;
}

OpRequest memset_request(void* ptr, size_t bytes) { return plan_memset(ptr, bytes, true).request; }

bool pointer_info(const void* ptr, SimMemKind* kind, bool* registered) {
  MemInfo m;
  if (mem_find(ptr, &m)) {
    *kind = m.kind;
    *registered = m.registered;
    return true;
  }
  if (memory_kind(ptr) == SIM_MEM_DEVICE) {  // inside a freed device range
    *kind = SIM_MEM_DEVICE;
    *registered = false;
    return true;
  }
  return false;
}

size_t device_bytes_in_use() { return device_memory_in_use(); }

cudaError_t copy_call(ApiScope& scope, void* dst, const void* src, size_t count, cudaMemcpyKind kind, void* stream,
                      bool async, bool per_thread) {
  return copy(scope, dst, src, count, kind, stream, async, nullptr, per_thread);
}

cudaError_t memset_call(ApiScope& scope, void* ptr, size_t count, void* stream, bool async, bool per_thread) {
  return memset_op(scope, ptr, count, stream, async, per_thread);
}

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
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
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
                                             if (forget(ptr, SIM_MEM_DEVICE)) return CUDA_SUCCESS;
                                             MemInfo managed;
                                             if (!mem_take(ptr, SIM_MEM_MANAGED, false, &managed))
                                               return CUDA_ERROR_INVALID_VALUE;
                                             munmap(ptr, (managed.size + 4095) & ~size_t(4095));
                                             return CUDA_SUCCESS;
                                           });
                  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
                });
}

static cudaError_t host_alloc(ApiScope& s, void** ptr, size_t size, CUpti_CallbackId cbid, const char* name,
                              unsigned flags = cudaHostAllocDefault) {
  if (!ptr) return cudaErrorInvalidValue;
  if (flags & ~unsigned(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
    return cudaErrorInvalidValue;
  s.set_bytes(size);
  spend(config().alloc_api_ns);
  cuMemAllocHost_v2_params dp{ptr, size};
  CUresult r = driver_call(cbid, name, SIM_CALL_HOST_ALLOC, &dp, [&](ApiScope&) {
    void* p = aligned_alloc(4096, (std::max<size_t>(size, 1) + 4095) & ~size_t(4095));
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    mem_add(p, size, SIM_MEM_PINNED, flags, false);
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
                  return host_alloc(s, ptr, size, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, "cuMemHostAlloc", flags);
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
                                             if (!mem_take(ptr, SIM_MEM_PINNED, false)) return CUDA_ERROR_INVALID_VALUE;
                                             free(ptr);
                                             return CUDA_SUCCESS;
                                           });
                  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
                });
}

// ---- page-locked and mapped host memory -------------------------------------------------------
SIMCUDA_EXPORT cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  cudaHostRegister_v4000_params params{ptr, size, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, "cudaHostRegister", SIM_CALL_HOST_ALLOC, &params,
                [&](ApiScope& s) -> cudaError_t {
                  constexpr unsigned kKnown = cudaHostRegisterPortable | cudaHostRegisterMapped |
                                              cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
                  if (!ptr || !size || (flags & ~kKnown)) return cudaErrorInvalidValue;
                  s.set_bytes(size);
                  spend(config().alloc_api_ns);
                  cuMemHostRegister_v2_params dp{ptr, size, flags};
                  cudaError_t ret = cudaSuccess;
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, "cuMemHostRegister_v2",
                              SIM_CALL_HOST_ALLOC, &dp, [&](ApiScope&) {
                                // Any overlap with memory already page-locked is an error.
                                if (mem_overlaps(ptr, size, SIM_MEM_PINNED)) {
                                  ret = cudaErrorHostMemoryAlreadyRegistered;
                                  return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
                                }
                                mem_add(ptr, size, SIM_MEM_PINNED, flags, true);
                                return CUDA_SUCCESS;
                              });
                  return ret;
                });
}

SIMCUDA_EXPORT cudaError_t cudaHostUnregister(void* ptr) {
  cudaHostUnregister_v4000_params params{ptr};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, "cudaHostUnregister", SIM_CALL_HOST_FREE, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!ptr) return cudaErrorInvalidValue;
                  cuMemHostUnregister_params dp{ptr};
                  cudaError_t ret = cudaSuccess;
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, "cuMemHostUnregister", SIM_CALL_HOST_FREE,
                              &dp, [&](ApiScope&) {
                                if (!mem_take(ptr, SIM_MEM_PINNED, true)) {
                                  ret = cudaErrorHostMemoryNotRegistered;
                                  return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
                                }
                                return CUDA_SUCCESS;
                              });
                  return ret;
                });
}

SIMCUDA_EXPORT cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int flags) {
  cudaHostGetDevicePointer_v3020_params params{device_ptr, host_ptr, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaHostGetDevicePointer_v3020, "cudaHostGetDevicePointer", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!device_ptr || !host_ptr || flags != 0) return cudaErrorInvalidValue;  // flags: must be 0
                  cuMemHostGetDevicePointer_v2_params dp{reinterpret_cast<CUdeviceptr*>(device_ptr), host_ptr, flags};
                  cudaError_t ret = cudaSuccess;
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer_v2",
                              SIM_CALL_OTHER, &dp, [&](ApiScope&) {
                                if (memory_kind(host_ptr) != SIM_MEM_PINNED) {
                                  ret = cudaErrorInvalidValue;
                                  return CUDA_ERROR_INVALID_VALUE;
                                }
                                *device_ptr = host_ptr;  // unified addressing: the same address
                                return CUDA_SUCCESS;
                              });
                  return ret;
                });
}

SIMCUDA_EXPORT cudaError_t cudaHostGetFlags(unsigned int* flags, void* host_ptr) {
  cudaHostGetFlags_v3020_params params{flags, host_ptr};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaHostGetFlags_v3020, "cudaHostGetFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!flags || !host_ptr) return cudaErrorInvalidValue;
                  MemInfo m;
                  if (!mem_find(host_ptr, &m) || m.kind != SIM_MEM_PINNED || m.registered)
                    return cudaErrorInvalidValue;  // only for cudaHostAlloc / cudaMallocHost memory
                  // Unified addressing: every allocation is mapped (and portable) whatever was asked.
                  *flags = m.flags | cudaHostAllocMapped | cudaHostAllocPortable;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int flags) {
  cudaMallocManaged_v6000_params params{ptr, size, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, "cudaMallocManaged", SIM_CALL_MALLOC, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (!ptr || !size) return cudaErrorInvalidValue;
                  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return cudaErrorInvalidValue;
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
                  s.set_bytes(size);
                  spend(config().alloc_api_ns);
                  cuMemAllocManaged_params dp{reinterpret_cast<CUdeviceptr*>(ptr), size, flags};
                  CUresult r = driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, "cuMemAllocManaged",
                                           SIM_CALL_MALLOC, &dp, [&](ApiScope&) {
                                             // Like cudaMalloc, it waits for the device.
                                             s.set_blocked(wait_device(current_device()));
                                             size_t rounded = (size + 4095) & ~size_t(4095);
                                             void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                                                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                                             if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
                                             mem_add(p, size, SIM_MEM_MANAGED, flags, false);
                                             *ptr = p;
                                             return CUDA_SUCCESS;
                                           });
                  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
                });
}

// ---- device variables ----------------------------------------------------------------------------
SIMCUDA_EXPORT void __cudaRegisterVar(void** fat_cubin, char* host_var, char* device_address, const char* device_name,
                                      int ext, size_t size, int constant, int global) {
  void* address = reserve_device(size);
  std::lock_guard<std::mutex> lock(g_symbols_mu);
  symbols()[host_var] = {address, size};
}

SIMCUDA_EXPORT void __cudaRegisterManagedVar(void** fat_cubin, void** host_var_ptr_address, char* device_address,
                                             const char* device_name, int ext, size_t size, int constant, int global) {
  // __managed__ variables: the host reaches them through *host_var_ptr_address. Back them with
  // real memory, as cudaMallocManaged does.
  size_t rounded = (std::max<size_t>(size, 1) + 4095) & ~size_t(4095);
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  mem_add(p, size, SIM_MEM_MANAGED, cudaMemAttachGlobal, false);
  std::lock_guard<std::mutex> lock(g_symbols_mu);
  if (host_var_ptr_address) *host_var_ptr_address = p;
  symbols()[host_var_ptr_address] = {p, size};
}

SIMCUDA_EXPORT char __cudaInitModule(void** fat_cubin) { return 1; }

}  // extern "C"

namespace {

bool find_symbol(const void* symbol, Symbol* out) {
  std::lock_guard<std::mutex> lock(g_symbols_mu);
  auto it = symbols().find(symbol);
  if (it == symbols().end()) return false;
  *out = it->second;
  return true;
}

cudaError_t symbol_copy(ApiScope& s, const void* symbol, void* host, size_t count, size_t offset, cudaMemcpyKind kind,
                        void* stream, bool async, bool to_symbol) {
  Symbol sym;
  if (!find_symbol(symbol, &sym)) return cudaErrorInvalidSymbol;
  if (offset > sym.size || count > sym.size - offset) return cudaErrorInvalidValue;
  void* device = static_cast<char*>(sym.address) + offset;
  // The symbol side is device memory; the other side is what kind says (H2D/D2H, or D2D).
  if (to_symbol) {
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
      return cudaErrorInvalidMemcpyDirection;
    return copy(s, device, host, count, kind, stream, async);
  }
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  return copy(s, host, device, count, kind, stream, async);
}

}  // namespace

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaGetSymbolAddress(void** dev_ptr, const void* symbol) {
  cudaGetSymbolAddress_v3020_params params{dev_ptr, symbol};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGetSymbolAddress_v3020, "cudaGetSymbolAddress", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!dev_ptr) return cudaErrorInvalidValue;
                  Symbol sym;
                  if (!find_symbol(symbol, &sym)) return cudaErrorInvalidSymbol;
                  *dev_ptr = sym.address;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  cudaGetSymbolSize_v3020_params params{size, symbol};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGetSymbolSize_v3020, "cudaGetSymbolSize", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!size) return cudaErrorInvalidValue;
                  Symbol sym;
                  if (!find_symbol(symbol, &sym)) return cudaErrorInvalidSymbol;
                  *size = sym.size;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                              enum cudaMemcpyKind kind) {
  cudaMemcpyToSymbol_v3020_params params{symbol, src, count, offset, kind};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, "cudaMemcpyToSymbol", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) {
                  return symbol_copy(s, symbol, const_cast<void*>(src), count, offset, kind, nullptr, false, true);
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind) {
  cudaMemcpyFromSymbol_v3020_params params{dst, symbol, count, offset, kind};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020, "cudaMemcpyFromSymbol", SIM_CALL_MEMCPY,
                &params, [&](ApiScope& s) { return symbol_copy(s, symbol, dst, count, offset, kind, nullptr, false, false); });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                                   enum cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpyToSymbolAsync_v3020_params params{symbol, src, count, offset, kind, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020, "cudaMemcpyToSymbolAsync",
                SIM_CALL_MEMCPY_ASYNC, &params, [&](ApiScope& s) {
                  return symbol_copy(s, symbol, const_cast<void*>(src), count, offset, kind, stream, true, true);
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                                     enum cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpyFromSymbolAsync_v3020_params params{dst, symbol, count, offset, kind, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020, "cudaMemcpyFromSymbolAsync",
                SIM_CALL_MEMCPY_ASYNC, &params,
                [&](ApiScope& s) { return symbol_copy(s, symbol, dst, count, offset, kind, stream, true, false); });
}

// ---- 2D copies -----------------------------------------------------------------------------------
SIMCUDA_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                        size_t height, enum cudaMemcpyKind kind) {
  cudaMemcpy2D_v3020_params params{dst, dpitch, src, spitch, width, height, kind};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, "cudaMemcpy2D", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
                  DriverCopyApi api{CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, "cuMemcpy2D_v2"};
                  return copy(s, dst, src, width * height, kind, nullptr, false, &api);
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                             size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpy2DAsync_v3020_params params{dst, dpitch, src, spitch, width, height, kind, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020, "cudaMemcpy2DAsync", SIM_CALL_MEMCPY_ASYNC, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
                  DriverCopyApi api{CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2, "cuMemcpy2DAsync_v2"};
                  return copy(s, dst, src, width * height, kind, stream, true, &api);
                });
}

}  // extern "C"
