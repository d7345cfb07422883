// The simulated CUPTI delivers what the real one does: callbacks with the CUDA 13 callback ids,
// names, params structs and correlation ids; activity records of the real struct types, through
// the client's buffers; one subscriber at a time. Test cases run in order: CUPTI state is per
// process, and the timestamp-callback case must come after the default-clock one.
#include <catch2/catch.hpp>
#include <cupti.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mutex>
#include <string>
#include <vector>

#include "sim_test_kernels.h"

namespace {

struct SeenCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  std::string function;
  std::string symbol;
  uint32_t correlation;
  uint64_t* correlation_data;
  const void* launch_func;  // params are valid only inside the callback: copy what is checked
  unsigned block_x;
  bool has_return;
};

std::mutex g_mu;
std::vector<SeenCallback> g_callbacks;
std::vector<std::vector<uint8_t>> g_delivered;  // copies of completed buffers
bool g_give_no_buffer = false;

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  const void* func = nullptr;
  unsigned block_x = 0;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(d->functionParams);
    func = p->func;
    block_x = p->blockDim.x;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_callbacks.push_back({domain, cbid, d->callbackSite, d->functionName ? d->functionName : "",
                         d->symbolName ? d->symbolName : "", d->correlationId, d->correlationData, func, block_x,
                         d->functionReturnValue != nullptr});
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  if (g_give_no_buffer) {
    *buffer = nullptr;
    *size = 0;
  } else {
    *size = 64 * 1024;
    *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  }
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_delivered.emplace_back(buffer, buffer + valid);
  free(buffer);
}

std::vector<CUpti_Activity*> records() {
  static std::vector<std::vector<uint8_t>> keep;
  std::vector<CUpti_Activity*> out;
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& b : g_delivered) {
    keep.push_back(b);
    auto& mine = keep.back();
    CUpti_Activity* r = nullptr;
    while (cuptiActivityGetNextRecord(mine.data(), mine.size(), &r) == CUPTI_SUCCESS) out.push_back(r);
  }
  g_delivered.clear();
  return out;
}

simtest::TestKernel& kernel() {
  static simtest::TestKernel k;
  static bool once = (simtest::register_kernel(k, "_Z8cupti_k1Pf"), true);
  (void)once;
  return k;
}

CUpti_SubscriberHandle g_subscriber;

uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t CUPTIAPI monotonic_timestamp() { return clock_ns(CLOCK_MONOTONIC); }

}  // namespace

TEST_CASE("cuptiGetVersion reports the version of the headers built with", "[cupti]") {
  uint32_t v = 0;
  REQUIRE(cuptiGetVersion(&v) == CUPTI_SUCCESS);
  CHECK(v == CUPTI_API_VERSION);
}

TEST_CASE("a subscriber gets runtime and nested driver callbacks of a launch with one correlation id", "[cupti]") {
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gapwatch-test";
  REQUIRE(cuptiSubscribe_v2(&g_subscriber, on_callback, nullptr, &params) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
  g_callbacks.clear();
  REQUIRE(simtest::launch(kernel(), 50000) == cudaSuccess);
  std::vector<SeenCallback> seen;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    seen = g_callbacks;
  }
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].domain == CUPTI_CB_DOMAIN_RUNTIME_API);
  CHECK(seen[0].cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  CHECK(seen[0].site == CUPTI_API_ENTER);
  CHECK(seen[0].function == "cudaLaunchKernel");
  CHECK(seen[0].symbol == "_Z8cupti_k1Pf");
  CHECK(!seen[0].has_return);
  CHECK(seen[0].launch_func == &kernel().stub);
  CHECK(seen[0].block_x == 32);
  CHECK(seen[1].domain == CUPTI_CB_DOMAIN_DRIVER_API);
  CHECK(seen[1].cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  CHECK(seen[1].site == CUPTI_API_ENTER);
  CHECK(seen[2].domain == CUPTI_CB_DOMAIN_DRIVER_API);
  CHECK(seen[2].site == CUPTI_API_EXIT);
  CHECK(seen[3].cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  CHECK(seen[3].site == CUPTI_API_EXIT);
  CHECK(seen[3].has_return);
  CHECK(seen[0].correlation == seen[3].correlation);
  CHECK(seen[1].correlation == seen[0].correlation);
  CHECK(seen[0].correlation_data == seen[3].correlation_data);  // ENTER -> EXIT scratch space
}

TEST_CASE("the CUDA 13 chevron launch and cudaLaunchKernelExC have their own callback ids", "[cupti]") {
  std::vector<CUpti_CallbackId> runtime_enters;
  g_callbacks.clear();
  cudaKernel_t handle;
  REQUIRE(__cudaGetKernel(&handle, &kernel().stub) == cudaSuccess);
  int64_t ns = 1000;
  void* args[] = {&ns};
  REQUIRE(__cudaLaunchKernel(handle, dim3(1), dim3(1), args, 0, nullptr) == cudaSuccess);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(1);
  REQUIRE(cudaLaunchKernelExC(&cfg, &kernel().stub, args) == cudaSuccess);
  for (auto& c : g_callbacks)
    if (c.domain == CUPTI_CB_DOMAIN_RUNTIME_API && c.site == CUPTI_API_ENTER) runtime_enters.push_back(c.cbid);
  CHECK(runtime_enters == std::vector<CUpti_CallbackId>{CUPTI_RUNTIME_TRACE_CBID___cudaGetKernel_v13000,
                                                        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060});
}

TEST_CASE("a callback disabled by id is not delivered", "[cupti]") {
  REQUIRE(cuptiEnableDomain(0, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableCallback(0, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == CUPTI_SUCCESS);
  g_callbacks.clear();
  REQUIRE(simtest::launch(kernel(), 1000) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(g_callbacks.size() == 2);
  CHECK(g_callbacks[0].cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
}

TEST_CASE("a second subscriber is refused and told who holds CUPTI", "[cupti]") {
  CUpti_SubscriberHandle other;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "second";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder;
  CHECK(cuptiSubscribe_v2(&other, on_callback, nullptr, &params) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(std::string(holder) == "gapwatch-test");
  CHECK(cuptiSubscribe(&other, on_callback, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  const char* text = nullptr;
  REQUIRE(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &text) == CUPTI_SUCCESS);
  CHECK(std::string(text) == "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
}

TEST_CASE("activity records carry the real kinds and fields, in CLOCK_REALTIME by default", "[cupti][activity]") {
  REQUIRE(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS);
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    REQUIRE(cuptiActivityEnable(k) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  g_callbacks.clear();
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  void *dev, *pinned;
  REQUIRE(cudaMalloc(&dev, 1 << 20) == cudaSuccess);
  REQUIRE(cudaMallocHost(&pinned, 1 << 20) == cudaSuccess);
  std::vector<char> pageable(1 << 20);
  REQUIRE(simtest::launch(kernel(), 200000, s) == cudaSuccess);
  uint32_t launch_correlation = g_callbacks.back().correlation;
  REQUIRE(cudaMemcpyAsync(dev, pinned, 1 << 20, cudaMemcpyHostToDevice, s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(dev, pageable.data(), 1 << 20, cudaMemcpyHostToDevice, s) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(dev, 0, 1 << 20, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  uint64_t realtime_now = clock_ns(CLOCK_REALTIME);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  int kernels = 0, pinned_copies = 0, pageable_copies = 0, memsets = 0, stream_syncs = 0;
  for (CUpti_Activity* r : records()) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
      if (k->correlationId != launch_correlation) continue;
      ++kernels;
      CHECK(k->end - k->start == 200000);
      CHECK(std::string(k->name) == "_Z8cupti_k1Pf");
      CHECK(k->streamId >= 13);
      // CUPTI's default host clock on Linux is CLOCK_REALTIME. Timing: the kernel ended before
      // the stream sync returned, and realtime_now was read right after, so only the 5 s bound
      // depends on speed: a machine would have to take 5 s between a sync's return and the next
      // line (a CLOCK_MONOTONIC record would be ~10^9 s off instead).
      CHECK(k->end <= realtime_now + 1000000);
      CHECK(k->end + 5000000000ull > realtime_now);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(r);
      CHECK(m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
      CHECK(m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
      CHECK((m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0);
      CHECK(m->bytes == (1u << 20));
      if (m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED) ++pinned_copies;
      if (m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) ++pageable_copies;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(r);
      CHECK(m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
      ++memsets;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) {
      auto* y = reinterpret_cast<CUpti_ActivitySynchronization2*>(r);
      if (y->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) {
        ++stream_syncs;
        CHECK(y->end >= y->start);
        CHECK(y->cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE);
      }
    }
  }
  CHECK(kernels == 1);
  CHECK(pinned_copies == 1);
  CHECK(pageable_copies == 1);
  CHECK(memsets == 1);
  CHECK(stream_syncs == 1);
}

TEST_CASE("records reach the client only when flushed or when a buffer fills", "[cupti][activity]") {
  records();
  REQUIRE(simtest::launch(kernel(), 1000) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  // Timing: no flush period is set, so nothing delivers a partial buffer by time; the pause only
  // gives a wrong delivery the chance to show. A slower machine cannot make records appear.
  struct timespec pause{0, 20000000};
  nanosleep(&pause, nullptr);
  CHECK(records().empty());  // finished, but in CUPTI's buffer until a flush
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(!records().empty());
}

TEST_CASE("the flush period hands back full buffers only", "[cupti][activity]") {
  // Real CUPTI's periodic flush "can return only those activity buffers which are full"
  // (cupti_activity.h, CUDA 13.0); a simulator that returned partial ones on the period hid that
  // a light job streams nothing (issue 9).
  records();
  REQUIRE(cuptiActivityFlushPeriod(1) == CUPTI_SUCCESS);
  REQUIRE(simtest::launch(kernel(), 1000) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  // Timing: 50 periods; a slower machine cannot make a partial buffer come back.
  struct timespec pause{0, 50000000};
  nanosleep(&pause, nullptr);
  CHECK(records().empty());
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(!records().empty());
  REQUIRE(cuptiActivityFlushPeriod(0) == CUPTI_SUCCESS);
}

TEST_CASE("a forced flush hands back work still in flight with zero times, once", "[cupti][activity]") {
  records();
  // Timing: 3 s of device time on a stream of its own, far longer than the two flushes that
  // follow take on any machine; later cases' device syncs wait for it.
  cudaStream_t side = nullptr;
  REQUIRE(cudaStreamCreate(&side) == cudaSuccess);
  REQUIRE(simtest::launch(kernel(), int64_t(3) * 1000000000, side) == cudaSuccess);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(records().empty());  // not finished: flag 0 leaves it
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  int in_flight = 0;
  for (CUpti_Activity* r : records()) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
    ++in_flight;
    CHECK(k->start == 0);
    CHECK(k->end == 0);
    CHECK(k->correlationId != 0);
  }
  CHECK(in_flight == 1);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(records().empty());  // handed out once
}

TEST_CASE("records that find no buffer are dropped and counted", "[cupti][activity]") {
  size_t before = 0, after = 0;
  REQUIRE(cuptiActivityGetNumDroppedRecords(nullptr, 0, &before) == CUPTI_SUCCESS);
  g_give_no_buffer = true;
  for (int i = 0; i < 5; ++i) REQUIRE(simtest::launch(kernel(), 1000) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  g_give_no_buffer = false;
  REQUIRE(cuptiActivityGetNumDroppedRecords(nullptr, 0, &after) == CUPTI_SUCCESS);
  CHECK(after - before >= 5);
}

TEST_CASE("with a timestamp callback, records are in the callback's clock", "[cupti][activity]") {
  REQUIRE(cuptiActivityRegisterTimestampCallback(monotonic_timestamp) == CUPTI_SUCCESS);
  records();
  uint64_t before = clock_ns(CLOCK_MONOTONIC);
  REQUIRE(simtest::launch(kernel(), 100000) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  uint64_t after = clock_ns(CLOCK_MONOTONIC);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  int kernels = 0;
  for (CUpti_Activity* r : records()) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
    ++kernels;
    CHECK(k->start >= before);
    CHECK(k->end <= after + 1000);  // conversion rounding only
  }
  CHECK(kernels == 1);
  uint64_t ts = 0;
  REQUIRE(cuptiGetTimestamp(&ts) == CUPTI_SUCCESS);
  CHECK(ts >= after);
  CHECK(ts < after + 1000000000ull);  // a flush and a loop over a few records: far under 1 s anywhere
}

TEST_CASE("after cuptiFinalize nothing is delivered and a new subscriber is accepted", "[cupti]") {
  REQUIRE(cuptiFinalize() == CUPTI_SUCCESS);
  g_callbacks.clear();
  REQUIRE(simtest::launch(kernel(), 1000) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(g_callbacks.empty());
  CUpti_SubscriberHandle again;
  CHECK(cuptiSubscribe(&again, on_callback, nullptr) == CUPTI_SUCCESS);
  CHECK(cuptiUnsubscribe(again) == CUPTI_SUCCESS);
}

TEST_CASE("a tool that already holds CUPTI makes every subscribe fail with its name", "[cupti]") {
  setenv("SIMCUDA_CUPTI_HELD_BY", "Nsight Systems", 1);
  CUpti_SubscriberHandle h;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder;
  CHECK(cuptiSubscribe_v2(&h, on_callback, nullptr, &params) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(std::string(holder) == "Nsight Systems");
  unsetenv("SIMCUDA_CUPTI_HELD_BY");
}
