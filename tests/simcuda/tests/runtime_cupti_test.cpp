// The runtime calls added for sample programs are traced as CUPTI traces the real runtime: their
// CUDA 13 runtime callback ids and params structs, the driver call the runtime makes nested inside
// with the same correlation id, and graph work's activity records carrying the cudaGraphLaunch's
// correlation id and the graph's id.
#include <catch2/catch.hpp>
#include <cuda_profiler_api.h>
#include <cupti.h>
#include <stdlib.h>

#include <mutex>
#include <string>
#include <vector>

#include "sim_test_kernels.h"

namespace {

struct Seen {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  std::string function;
  uint32_t correlation;
  const void* params;
};

std::mutex g_mu;
std::vector<Seen> g_seen;
float* g_elapsed_ms_param = nullptr;
std::vector<std::vector<uint8_t>> g_buffers;

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  std::lock_guard<std::mutex> lock(g_mu);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080)
    g_elapsed_ms_param = static_cast<const cudaEventElapsedTime_v12080_params*>(d->functionParams)->ms;
  g_seen.push_back({domain, cbid, d->callbackSite, d->functionName ? d->functionName : "", d->correlationId,
                    d->functionParams});
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 256 * 1024;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_buffers.emplace_back(buffer, buffer + valid);
  free(buffer);
}

simtest::TestKernel& kernel() {
  static simtest::TestKernel k;
  static bool once = (simtest::register_kernel(k, "_Z9rt_cuptivv"), true);
  (void)once;
  return k;
}

void subscribe_once() {
  static bool done = [] {
    CUpti_SubscriberHandle sub;
    REQUIRE(cuptiSubscribe(&sub, on_callback, nullptr) == CUPTI_SUCCESS);
    REQUIRE(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
    REQUIRE(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
    REQUIRE(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS);
    REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
    return true;
  }();
  (void)done;
}

std::vector<Seen> take() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<Seen> out;
  out.swap(g_seen);
  return out;
}

// The callbacks of one outermost runtime call: ENTER, the nested driver call's ENTER/EXIT, EXIT.
void check_traced(const std::vector<Seen>& seen, CUpti_CallbackId runtime_cbid, const char* name,
                  CUpti_CallbackId driver_cbid = 0) {
  INFO(name);
  REQUIRE(seen.size() == (driver_cbid ? 4u : 2u));
  CHECK(seen.front().domain == CUPTI_CB_DOMAIN_RUNTIME_API);
  CHECK(seen.front().cbid == runtime_cbid);
  CHECK(seen.front().site == CUPTI_API_ENTER);
  CHECK(seen.front().function == name);
  CHECK(seen.back().cbid == runtime_cbid);
  CHECK(seen.back().site == CUPTI_API_EXIT);
  for (const Seen& s : seen) CHECK(s.correlation == seen.front().correlation);
  if (driver_cbid) {
    CHECK(seen[1].domain == CUPTI_CB_DOMAIN_DRIVER_API);
    CHECK(seen[1].cbid == driver_cbid);
    CHECK(seen[1].site == CUPTI_API_ENTER);
    CHECK(seen[2].cbid == driver_cbid);
    CHECK(seen[2].site == CUPTI_API_EXIT);
  }
}

void CUDART_CB nothing(void*) {}
void CUDART_CB nothing_cb(cudaStream_t, cudaError_t, void*) {}

}  // namespace

TEST_CASE("new runtime calls fire their runtime callback ids, with the driver call nested", "[cupti][runtime]") {
  subscribe_once();
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  take();

  cudaDeviceProp p;
  REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000, "cudaGetDeviceProperties");
  int v;
  REQUIRE(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000, "cudaDeviceGetAttribute");
  REQUIRE(cudaProfilerStart() == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, "cudaProfilerStart",
               CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
  REQUIRE(cudaProfilerStop() == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, "cudaProfilerStop",
               CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  REQUIRE(cudaLaunchHostFunc(s, nothing, nullptr) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc",
               CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc);
  REQUIRE(cudaStreamAddCallback(s, nothing_cb, nullptr, 0) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000, "cudaStreamAddCallback",
               CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  take();

  std::vector<char> buf(1 << 16);
  REQUIRE(cudaHostRegister(buf.data(), buf.size(), 0) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, "cudaHostRegister",
               CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2);
  REQUIRE(cudaHostUnregister(buf.data()) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, "cudaHostUnregister",
               CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister);
  void* managed = nullptr;
  REQUIRE(cudaMallocManaged(&managed, 4096) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, "cudaMallocManaged",
               CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 1 << 16) == cudaSuccess);
  take();
  REQUIRE(cudaMemcpy2D(dev, 256, buf.data(), 256, 256, 4, cudaMemcpyHostToDevice) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, "cudaMemcpy2D",
               CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2);

  cudaEvent_t a, b;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  REQUIRE(cudaEventRecord(a, s) == cudaSuccess);
  REQUIRE(cudaEventRecord(b, s) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(b) == cudaSuccess);
  take();
  float ms = -1;
  REQUIRE(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  check_traced(take(), CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080, "cudaEventElapsedTime");
  CHECK(g_elapsed_ms_param == &ms);  // the params struct is the real one
  REQUIRE(cudaFree(managed) == cudaSuccess);
  REQUIRE(cudaFree(dev) == cudaSuccess);
}

TEST_CASE("kernels of an explicit graph's launch carry its correlation id and graph id in CUPTI", "[cupti][graph]") {
  subscribe_once();
  cudaGraph_t g;
  REQUIRE(cudaGraphCreate(&g, 0) == cudaSuccess);
  int64_t ns = 100000;
  void* args[] = {&ns};
  cudaKernelNodeParams kp{};
  kp.func = &kernel().stub;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(32);
  kp.kernelParams = args;
  cudaGraphNode_t n1, n2;
  REQUIRE(cudaGraphAddKernelNode(&n1, g, nullptr, 0, &kp) == cudaSuccess);
  REQUIRE(cudaGraphAddKernelNode(&n2, g, &n1, 1, &kp) == cudaSuccess);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
  take();
  REQUIRE(cudaGraphLaunch(exec, nullptr) == cudaSuccess);
  auto seen = take();
  check_traced(seen, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch",
               CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
  uint32_t correlation = seen.front().correlation;
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  std::vector<CUpti_ActivityKernel10> kernels;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& b : g_buffers) {
      CUpti_Activity* r = nullptr;
      while (cuptiActivityGetNextRecord(b.data(), b.size(), &r) == CUPTI_SUCCESS)
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
          kernels.push_back(*reinterpret_cast<CUpti_ActivityKernel10*>(r));
    }
  }
  std::vector<CUpti_ActivityKernel10> mine;
  for (auto& k : kernels)
    if (k.correlationId == correlation) mine.push_back(k);
  REQUIRE(mine.size() == 2);
  CHECK(mine[0].graphId != 0);
  CHECK(mine[0].graphId == mine[1].graphId);
  CHECK(mine[1].start >= mine[0].end);
  REQUIRE(cudaGraphExecDestroy(exec) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
}
