// The simulated driver API (libcuda.so.1) behaves as cuda.h documents and is traced as CUPTI traces
// the real one: driver-domain callbacks with the CUDA 13 callback ids and versioned names, a
// correlation id per outermost call, and entries in the sim's API log with the right call kind.
// Test cases run in order (per-process state: cuInit, contexts, CUPTI's subscriber).
#include <catch2/catch.hpp>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <string.h>

#include <mutex>
#include <string>
#include <vector>

#include "simcuda/timeline.h"
#include "sim_test_log.h"

// cuDeviceComputeCapability and cuDeviceGetProperties are deprecated, and still exported and tested.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

using simtest::last_call;
using simtest::op_at;

namespace {

struct Seen {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  std::string function;
  uint32_t correlation;
  CUcontext context;
  uint32_t context_uid;
  size_t alloc_bytes;  // cuMemAlloc_v2's bytesize, read from its params struct
  bool has_return;
};

std::mutex g_mu;
std::vector<Seen> g_seen;
std::vector<std::pair<CUpti_CallbackId, CUcontext>> g_resource;
CUpti_SubscriberHandle g_sub = nullptr;

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    g_resource.emplace_back(cbid, static_cast<const CUpti_ResourceData*>(data)->context);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  size_t bytes = 0;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2)
    bytes = static_cast<const cuMemAlloc_v2_params*>(d->functionParams)->bytesize;
  g_seen.push_back({domain, cbid, d->callbackSite, d->functionName ? d->functionName : "", d->correlationId,
                    d->context, d->contextUid, bytes, d->functionReturnValue != nullptr});
}

std::vector<Seen> take_seen() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<Seen> out;
  out.swap(g_seen);
  return out;
}

CUdeviceptr g_dev = 0;
void* g_pinned = nullptr;
constexpr size_t kBytes = 1 << 20;

}  // namespace

TEST_CASE("before cuInit: calls fail with NOT_INITIALIZED; error strings and cuGetProcAddress work") {
  int count = -1;
  CHECK(cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
  const char* s = nullptr;
  CHECK(cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &s) == CUDA_SUCCESS);
  CHECK(std::string(s) == "CUDA_ERROR_NOT_INITIALIZED");
  void* fn = nullptr;
  CHECK(cuGetProcAddress(reinterpret_cast<const char*>("cuInit"), &fn, CUDA_VERSION, 0, nullptr) == CUDA_SUCCESS);
  CHECK(fn == dlsym(RTLD_DEFAULT, "cuInit"));
  CHECK(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  REQUIRE(cuptiSubscribe(&g_sub, on_callback, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS);
}

TEST_CASE("cuGetErrorName and cuGetErrorString know every CUresult") {
  const char *name = nullptr, *text = nullptr;
  CHECK(cuGetErrorName(CUDA_SUCCESS, &name) == CUDA_SUCCESS);
  CHECK(std::string(name) == "CUDA_SUCCESS");
  CHECK(cuGetErrorString(CUDA_ERROR_NOT_FOUND, &text) == CUDA_SUCCESS);
  CHECK(std::string(text) == "named symbol not found");
  CHECK(cuGetErrorName(CUDA_ERROR_INVALID_CLUSTER_SIZE, &name) == CUDA_SUCCESS);
  CHECK(std::string(name) == "CUDA_ERROR_INVALID_CLUSTER_SIZE");
  CHECK(cuGetErrorName(CUDA_ERROR_UNKNOWN, &name) == CUDA_SUCCESS);
  CHECK(std::string(name) == "CUDA_ERROR_UNKNOWN");
  int known = 0;
  for (int code = 0; code < 1100; ++code) {
    bool has_name = cuGetErrorName(CUresult(code), &name) == CUDA_SUCCESS;
    bool has_text = cuGetErrorString(CUresult(code), &text) == CUDA_SUCCESS;
    CHECK(has_name == has_text);
    if (has_name) {
      ++known;
      CHECK(std::string(name).rfind("CUDA_", 0) == 0);
      CHECK(strlen(text) > 0);
    }
  }
  CHECK(known >= 100);  // CUDA 13's cuda.h has 101 distinct codes
  CHECK(cuGetErrorString(CUresult(12345), &text) == CUDA_ERROR_INVALID_VALUE);
  CHECK(text == nullptr);
}

TEST_CASE("devices: an H200-like part through cuDeviceGetAttribute and friends, traced") {
  take_seen();
  int count = 0;
  REQUIRE(cuDeviceGetCount(&count) == CUDA_SUCCESS);
  CHECK(count == 1);
  CUdevice dev = -1;
  REQUIRE(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
  CHECK(cuDeviceGet(&dev, 1) == CUDA_ERROR_INVALID_DEVICE);
  int v = 0;
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) == CUDA_SUCCESS);
  CHECK(v == 132);
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == CUDA_SUCCESS);
  CHECK(v == 9);
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0) == CUDA_SUCCESS);
  CHECK(v == 0);
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) == CUDA_SUCCESS);
  CHECK(v == 32);
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0) == CUDA_SUCCESS);
  CHECK(v == 1024);
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0) == CUDA_SUCCESS);
  CHECK(v == 1);
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    INFO("attribute " << a);
    CHECK(cuDeviceGetAttribute(&v, CUdevice_attribute(a), 0) == CUDA_SUCCESS);
  }
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3) == CUDA_ERROR_INVALID_DEVICE);
  int major = 0, minor = -1;
  CHECK(cuDeviceComputeCapability(&major, &minor, 0) == CUDA_SUCCESS);
  CHECK(major == 9);
  CHECK(minor == 0);
  size_t total = 0;
  CHECK(cuDeviceTotalMem(&total, 0) == CUDA_SUCCESS);
  CHECK(total > size_t(140) * 1000 * 1000 * 1000);
  CUuuid uuid{};
  CHECK(cuDeviceGetUuid(&uuid, 0) == CUDA_SUCCESS);
  bool nonzero = false;
  for (char b : uuid.bytes) nonzero |= b != 0;
  CHECK(nonzero);
  char bus[32];
  CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, 0) == CUDA_SUCCESS);
  CHECK(std::string(bus) == "0000:18:00.0");
  char name[64];
  CHECK(cuDeviceGetName(name, sizeof name, 0) == CUDA_SUCCESS);
  CUdevprop prop{};
  CHECK(cuDeviceGetProperties(&prop, 0) == CUDA_SUCCESS);
  CHECK(prop.SIMDWidth == 32);

  std::vector<Seen> seen = take_seen();
  bool found = false;
  for (const Seen& s : seen)
    if (s.cbid == CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem_v2 && s.site == CUPTI_API_ENTER) {
      found = true;
      CHECK(s.domain == CUPTI_CB_DOMAIN_DRIVER_API);
      CHECK(s.function == "cuDeviceTotalMem_v2");
      CHECK(s.context == nullptr);  // no context exists yet
    }
  CHECK(found);
}

TEST_CASE("without a current context, calls that need one fail with INVALID_CONTEXT") {
  CUcontext ctx = reinterpret_cast<CUcontext>(1);
  CHECK(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
  CHECK(ctx == nullptr);
  CUdeviceptr p = 0;
  CHECK(cuMemAlloc(&p, 64) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
  CUdevice d;
  CHECK(cuCtxGetDevice(&d) == CUDA_ERROR_INVALID_CONTEXT);
}

TEST_CASE("contexts: primary retain and set current, cuCtxCreate_v4 with its own id, push and pop") {
  g_resource.clear();
  CUcontext primary = nullptr;
  REQUIRE(cuDevicePrimaryCtxRetain(&primary, 0) == CUDA_SUCCESS);
  REQUIRE(primary != nullptr);
  unsigned flags = 99;
  int active = 0;
  CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS);
  CHECK(active == 1);
  CHECK(flags == 0);
  CHECK(cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC) == CUDA_SUCCESS);
  CHECK(cuDevicePrimaryCtxSetFlags(0, 0x100000) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS);
  CHECK(flags == CU_CTX_SCHED_BLOCKING_SYNC);
  REQUIRE(cuCtxSetCurrent(primary) == CUDA_SUCCESS);
  CUcontext cur = nullptr;
  CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
  CHECK(cur == primary);
  CUdevice dev = -1;
  CHECK(cuCtxGetDevice(&dev) == CUDA_SUCCESS);
  CHECK(dev == 0);
  unsigned version = 0;
  CHECK(cuCtxGetApiVersion(nullptr, &version) == CUDA_SUCCESS);
  CHECK(version >= 3020);
  unsigned long long primary_id = 0, other_id = 0;
  CHECK(cuCtxGetId(primary, &primary_id) == CUDA_SUCCESS);
  uint32_t cupti_id = 0;
  CHECK(cuptiGetContextId(primary, &cupti_id) == CUPTI_SUCCESS);

  CUcontext own = nullptr;
  REQUIRE(cuCtxCreate(&own, nullptr, 0, 0) == CUDA_SUCCESS);
  REQUIRE(own != nullptr);
  CHECK(own != primary);
  CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
  CHECK(cur == own);  // pushed onto the thread's stack
  CHECK(cuCtxGetId(own, &other_id) == CUDA_SUCCESS);
  CHECK(other_id != primary_id);
  uint32_t own_cupti_id = 0, own_device = 9;
  CHECK(cuptiGetContextId(own, &own_cupti_id) == CUPTI_SUCCESS);
  CHECK(own_cupti_id == uint32_t(other_id));
  CHECK(own_cupti_id != cupti_id);
  CHECK(cuptiGetDeviceId(own, &own_device) == CUPTI_SUCCESS);
  CHECK(own_device == 0);
  take_seen();
  CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
  for (const Seen& s : take_seen()) {
    CHECK(s.context == own);  // driver callbacks carry the current context and its id
    CHECK(s.context_uid == uint32_t(other_id));
  }
  {
    bool created = false;
    for (auto& r : g_resource) created |= r.first == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && r.second == own;
    CHECK(created);
  }
  CUcontext popped = nullptr;
  CHECK(cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
  CHECK(popped == own);
  CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
  CHECK(cur == primary);
  CHECK(cuCtxPushCurrent(own) == CUDA_SUCCESS);
  CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
  CHECK(cur == own);
  CHECK(cuCtxPopCurrent(nullptr) == CUDA_SUCCESS);
  CHECK(cuCtxDestroy(own) == CUDA_SUCCESS);
  {
    bool destroyed = false;
    for (auto& r : g_resource) destroyed |= r.first == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && r.second == own;
    CHECK(destroyed);
  }
  CHECK(cuCtxSetCurrent(own) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuptiGetContextId(own, &own_cupti_id) == CUPTI_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxDestroy(primary) == CUDA_ERROR_INVALID_CONTEXT);  // primary contexts are released, not destroyed
  CHECK(cuCtxCreate(&own, nullptr, 0, 7) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
  CHECK(cur == primary);

  take_seen();
  SimApiCall before = last_call();
  REQUIRE(cuCtxSynchronize() == CUDA_SUCCESS);
  SimApiCall sync = last_call();
  CHECK(sync.kind == SIM_CALL_DEVICE_SYNC);
  CHECK(sync.domain == CUPTI_CB_DOMAIN_DRIVER_API);
  CHECK(sync.cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize);
  CHECK(std::string(sync.name) == "cuCtxSynchronize");
  CHECK(sync.blocked == 1);
  CHECK(sync.correlation_id != before.correlation_id);
}

TEST_CASE("memory: allocations, the kinds and blocking of copies, memsets, pointer attributes") {
  take_seen();
  REQUIRE(cuMemAlloc(&g_dev, kBytes) == CUDA_SUCCESS);
  SimApiCall alloc = last_call();
  CHECK(alloc.kind == SIM_CALL_MALLOC);
  CHECK(alloc.cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
  CHECK(std::string(alloc.name) == "cuMemAlloc_v2");
  CHECK(alloc.bytes == kBytes);
  CHECK(alloc.blocked == 1);
  {
    std::vector<Seen> seen = take_seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].site == CUPTI_API_ENTER);
    CHECK(seen[1].site == CUPTI_API_EXIT);
    CHECK(seen[1].has_return);
    CHECK(seen[0].alloc_bytes == kBytes);
    CHECK(seen[0].correlation == seen[1].correlation);
    CHECK(seen[0].correlation == alloc.correlation_id);
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  CHECK(cuMemGetAddressRange(&base, &size, g_dev + 100) == CUDA_SUCCESS);
  CHECK(base == g_dev);
  CHECK(size == kBytes);
  unsigned type = 0;
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, g_dev) == CUDA_SUCCESS);
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  size_t free_bytes = 0, total = 0;
  CHECK(cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS);
  CHECK(free_bytes <= total - kBytes);
  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  CHECK(cuMemAllocPitch(&pitched, &pitch, 1000, 10, 4) == CUDA_SUCCESS);
  CHECK(pitch >= 1000);
  CHECK(pitch % 512 == 0);
  CHECK(cuMemFree(pitched) == CUDA_SUCCESS);
  CHECK(cuMemFree(pitched) == CUDA_ERROR_INVALID_VALUE);  // freed twice

  REQUIRE(cuMemAllocHost(&g_pinned, kBytes) == CUDA_SUCCESS);
  CHECK(last_call().kind == SIM_CALL_HOST_ALLOC);
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(uintptr_t(g_pinned))) ==
        CUDA_SUCCESS);
  CHECK(type == CU_MEMORYTYPE_HOST);
  memset(g_pinned, 1, kBytes);  // real memory

  // Synchronous H2D over 64 KiB from pinned memory: a blocking copy, H2D, PINNED -> DEVICE.
  REQUIRE(cuMemcpyHtoD(g_dev, g_pinned, kBytes) == CUDA_SUCCESS);
  SimApiCall h2d = last_call();
  CHECK(h2d.kind == SIM_CALL_MEMCPY);
  CHECK(h2d.cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2);
  CHECK(h2d.blocked == 1);
  SimDeviceOp op = op_at(h2d.op_index);
  CHECK(op.kind == SIM_OP_MEMCPY);
  CHECK(op.copy_kind == SIM_COPY_H2D);
  CHECK(op.src_kind == SIM_MEM_PINNED);
  CHECK(op.dst_kind == SIM_MEM_DEVICE);
  CHECK(op.bytes == kBytes);
  CHECK(op.stream == 7);
  CHECK(op.correlation_id == h2d.correlation_id);
  CHECK(op.is_async == 0);

  // 64 KiB or less is staged: returns at once.
  REQUIRE(cuMemcpyHtoD(g_dev, g_pinned, 4096) == CUDA_SUCCESS);
  CHECK(last_call().blocked == 0);

  // Async from pinned: returns at once; from pageable: waits.
  REQUIRE(cuMemcpyHtoDAsync(g_dev, g_pinned, kBytes, nullptr) == CUDA_SUCCESS);
  SimApiCall async_pinned = last_call();
  CHECK(async_pinned.kind == SIM_CALL_MEMCPY_ASYNC);
  CHECK(async_pinned.blocked == 0);
  CHECK(op_at(async_pinned.op_index).is_async == 1);
  std::vector<char> pageable(kBytes);
  REQUIRE(cuMemcpyHtoDAsync(g_dev, pageable.data(), kBytes, nullptr) == CUDA_SUCCESS);
  SimApiCall async_pageable = last_call();
  CHECK(async_pageable.blocked == 1);
  CHECK(op_at(async_pageable.op_index).src_kind == SIM_MEM_PAGEABLE);

  REQUIRE(cuMemcpyDtoH(g_pinned, g_dev, kBytes) == CUDA_SUCCESS);
  SimApiCall d2h = last_call();
  CHECK(d2h.kind == SIM_CALL_MEMCPY);
  CHECK(d2h.blocked == 1);
  CHECK(op_at(d2h.op_index).copy_kind == SIM_COPY_D2H);
  REQUIRE(cuMemcpyDtoHAsync(g_pinned, g_dev, kBytes, nullptr) == CUDA_SUCCESS);
  CHECK(last_call().blocked == 0);

  CUdeviceptr other = 0;
  REQUIRE(cuMemAlloc(&other, kBytes) == CUDA_SUCCESS);
  REQUIRE(cuMemcpyDtoD(other, g_dev, kBytes) == CUDA_SUCCESS);
  SimApiCall d2d = last_call();
  CHECK(d2d.blocked == 0);
  CHECK(op_at(d2d.op_index).copy_kind == SIM_COPY_D2D);
  REQUIRE(cuMemcpyDtoDAsync(other, g_dev, kBytes, nullptr) == CUDA_SUCCESS);
  CHECK(last_call().kind == SIM_CALL_MEMCPY_ASYNC);
  CHECK(cuMemcpyDtoH(g_pinned, CUdeviceptr(uintptr_t(pageable.data())), 16) == CUDA_ERROR_INVALID_VALUE);

  // cuMemcpy infers the direction from the pointers (unified addressing).
  REQUIRE(cuMemcpy(CUdeviceptr(uintptr_t(g_pinned)), g_dev, kBytes) == CUDA_SUCCESS);
  SimApiCall unified = last_call();
  CHECK(unified.cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy);
  CHECK(op_at(unified.op_index).copy_kind == SIM_COPY_D2H);
  CHECK(unified.blocked == 1);
  REQUIRE(cuMemcpyAsync(other, CUdeviceptr(uintptr_t(g_pinned)), kBytes, nullptr) == CUDA_SUCCESS);
  CHECK(op_at(last_call().op_index).copy_kind == SIM_COPY_H2D);
  CHECK(last_call().blocked == 0);

  // Memsets count elements.
  REQUIRE(cuMemsetD32(g_dev, 7, 1024) == CUDA_SUCCESS);
  SimApiCall ms = last_call();
  CHECK(ms.kind == SIM_CALL_MEMSET);
  CHECK(ms.blocked == 0);
  CHECK(op_at(ms.op_index).kind == SIM_OP_MEMSET);
  CHECK(op_at(ms.op_index).bytes == 4096);
  REQUIRE(cuMemsetD16Async(g_dev, 7, 1024, nullptr) == CUDA_SUCCESS);
  CHECK(last_call().kind == SIM_CALL_MEMSET_ASYNC);
  CHECK(op_at(last_call().op_index).bytes == 2048);
  REQUIRE(cuMemsetD8(g_dev, 7, 100) == CUDA_SUCCESS);
  CHECK(op_at(last_call().op_index).bytes == 100);
  CHECK(cuMemsetD32(g_dev + 2, 7, 4) == CUDA_ERROR_INVALID_VALUE);  // misaligned

  REQUIRE(cuMemFree(other) == CUDA_SUCCESS);
  SimApiCall fr = last_call();
  CHECK(fr.kind == SIM_CALL_FREE);
  CHECK(fr.blocked == 1);
}

TEST_CASE("memory: one registry for the runtime and the driver") {
  // A cudaMalloc pointer copied by the driver, a cuMemAllocHost buffer copied by the runtime.
  void* rt_dev = nullptr;
  REQUIRE(cudaMalloc(&rt_dev, kBytes) == cudaSuccess);
  REQUIRE(cuMemcpyDtoH(g_pinned, CUdeviceptr(uintptr_t(rt_dev)), kBytes) == CUDA_SUCCESS);
  SimDeviceOp op = op_at(last_call().op_index);
  CHECK(op.src_kind == SIM_MEM_DEVICE);
  CHECK(op.dst_kind == SIM_MEM_PINNED);
  REQUIRE(cudaMemcpy(rt_dev, g_pinned, kBytes, cudaMemcpyHostToDevice) == cudaSuccess);
  op = op_at(last_call().op_index);
  CHECK(op.src_kind == SIM_MEM_PINNED);
  CHECK(op.dst_kind == SIM_MEM_DEVICE);
  CUdeviceptr base = 0;
  CHECK(cuMemGetAddressRange(&base, nullptr, CUdeviceptr(uintptr_t(rt_dev)) + 8) == CUDA_SUCCESS);
  CHECK(base == CUdeviceptr(uintptr_t(rt_dev)));
  CHECK(cuMemFree(CUdeviceptr(uintptr_t(rt_dev))) == CUDA_SUCCESS);  // either API frees it
  CHECK(cudaFree(rt_dev) == cudaErrorInvalidValue);

  // cuMemHostRegister pins the caller's memory; unregistering makes it pageable again.
  std::vector<char> buf(kBytes);
  REQUIRE(cuMemHostRegister(buf.data(), buf.size(), 0) == CUDA_SUCCESS);
  CHECK(cuMemHostRegister(buf.data(), buf.size(), 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CUdeviceptr mapped = 0;
  CHECK(cuMemHostGetDevicePointer(&mapped, buf.data(), 0) == CUDA_SUCCESS);
  CHECK(mapped == CUdeviceptr(uintptr_t(buf.data())));
  REQUIRE(cuMemcpyHtoDAsync(g_dev, buf.data(), kBytes, nullptr) == CUDA_SUCCESS);
  CHECK(op_at(last_call().op_index).src_kind == SIM_MEM_PINNED);
  CHECK(last_call().blocked == 0);
  REQUIRE(cuMemHostUnregister(buf.data()) == CUDA_SUCCESS);
  CHECK(cuMemHostUnregister(buf.data()) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  REQUIRE(cuMemcpyHtoDAsync(g_dev, buf.data(), kBytes, nullptr) == CUDA_SUCCESS);
  CHECK(op_at(last_call().op_index).src_kind == SIM_MEM_PAGEABLE);

  // Managed memory is usable from the host and is device memory to copies.
  CUdeviceptr managed = 0;
  REQUIRE(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  memset(reinterpret_cast<void*>(uintptr_t(managed)), 0, 4096);
  int is_managed = 0;
  CHECK(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed) == CUDA_SUCCESS);
  CHECK(is_managed == 1);
  CHECK(cuMemFree(managed) == CUDA_SUCCESS);

  void* host_alloc = nullptr;
  REQUIRE(cuMemHostAlloc(&host_alloc, 4096, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS);
  REQUIRE(cudaMemcpy(g_pinned, host_alloc, 4096, cudaMemcpyHostToHost) == cudaSuccess);
  CHECK(op_at(last_call().op_index).src_kind == SIM_MEM_PINNED);
  REQUIRE(cuMemFreeHost(host_alloc) == CUDA_SUCCESS);
  CHECK(last_call().kind == SIM_CALL_HOST_FREE);
  CHECK(last_call().blocked == 1);
  int dummy = 0;
  CHECK(cuPointerGetAttribute(&dummy, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(uintptr_t(&dummy))) ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("streams and events: order, waits, queries, elapsed time, sync kinds") {
  CUstream s1 = nullptr, s2 = nullptr, prio = nullptr;
  REQUIRE(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  REQUIRE(cuStreamCreate(&s2, CU_STREAM_DEFAULT) == CUDA_SUCCESS);
  CHECK(cuStreamCreate(&prio, 0x80) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuStreamCreateWithPriority(&prio, 0, -100) == CUDA_SUCCESS);
  int p = 0;
  CHECK(cuStreamGetPriority(prio, &p) == CUDA_SUCCESS);
  CHECK(p == -5);  // clamped to the device's range
  unsigned flags = 9;
  CHECK(cuStreamGetFlags(s1, &flags) == CUDA_SUCCESS);
  CHECK(flags == CU_STREAM_NON_BLOCKING);
  unsigned long long id1 = 0, id2 = 0, legacy = 0;
  CHECK(cuStreamGetId(s1, &id1) == CUDA_SUCCESS);
  CHECK(cuStreamGetId(s2, &id2) == CUDA_SUCCESS);
  CHECK(cuStreamGetId(nullptr, &legacy) == CUDA_SUCCESS);
  CHECK(legacy == 7);
  CHECK(id1 >= 13);
  CHECK(id2 != id1);
  CUcontext ctx = nullptr, cur = nullptr;
  CHECK(cuStreamGetCtx(s1, &ctx) == CUDA_SUCCESS);
  CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
  CHECK(ctx == cur);

  // A 1 GiB memset at 1 GB/s: about 1.07 s of device time, so the queries right after it see it
  // unfinished even on a loaded machine.
  SimDeviceConfig slow{};
  slow.memset_gbps = 1.0;
  simcuda_configure(&slow);
  const size_t big = size_t(1) << 30;
  CUdeviceptr d = 0;
  REQUIRE(cuMemAlloc(&d, big) == CUDA_SUCCESS);
  CUevent start = nullptr, stop = nullptr, untimed = nullptr;
  REQUIRE(cuEventCreate(&start, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  REQUIRE(cuEventCreate(&stop, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  REQUIRE(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  CHECK(cuEventCreate(&untimed, CU_EVENT_INTERPROCESS) == CUDA_ERROR_INVALID_VALUE);
  float ms = 0;
  CHECK(cuEventElapsedTime(&ms, start, stop) == CUDA_ERROR_INVALID_HANDLE);  // not recorded yet

  REQUIRE(cuEventRecord(start, s1) == CUDA_SUCCESS);
  CHECK(last_call().kind == SIM_CALL_EVENT_RECORD);
  REQUIRE(cuMemsetD8Async(d, 0, big, s1) == CUDA_SUCCESS);
  SimApiCall memset_call = last_call();
  REQUIRE(cuEventRecordWithFlags(stop, s1, 0) == CUDA_SUCCESS);
  REQUIRE(cuEventRecord(untimed, s1) == CUDA_SUCCESS);
  CHECK(cuEventQuery(stop) == CUDA_ERROR_NOT_READY);
  CHECK(cuStreamQuery(s1) == CUDA_ERROR_NOT_READY);
  CHECK(cuEventElapsedTime(&ms, start, stop) == CUDA_ERROR_NOT_READY);

  // s2 waits for `stop`: its memset starts only after the long one ends.
  REQUIRE(cuStreamWaitEvent(s2, stop, 0) == CUDA_SUCCESS);
  SimApiCall wait = last_call();
  CHECK(wait.kind == SIM_CALL_STREAM_WAIT_EVENT);
  CHECK(wait.blocked == 0);
  REQUIRE(cuMemsetD8Async(d, 0, 1024, s2) == CUDA_SUCCESS);
  SimApiCall after = last_call();

  REQUIRE(cuStreamSynchronize(s2) == CUDA_SUCCESS);
  SimApiCall ssync = last_call();
  CHECK(ssync.kind == SIM_CALL_STREAM_SYNC);
  CHECK(ssync.cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize);
  CHECK(ssync.blocked == 1);
  CHECK(ssync.stream == id2);
  SimDeviceOp long_op = op_at(memset_call.op_index), short_op = op_at(after.op_index);
  CHECK(short_op.start_ns >= long_op.end_ns);
  CHECK(ssync.waited_until_ns >= long_op.end_ns);

  REQUIRE(cuEventSynchronize(stop) == CUDA_SUCCESS);
  CHECK(last_call().kind == SIM_CALL_EVENT_SYNC);
  CHECK(cuEventQuery(stop) == CUDA_SUCCESS);
  CHECK(cuStreamQuery(s1) == CUDA_SUCCESS);
  REQUIRE(cuEventElapsedTime(&ms, start, stop) == CUDA_SUCCESS);
  CHECK(ms >= 0.99f * float(double(big) / 1e9 * 1000.0));  // the memset's device time (1 GB/s), in ms
  SimDeviceConfig fast{};
  fast.memset_gbps = 1000.0;  // the default again
  simcuda_configure(&fast);
  CHECK(cuEventElapsedTime(&ms, start, untimed) == CUDA_ERROR_INVALID_HANDLE);

  CHECK(cuStreamDestroy(s1) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(s2) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(prio) == CUDA_SUCCESS);
  CHECK(cuEventDestroy(start) == CUDA_SUCCESS);
  CHECK(cuEventDestroy(stop) == CUDA_SUCCESS);
  CHECK(cuEventDestroy(untimed) == CUDA_SUCCESS);
  CHECK(cuMemFree(d) == CUDA_SUCCESS);
}

TEST_CASE("limits, cache configuration, PCI lookup, a stream's device") {
  size_t v = 0;
  CHECK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE) == CUDA_SUCCESS);
  CHECK(v == 1024);
  CHECK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE) == CUDA_SUCCESS);
  CHECK(v == 8 << 20);
  CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 << 20) == CUDA_SUCCESS);
  CHECK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE) == CUDA_SUCCESS);
  CHECK(v == 64 << 20);
  CHECK(cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 256) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuCtxSetLimit(CU_LIMIT_CIG_ENABLED, 1) == CUDA_ERROR_INVALID_VALUE);  // query only
  CHECK(cuCtxGetLimit(&v, CUlimit(0x40)) == CUDA_ERROR_UNSUPPORTED_LIMIT);
  CUfunc_cache cache = CU_FUNC_CACHE_PREFER_L1;
  CHECK(cuCtxGetCacheConfig(&cache) == CUDA_SUCCESS);
  CHECK(cache == CU_FUNC_CACHE_PREFER_NONE);
  CHECK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED) == CUDA_SUCCESS);
  CHECK(cuCtxGetCacheConfig(&cache) == CUDA_SUCCESS);
  CHECK(cache == CU_FUNC_CACHE_PREFER_SHARED);
  CUdevice d = -1;
  CHECK(cuDeviceGetByPCIBusId(&d, "0000:18:00.0") == CUDA_SUCCESS);
  CHECK(d == 0);
  CHECK(cuDeviceGetByPCIBusId(&d, "0000:19:00.0") == CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuDeviceGetByPCIBusId(&d, "not a bus id") == CUDA_ERROR_INVALID_DEVICE);
  int peer = 1;
  CHECK(cuDeviceCanAccessPeer(&peer, 0, 0) == CUDA_SUCCESS);
  CHECK(peer == 0);
  CUstream s = nullptr;
  REQUIRE(cuStreamCreate(&s, 0) == CUDA_SUCCESS);
  d = -1;
  CHECK(cuStreamGetDevice(s, &d) == CUDA_SUCCESS);
  CHECK(d == 0);
  CHECK(cuStreamGetDevice(nullptr, &d) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
}

TEST_CASE("cuGetProcAddress_v2 returns the sim's own versioned exports") {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  REQUIRE(cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS);
  CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
  CHECK(fn == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  REQUIRE(cuGetProcAddress("cuCtxCreate", &fn, 13000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(RTLD_DEFAULT, "cuCtxCreate_v4"));
  REQUIRE(cuGetProcAddress("cuLaunchKernel", &fn, 12000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(RTLD_DEFAULT, "cuLaunchKernel"));
  // Older ABIs where they are exported: what a binary built against CUDA 11 or 12 headers binds.
  REQUIRE(cuGetProcAddress("cuCtxCreate", &fn, 12000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(RTLD_DEFAULT, "cuCtxCreate_v3"));
  REQUIRE(cuGetProcAddress("cuCtxCreate", &fn, 11000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(RTLD_DEFAULT, "cuCtxCreate_v2"));
  CHECK(cuGetProcAddress("cuMemAlloc", &fn, 3000, 0, &status) == CUDA_ERROR_NOT_FOUND);  // the 32-bit ABI
  CHECK(cuGetProcAddress("cuNoSuchCall", &fn, 13000, 0, &status) == CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(fn == nullptr);
  CHECK(cuGetProcAddress("simcuda_api_calls", &fn, 13000, 0, &status) == CUDA_ERROR_NOT_FOUND);
  take_seen();
  REQUIRE(cuGetProcAddress("cuGetProcAddress", &fn, 13000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
  std::vector<Seen> seen = take_seen();
  REQUIRE(!seen.empty());
  CHECK(seen[0].cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2);
  // The entry point it returns works.
  auto get_count = reinterpret_cast<CUresult (*)(int*)>(dlsym(RTLD_DEFAULT, "cuDeviceGetCount"));
  REQUIRE(cuGetProcAddress("cuDeviceGetCount", &fn, 13000, 0, nullptr) == CUDA_SUCCESS);
  CHECK(reinterpret_cast<void*>(get_count) == fn);
  int n = 0;
  CHECK(reinterpret_cast<CUresult (*)(int*)>(fn)(&n) == CUDA_SUCCESS);
  CHECK(n == 1);
}

TEST_CASE("every outermost driver call gets its own correlation id") {
  take_seen();
  CUdeviceptr a = 0;
  REQUIRE(cuMemAlloc(&a, 256) == CUDA_SUCCESS);
  REQUIRE(cuMemsetD8Async(a, 0, 256, nullptr) == CUDA_SUCCESS);
  REQUIRE(cuMemFree(a) == CUDA_SUCCESS);
  std::vector<Seen> seen = take_seen();
  REQUIRE(seen.size() == 6);
  CHECK(seen[0].function == "cuMemAlloc_v2");
  CHECK(seen[2].function == "cuMemsetD8Async");
  CHECK(seen[2].cbid == CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async);
  CHECK(seen[4].function == "cuMemFree_v2");
  CHECK(seen[0].correlation != seen[2].correlation);
  CHECK(seen[2].correlation != seen[4].correlation);
  for (int i = 0; i < 6; i += 2) CHECK(seen[size_t(i)].correlation == seen[size_t(i) + 1].correlation);
  cuptiUnsubscribe(g_sub);
}

TEST_CASE("a binary built against CUDA 12 headers creates its context through cuCtxCreate_v2") {
  // CUDA 12's cuda.h maps cuCtxCreate to cuCtxCreate_v2(pctx, flags, dev); CUDA 13's declares it
  // only for the driver's own build, so bind it the way the dynamic linker would.
  using CtxCreateV2 = CUresult (*)(CUcontext*, unsigned int, CUdevice);
  auto create_v2 = reinterpret_cast<CtxCreateV2>(dlsym(RTLD_DEFAULT, "cuCtxCreate_v2"));
  REQUIRE(create_v2 != nullptr);
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  REQUIRE(create_v2(&ctx, 0, 0) == CUDA_SUCCESS);
  CHECK(last_call().cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2);  // traced under its own id
  CHECK(std::string(last_call().name) == "cuCtxCreate_v2");
  CUcontext current = nullptr;
  REQUIRE(cuCtxGetCurrent(&current) == CUDA_SUCCESS);
  CHECK(current == ctx);
  CHECK(create_v2(&ctx, 0, 7) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuCtxDestroy(current) == CUDA_SUCCESS);
}
