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

// cuDeviceComputeCapability and cuDeviceGetProperties are deprecated, and still exported and tested.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

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

// The sim's log entry of the most recent outermost call on this thread.
SimApiCall last_call() {
  const SimApiCall* calls = nullptr;
  size_t n = simcuda_api_calls(&calls);
  REQUIRE(n > 0);
  return calls[n - 1];
}

constexpr size_t kBytes = 1 << 20;

}  // namespace

TEST_CASE("before cuInit: calls fail with NOT_INITIALIZED; error strings work") {
  int count = -1;
  CHECK(cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
  const char* s = nullptr;
  CHECK(cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &s) == CUDA_SUCCESS);
  CHECK(std::string(s) == "CUDA_ERROR_NOT_INITIALIZED");
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

