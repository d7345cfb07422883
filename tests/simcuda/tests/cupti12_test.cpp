// The simulated libcupti.so.12 behaves as CUDA 12.9's: it reports CUPTI_API_VERSION 28, has no
// cuptiSubscribe_v2, knows no CUDA 13 callback id (a <<<>>> launch arrives as cudaLaunchKernel, as
// a CUDA 12 program makes it), and writes CUDA 12's record structs (CUpti_ActivityKernel9).
// Compiled against CUPTI 12.9's headers and linked to that library only.
#include <catch2/catch.hpp>
#include <cupti.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <mutex>
#include <string>
#include <vector>

#include "sim_test_kernels.h"

static_assert(CUPTI_API_VERSION == 28, "cupti12_test.cpp is built against CUPTI 12.9's headers");

namespace {

struct Seen {
  CUpti_CallbackId cbid;
  std::string function;
};
std::mutex g_mu;
std::vector<Seen> g_enters;
std::vector<std::vector<uint8_t>> g_delivered;

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || d->callbackSite != CUPTI_API_ENTER) return;
  std::lock_guard<std::mutex> lock(g_mu);
  g_enters.push_back({cbid, d->functionName ? d->functionName : ""});
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 64 * 1024;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_delivered.emplace_back(buffer, buffer + valid);
  free(buffer);
}

simtest::TestKernel& kernel() {
  static simtest::TestKernel k;
  static bool once = (simtest::register_kernel(k, "_Z9cupti12_kPf"), true);
  (void)once;
  return k;
}

CUpti_SubscriberHandle g_subscriber;

}  // namespace

TEST_CASE("cuptiGetVersion reports CUPTI 12.9 Update 1's version", "[cupti12]") {
  uint32_t v = 0;
  REQUIRE(cuptiGetVersion(&v) == CUPTI_SUCCESS);
  CHECK(v == 28);
}

TEST_CASE("CUPTI 12 has cuptiSubscribe but no cuptiSubscribe_v2", "[cupti12]") {
  CHECK(dlsym(RTLD_DEFAULT, "cuptiSubscribe") != nullptr);
  CHECK(dlsym(RTLD_DEFAULT, "cuptiSubscribe_v2") == nullptr);
  REQUIRE(cuptiSubscribe(&g_subscriber, on_callback, nullptr) == CUPTI_SUCCESS);
  CUpti_SubscriberHandle other;
  CHECK(cuptiSubscribe(&other, on_callback, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
}

TEST_CASE("a CUDA 13 callback id cannot be enabled; a chevron launch arrives as cudaLaunchKernel", "[cupti12]") {
  // 505 is CUDA 13's __cudaLaunchKernel_v13000 (13.0 cupti_runtime_cbid.h); 12.9 ends at 487.
  CHECK(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, 505) == CUPTI_ERROR_INVALID_PARAMETER);
  REQUIRE(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  g_enters.clear();
  cudaKernel_t handle;
  REQUIRE(__cudaGetKernel(&handle, &kernel().stub) == cudaSuccess);
  int64_t ns = 1000;
  void* args[] = {&ns};
  REQUIRE(__cudaLaunchKernel(handle, dim3(1), dim3(1), args, 0, nullptr) == cudaSuccess);
  REQUIRE(simtest::launch(kernel(), 1000) == cudaSuccess);
  std::lock_guard<std::mutex> lock(g_mu);
  REQUIRE(g_enters.size() == 2);  // __cudaGetKernel (504) is a CUDA 13 call: CUPTI 12 never reports it
  CHECK(g_enters[0].cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  CHECK(g_enters[0].function == "cudaLaunchKernel");
  CHECK(g_enters[1].cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
}

TEST_CASE("activity records are CUPTI 12's structs", "[cupti12][activity]") {
  REQUIRE(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 4096) == cudaSuccess);
  static char host[4096];
  REQUIRE(simtest::launch(kernel(), 30000) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(simtest::launch(kernel(), 30000) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  std::lock_guard<std::mutex> lock(g_mu);
  int kernels = 0, copies = 0;
  for (auto& b : g_delivered) {
    CUpti_Activity* r = nullptr;
    uint8_t* previous = nullptr;
    size_t previous_size = 0;
    while (cuptiActivityGetNextRecord(b.data(), b.size(), &r) == CUPTI_SUCCESS) {
      auto* at = reinterpret_cast<uint8_t*>(r);
      if (previous) CHECK(size_t(at - previous) == previous_size);  // records packed at 12's sizes
      previous = at;
      if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        auto* k = reinterpret_cast<CUpti_ActivityKernel9*>(r);
        CHECK(std::string(k->name) == "_Z9cupti12_kPf");
        CHECK(k->end - k->start == 30000);
        previous_size = sizeof(CUpti_ActivityKernel9);
        ++kernels;
      } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(r);
        CHECK(m->bytes == sizeof host);
        CHECK(m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
        previous_size = sizeof(CUpti_ActivityMemcpy6);
        ++copies;
      } else {
        previous_size = 0;
        FAIL("unexpected record kind " << int(r->kind));
      }
    }
  }
  CHECK(kernels == 2);
  CHECK(copies == 1);
  CHECK(sizeof(CUpti_ActivityKernel9) == 208);  // CUDA 13's Kernel10 is 216
}
