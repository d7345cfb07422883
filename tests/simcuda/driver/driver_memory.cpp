// Memory through the driver API, and the registry of what every pointer is, which the runtime
// (runtime_memory.cpp) shares: a cudaMalloc pointer copied with cuMemcpyDtoH, or a cuMemAllocHost
// buffer given to cudaMemcpy, has the same memory kinds on both paths.
//
// Device memory is address space only (one PROT_NONE arena, never touched); pinned host memory
// (cuMemAllocHost, cuMemHostAlloc) is real memory; cuMemHostRegister pins the caller's range;
// managed memory (cuMemAllocManaged) is real host memory the program may touch, of kind MANAGED in
// copy records, as CUPTI reports it (the simulator does not migrate pages). Copies move no data.
//
// Host blocking follows the driver API documentation's "API synchronization behavior", as the
// simulated runtime applies it (docs/simcuda.md): synchronous D2H and H2H copies return when done,
// H2D when done unless 64 KiB or less (staged), D2D never blocks; an *Async copy blocks when a
// host side is pageable; memsets of device memory do not block; cuMemAlloc, cuMemFree,
// cuMemFreeHost wait for the device.
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "driver_internal.h"

namespace simcuda {
namespace {

std::mutex g_mem_mu;
std::map<uintptr_t, MemoryRange>& ranges() {
  static auto* map = new std::map<uintptr_t, MemoryRange>;  // never destroyed: frees may run at exit
  return *map;
}
uint64_t g_next_buffer_id = 1;

constexpr size_t kDeviceArenaBytes = size_t(1) << 38;  // 256 GiB of address space, never backed
uintptr_t g_arena = 0;
size_t g_arena_used = 0;
size_t g_device_in_use = 0;

}  // namespace

void* reserve_device_memory(size_t size, int device) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (!g_arena) {
    void* p = mmap(nullptr, kDeviceArenaBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    g_arena = reinterpret_cast<uintptr_t>(p);
  }
  size_t rounded = (std::max<size_t>(size, 1) + 511) & ~size_t(511);
  if (g_arena_used + rounded > kDeviceArenaBytes) return nullptr;
  uintptr_t p = g_arena + g_arena_used;
  g_arena_used += rounded;
  g_device_in_use += size;
  MemoryRange r;
  r.base = p;
  r.size = size;
  r.kind = SIM_MEM_DEVICE;
  r.device = device;
  r.buffer_id = g_next_buffer_id++;
  ranges()[p] = r;
  return reinterpret_cast<void*>(p);
}

void register_memory(const void* base, size_t size, SimMemKind kind, int device, bool managed, bool registered,
                     unsigned flags) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  MemoryRange r;
  r.base = reinterpret_cast<uintptr_t>(base);
  r.size = size;
  r.kind = kind;
  r.device = device;
  r.managed = managed;
  r.registered = registered;
  r.flags = flags;
  r.buffer_id = g_next_buffer_id++;
  if (managed) g_device_in_use += size;
  ranges()[r.base] = r;
}

bool unregister_memory(const void* base, SimMemKind kind) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = ranges().find(reinterpret_cast<uintptr_t>(base));
  if (it == ranges().end() || it->second.kind != kind) return false;
  if (kind == SIM_MEM_DEVICE || it->second.managed) g_device_in_use -= std::min(g_device_in_use, it->second.size);
  ranges().erase(it);
  return true;
}

bool find_memory(const void* ptr, MemoryRange* out) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto& m = ranges();
  auto it = m.upper_bound(p);
  if (it == m.begin()) return false;
  --it;
  if (p < it->first || p >= it->first + std::max<size_t>(it->second.size, 1)) return false;
  if (out) *out = it->second;
  return true;
}

bool overlaps_memory(const void* ptr, size_t size, SimMemKind kind) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto& m = ranges();
  auto it = m.upper_bound(p);
  if (it != m.begin()) {
    auto before = std::prev(it);
    if (before->second.kind == kind && p < before->first + std::max<size_t>(before->second.size, 1)) return true;
  }
  for (; it != m.end() && it->first < p + std::max<size_t>(size, 1); ++it)
    if (it->second.kind == kind) return true;
  return false;
}

SimMemKind memory_kind_of(const void* ptr) {
  MemoryRange r;
  if (find_memory(ptr, &r)) return r.kind;
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (g_arena && p >= g_arena && p < g_arena + kDeviceArenaBytes) return SIM_MEM_DEVICE;  // freed device memory
  return SIM_MEM_PAGEABLE;
}

size_t device_memory_in_use() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return g_device_in_use;
}

}  // namespace simcuda

namespace simcuda {
namespace {

constexpr size_t kSmallH2DBytes = 64 * 1024;

int64_t transfer_ns(uint64_t bytes, double gbps) { return int64_t(double(bytes) / gbps); }  // GB/s == bytes/ns

}  // namespace

OpPlan plan_copy(const void* dst, const void* src, size_t bytes, int copy_kind, bool async) {
  SimMemKind src_kind = memory_kind_of(src), dst_kind = memory_kind_of(dst);
  uint32_t ck = uint32_t(copy_kind);
  if (copy_kind < 0) {
    bool s = src_kind == SIM_MEM_DEVICE || src_kind == SIM_MEM_MANAGED;
    bool d = dst_kind == SIM_MEM_DEVICE || dst_kind == SIM_MEM_MANAGED;
    ck = s && d ? SIM_COPY_D2D : s ? SIM_COPY_D2H : d ? SIM_COPY_H2D : SIM_COPY_H2H;
  }
  bool pageable = src_kind == SIM_MEM_PAGEABLE || dst_kind == SIM_MEM_PAGEABLE;
  const SimDeviceConfig& c = config();
  double gbps = ck == SIM_COPY_D2H ? c.d2h_gbps : ck == SIM_COPY_D2D ? c.d2d_gbps : c.h2d_gbps;
  if (pageable) gbps /= c.pageable_factor;
  OpPlan plan;
  OpRequest& r = plan.request;
  r.kind = SIM_OP_MEMCPY;
  r.bytes = bytes;
  r.copy_kind = ck;
  r.src_kind = src_kind;
  r.dst_kind = dst_kind;
  r.is_async = async;
  r.duration_ns = transfer_ns(bytes, gbps);
  plan.blocks = async ? (pageable || ck == SIM_COPY_H2H)
                      : (ck == SIM_COPY_D2H || ck == SIM_COPY_H2H || (ck == SIM_COPY_H2D && bytes > kSmallH2DBytes));
  return plan;
}

OpPlan plan_memset(const void* ptr, size_t bytes, bool async) {
  OpPlan plan;
  OpRequest& r = plan.request;
  r.kind = SIM_OP_MEMSET;
  r.bytes = bytes;
  r.dst_kind = memory_kind_of(ptr);
  r.is_async = async;
  r.duration_ns = transfer_ns(bytes, config().memset_gbps);
  plan.blocks = !async && r.dst_kind != SIM_MEM_DEVICE;
  return plan;
}

}  // namespace simcuda

namespace simcuda::driver {
namespace {

const void* as_ptr(CUdeviceptr p) { return reinterpret_cast<const void*>(uintptr_t(p)); }

// Queues a planned copy or memset on `stream` as the call `scope`, and waits when the plan blocks.
CUresult queue_planned(ApiScope& scope, OpPlan& plan, Stream* stream) {
  scope.set_stream(stream_id(stream));
  scope.set_bytes(plan.request.bytes);
  spend(config().copy_api_ns);
  plan.request.stream = stream;
  plan.request.correlation_id = scope.correlation_id();
  int64_t op = enqueue(plan.request);
  scope.set_op(op);
  if (plan.blocks) scope.set_blocked(wait_op(op));
  return CUDA_SUCCESS;
}

// One copy: `forced` is the direction the entry point names (cuMemcpyHtoD...), or -1 for
// cuMemcpy/cuMemcpyAsync, which infer it from the pointers (unified addressing).
CUresult copy(ApiScope& scope, const void* dst, const void* src, size_t bytes, int forced, CUstream handle,
              bool async) {
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if ((!dst || !src) && bytes) return CUDA_ERROR_INVALID_VALUE;
  OpPlan plan = plan_copy(dst, src, bytes, forced, async);
  // A device side named by the entry point must be device (or managed) memory.
  auto on_device = [](uint32_t kind) { return kind == SIM_MEM_DEVICE || kind == SIM_MEM_MANAGED; };
  uint32_t ck = plan.request.copy_kind;
  if (forced >= 0 && (ck == SIM_COPY_D2H || ck == SIM_COPY_D2D) && !on_device(plan.request.src_kind))
    return CUDA_ERROR_INVALID_VALUE;
  if (forced >= 0 && (ck == SIM_COPY_H2D || ck == SIM_COPY_D2D) && !on_device(plan.request.dst_kind))
    return CUDA_ERROR_INVALID_VALUE;
  return queue_planned(scope, plan, async ? stream_of(handle) : legacy_stream(current_device()));
}

CUresult memset_op(ApiScope& scope, CUdeviceptr ptr, size_t bytes, CUstream handle, bool async) {
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ptr && bytes) return CUDA_ERROR_INVALID_VALUE;
  SimMemKind target = memory_kind_of(as_ptr(ptr));
  if (target != SIM_MEM_DEVICE && target != SIM_MEM_PINNED) return CUDA_ERROR_INVALID_VALUE;
  OpPlan plan = plan_memset(as_ptr(ptr), bytes, async);
  return queue_planned(scope, plan, async ? stream_of(handle) : legacy_stream(current_device()));
}

CUresult alloc_device(ApiScope& s, CUdeviceptr* dptr, size_t bytes) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx = current_context();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  s.set_bytes(bytes);
  spend(config().alloc_api_ns);
  s.set_blocked(wait_device(current_device()));
  if (device_memory_in_use() + bytes > device_total_memory()) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = reserve_device_memory(bytes, current_device());
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
  return CUDA_SUCCESS;
}

CUresult alloc_host(ApiScope& s, void** pp, size_t bytes) {
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  s.set_bytes(bytes);
  spend(config().alloc_api_ns);
  void* p = aligned_alloc(4096, (std::max<size_t>(bytes, 1) + 4095) & ~size_t(4095));
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  register_memory(p, bytes, SIM_MEM_PINNED, current_device());
  *pp = p;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda::driver

using namespace simcuda;
using namespace simcuda::driver;

extern "C" {

// ---- allocation ----------------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {  // cuMemAlloc_v2
  cuMemAlloc_v2_params params{dptr, bytesize};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", SIM_CALL_MALLOC, &params,
                [&](ApiScope& s) { return alloc_device(s, dptr, bytesize); });
}

SIMCUDA_EXPORT CUresult cuMemAllocPitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                        unsigned int element_size) {  // cuMemAllocPitch_v2
  cuMemAllocPitch_v2_params params{dptr, pitch, width, height, element_size};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, "cuMemAllocPitch_v2", SIM_CALL_MALLOC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!dptr || !pitch || !width || !height) return CUDA_ERROR_INVALID_VALUE;
                  if (element_size != 4 && element_size != 8 && element_size != 16) return CUDA_ERROR_INVALID_VALUE;
                  size_t p = (width + 511) & ~size_t(511);  // rows aligned as texture fetches want them
                  CUresult r = alloc_device(s, dptr, p * height);
                  if (r == CUDA_SUCCESS) *pitch = p;
                  return r;
                });
}

SIMCUDA_EXPORT CUresult cuMemFree(CUdeviceptr dptr) {  // cuMemFree_v2
  cuMemFree_v2_params params{dptr};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", SIM_CALL_FREE, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!dptr) return CUDA_SUCCESS;
                  spend(config().alloc_api_ns);
                  s.set_blocked(wait_device(current_device()));
                  MemoryRange r;
                  if (find_memory(as_ptr(dptr), &r) && r.managed && r.base == uintptr_t(dptr)) {
                    unregister_memory(as_ptr(dptr), SIM_MEM_MANAGED);
                    munmap(reinterpret_cast<void*>(uintptr_t(dptr)), (r.size + 4095) & ~size_t(4095));
                    return CUDA_SUCCESS;
                  }
                  return unregister_memory(as_ptr(dptr), SIM_MEM_DEVICE) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
                });
}

SIMCUDA_EXPORT CUresult cuMemAllocHost(void** pp, size_t bytesize) {  // cuMemAllocHost_v2
  cuMemAllocHost_v2_params params{pp, bytesize};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, "cuMemAllocHost_v2", SIM_CALL_HOST_ALLOC, &params,
                [&](ApiScope& s) { return alloc_host(s, pp, bytesize); });
}

SIMCUDA_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  cuMemHostAlloc_params params{pp, bytesize, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, "cuMemHostAlloc", SIM_CALL_HOST_ALLOC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (flags & ~unsigned(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                                        CU_MEMHOSTALLOC_WRITECOMBINED))
                    return CUDA_ERROR_INVALID_VALUE;
                  return alloc_host(s, pp, bytesize);
                });
}

SIMCUDA_EXPORT CUresult cuMemFreeHost(void* p) {
  cuMemFreeHost_params params{p};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, "cuMemFreeHost", SIM_CALL_HOST_FREE, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!p) return CUDA_SUCCESS;
                  spend(config().alloc_api_ns);
                  s.set_blocked(wait_device(current_device()));
                  MemoryRange r;
                  if (!find_memory(p, &r) || r.registered || r.base != reinterpret_cast<uintptr_t>(p) ||
                      !unregister_memory(p, SIM_MEM_PINNED))
                    return CUDA_ERROR_INVALID_VALUE;
                  free(p);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int flags) {  // _v2
  cuMemHostRegister_v2_params params{p, bytesize, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, "cuMemHostRegister_v2", SIM_CALL_HOST_ALLOC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!p || !bytesize) return CUDA_ERROR_INVALID_VALUE;
                  constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                              CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
                  if (flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
                  MemoryRange r;
                  const char* c = static_cast<const char*>(p);
                  if (find_memory(c, &r) || find_memory(c + bytesize - 1, &r))
                    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
                  s.set_bytes(bytesize);
                  spend(config().alloc_api_ns);
                  register_memory(p, bytesize, SIM_MEM_PINNED, current_device(), false, true);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuMemHostUnregister(void* p) {
  cuMemHostUnregister_params params{p};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, "cuMemHostUnregister", SIM_CALL_HOST_FREE, &params,
                [&](ApiScope&) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  MemoryRange r;
                  if (!p || !find_memory(p, &r) || !r.registered || r.base != reinterpret_cast<uintptr_t>(p))
                    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
                  unregister_memory(p, SIM_MEM_PINNED);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
                                                  unsigned int flags) {  // _v2
  cuMemHostGetDevicePointer_v2_params params{pdptr, p, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer_v2",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
                  MemoryRange r;
                  if (!find_memory(p, &r) || r.kind != SIM_MEM_PINNED) return CUDA_ERROR_INVALID_VALUE;
                  *pdptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p));  // unified addressing: the same address
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  cuMemAllocManaged_params params{dptr, bytesize, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, "cuMemAllocManaged", SIM_CALL_MALLOC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!dptr || !bytesize) return CUDA_ERROR_INVALID_VALUE;
                  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  s.set_bytes(bytesize);
                  spend(config().alloc_api_ns);
                  s.set_blocked(wait_device(current_device()));
                  // Real memory the host may touch, reserved lazily as the runtime's cudaMallocManaged does.
                  void* p = mmap(nullptr, (bytesize + 4095) & ~size_t(4095), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
                  register_memory(p, bytesize, SIM_MEM_MANAGED, current_device(), true, false, flags);
                  *dptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {  // cuMemGetInfo_v2
  cuMemGetInfo_v2_params params{free_bytes, total};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, "cuMemGetInfo_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  size_t t = device_total_memory(), used = std::min(t, device_memory_in_use());
                  *total = t;
                  *free_bytes = t - used;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize,
                                             CUdeviceptr dptr) {  // cuMemGetAddressRange_v2
  cuMemGetAddressRange_v2_params params{pbase, psize, dptr};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemGetAddressRange_v2, "cuMemGetAddressRange_v2", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  MemoryRange r;
                  if (!find_memory(as_ptr(dptr), &r) || r.kind != SIM_MEM_DEVICE) return CUDA_ERROR_NOT_FOUND;
                  if (pbase) *pbase = CUdeviceptr(r.base);
                  if (psize) *psize = r.size;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  cuPointerGetAttribute_params params{data, attribute, ptr};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute, "cuPointerGetAttribute", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!data) return CUDA_ERROR_INVALID_VALUE;
                  MemoryRange r;
                  if (!find_memory(as_ptr(ptr), &r)) return CUDA_ERROR_INVALID_VALUE;  // not CUDA memory
                  bool host_side = r.kind == SIM_MEM_PINNED || r.managed;
                  switch (attribute) {
                    case CU_POINTER_ATTRIBUTE_CONTEXT:
                      *static_cast<CUcontext*>(data) = primary_context(r.device);
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
                      *static_cast<unsigned*>(data) = r.kind == SIM_MEM_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
                      *static_cast<CUdeviceptr*>(data) = ptr;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
                      if (!host_side) return CUDA_ERROR_INVALID_VALUE;
                      *static_cast<void**>(data) = reinterpret_cast<void*>(uintptr_t(ptr));
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
                      *static_cast<int*>(data) = 0;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
                      *static_cast<unsigned long long*>(data) = r.buffer_id;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
                      *static_cast<int*>(data) = r.managed ? 1 : 0;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
                      *static_cast<int*>(data) = r.device;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
                      *static_cast<int*>(data) = r.kind == SIM_MEM_DEVICE && !r.managed ? 1 : 0;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
                    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
                      *static_cast<CUdeviceptr*>(data) = CUdeviceptr(r.base);
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
                    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
                      *static_cast<size_t*>(data) = r.size;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_MAPPED:
                      *static_cast<int*>(data) = 1;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
                      *static_cast<int*>(data) = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
                      *static_cast<int*>(data) = r.kind == SIM_MEM_DEVICE && !r.managed ? 1 : 0;
                      return CUDA_SUCCESS;
                    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
                      *static_cast<unsigned long long*>(data) = r.buffer_id;
                      return CUDA_SUCCESS;
                    default:
                      return CUDA_ERROR_INVALID_VALUE;
                  }
                });
}

// ---- copies --------------------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {  // _v2
  cuMemcpyHtoD_v2_params params{dst, src, n};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) { return copy(s, as_ptr(dst), src, n, SIM_COPY_H2D, nullptr, false); });
}

SIMCUDA_EXPORT CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {  // _v2
  cuMemcpyDtoH_v2_params params{dst, src, n};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) { return copy(s, dst, as_ptr(src), n, SIM_COPY_D2H, nullptr, false); });
}

SIMCUDA_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {  // _v2
  cuMemcpyDtoD_v2_params params{dst, src, n};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) { return copy(s, as_ptr(dst), as_ptr(src), n, SIM_COPY_D2D, nullptr, false); });
}

SIMCUDA_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream h) {  // _v2
  cuMemcpyHtoDAsync_v2_params params{dst, src, n, h};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", SIM_CALL_MEMCPY_ASYNC, &params,
                [&](ApiScope& s) { return copy(s, as_ptr(dst), src, n, SIM_COPY_H2D, h, true); });
}

SIMCUDA_EXPORT CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream h) {  // _v2
  cuMemcpyDtoHAsync_v2_params params{dst, src, n, h};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2", SIM_CALL_MEMCPY_ASYNC, &params,
                [&](ApiScope& s) { return copy(s, dst, as_ptr(src), n, SIM_COPY_D2H, h, true); });
}

SIMCUDA_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {  // _v2
  cuMemcpyDtoDAsync_v2_params params{dst, src, n, h};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2", SIM_CALL_MEMCPY_ASYNC, &params,
                [&](ApiScope& s) { return copy(s, as_ptr(dst), as_ptr(src), n, SIM_COPY_D2D, h, true); });
}

SIMCUDA_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  cuMemcpy_params params{dst, src, n};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, "cuMemcpy", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) { return copy(s, as_ptr(dst), as_ptr(src), n, -1, nullptr, false); });
}

SIMCUDA_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  cuMemcpyAsync_params params{dst, src, n, h};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, "cuMemcpyAsync", SIM_CALL_MEMCPY_ASYNC, &params,
                [&](ApiScope& s) { return copy(s, as_ptr(dst), as_ptr(src), n, -1, h, true); });
}

// ---- memsets (n counts elements of 1, 2 or 4 bytes) ---------------------------------------------------
SIMCUDA_EXPORT CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {  // _v2
  cuMemsetD8_v2_params params{d, v, n};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, "cuMemsetD8_v2", SIM_CALL_MEMSET, &params,
                [&](ApiScope& s) { return memset_op(s, d, n, nullptr, false); });
}

SIMCUDA_EXPORT CUresult cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n) {  // _v2
  cuMemsetD16_v2_params params{d, v, n};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, "cuMemsetD16_v2", SIM_CALL_MEMSET, &params,
                [&](ApiScope& s) -> CUresult {
                  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
                  return memset_op(s, d, n * 2, nullptr, false);
                });
}

SIMCUDA_EXPORT CUresult cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n) {  // _v2
  cuMemsetD32_v2_params params{d, v, n};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, "cuMemsetD32_v2", SIM_CALL_MEMSET, &params,
                [&](ApiScope& s) -> CUresult {
                  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
                  return memset_op(s, d, n * 4, nullptr, false);
                });
}

SIMCUDA_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h) {
  cuMemsetD8Async_params params{d, v, n, h};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, "cuMemsetD8Async", SIM_CALL_MEMSET_ASYNC, &params,
                [&](ApiScope& s) { return memset_op(s, d, n, h, true); });
}

SIMCUDA_EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream h) {
  cuMemsetD16Async_params params{d, v, n, h};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, "cuMemsetD16Async", SIM_CALL_MEMSET_ASYNC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
                  return memset_op(s, d, n * 2, h, true);
                });
}

SIMCUDA_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream h) {
  cuMemsetD32Async_params params{d, v, n, h};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, "cuMemsetD32Async", SIM_CALL_MEMSET_ASYNC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
                  return memset_op(s, d, n * 4, h, true);
                });
}

}  // extern "C"
