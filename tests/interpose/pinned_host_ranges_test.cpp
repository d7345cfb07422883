// The table of pinned host ranges (interpose/pinned_host_ranges.h) and the async copy
// classification that reads it (interpose/cuda_api_map.cpp): which copies are marked as only
// enqueueing (no Python stack walk), from the params CUPTI passes at the calls' exits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <random>
#include <chrono>
#include <thread>
#include <vector>

#include <cupti.h>

#include "cuda_api_map.h"
#include "pinned_host_ranges.h"
#include "raw_event.h"

namespace gapwatch {
namespace {

char* at(uintptr_t a) { return reinterpret_cast<char*>(a); }

// The flag classification gives a cudaMemcpyAsync.
bool enqueues_only(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  cudaMemcpyAsync_v3020_params p{dst, src, count, kind, nullptr};
  ApiCallRecord e{};
  REQUIRE(classify_api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &p, &e));
  CHECK(e.kind == wire::ApiKind::kMemcpyAsync);
  CHECK(e.bytes == count);
  return (e.flags & kFlagEnqueuesOnly) != 0;
}

TEST_CASE("a range is pinned from its add to its remove, whole copies inside it only", "[pinned]") {
  PinnedHostRanges& t = pinned_host_ranges();
  t.clear();
  REQUIRE(t.add(at(0x10000), 4096));
  CHECK(t.pinned(at(0x10000), 4096));
  CHECK(t.pinned(at(0x10800), 16));
  CHECK(t.pinned(at(0x10fff), 0));
  CHECK_FALSE(t.pinned(at(0x10ff0), 32));  // runs past the end
  CHECK_FALSE(t.pinned(at(0xffff), 1));
  CHECK_FALSE(t.pinned(at(0x11000), 0));
  CHECK_FALSE(t.pinned(nullptr, 0));
  t.remove(at(0x10800));  // not a base: nothing
  CHECK(t.pinned(at(0x10000), 1));
  t.remove(at(0x10000));
  CHECK_FALSE(t.pinned(at(0x10000), 1));
  CHECK(t.size() == 0);
}

TEST_CASE("removal keeps the others, and a full table refuses (unknown: not pinned)", "[pinned]") {
  PinnedHostRanges& t = pinned_host_ranges();
  t.clear();
  const uint64_t drops = t.full_drops();
  for (uintptr_t i = 0; i < PinnedHostRanges::kCapacity; ++i) REQUIRE(t.add(at(0x100000 + i * 0x1000), 0x800));
  CHECK_FALSE(t.add(at(0x90000000), 64));
  CHECK(t.full_drops() == drops + 1);
  CHECK_FALSE(t.pinned(at(0x90000000), 1));
  t.remove(at(0x100000 + 5 * 0x1000));
  CHECK_FALSE(t.pinned(at(0x100000 + 5 * 0x1000), 1));
  for (uintptr_t i = 0; i < PinnedHostRanges::kCapacity; ++i)
    if (i != 5) REQUIRE(t.pinned(at(0x100000 + i * 0x1000 + 0x7ff), 1));
  CHECK(t.add(at(0x90000000), 64));  // room again
  CHECK(t.pinned(at(0x90000000), 64));
  t.clear();
}

TEST_CASE("ranges pinned in any order and unpinned in any order are each found, and only they", "[pinned]") {
  PinnedHostRanges& t = pinned_host_ranges();
  t.clear();
  std::vector<uintptr_t> bases;
  for (uintptr_t i = 0; i < 600; ++i) bases.push_back(0x200000 + i * 0x3000);
  std::mt19937 rng(36);
  std::shuffle(bases.begin(), bases.end(), rng);
  for (uintptr_t b : bases) REQUIRE(t.add(at(b), 0x2000));
  std::shuffle(bases.begin(), bases.end(), rng);
  std::vector<uintptr_t> gone(bases.begin(), bases.begin() + 300), kept(bases.begin() + 300, bases.end());
  for (uintptr_t b : gone) t.remove(at(b));
  CHECK(t.size() == kept.size());
  for (uintptr_t b : kept) {
    REQUIRE(t.pinned(at(b), 0x2000));
    REQUIRE(t.pinned(at(b + 0x1fff), 1));
    REQUIRE_FALSE(t.pinned(at(b + 0x2000), 1));  // the gap after it
    REQUIRE_FALSE(t.pinned(at(b - 1), 1));
  }
  for (uintptr_t b : gone) REQUIRE_FALSE(t.pinned(at(b + 0x10), 1));
  t.clear();
}

TEST_CASE("lookups while other threads pin and unpin never see a range that is not there", "[pinned]") {
  PinnedHostRanges& t = pinned_host_ranges();
  t.clear();
  REQUIRE(t.add(at(0x500000), 0x1000));  // stays pinned throughout
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&t, &stop, w] {
      const uintptr_t base = 0x1000000 + uintptr_t(w) * 0x1000000;
      while (!stop.load(std::memory_order_relaxed)) {
        for (uintptr_t i = 0; i < 64; ++i) t.add(at(base + i * 0x10000), 0x100);
        for (uintptr_t i = 0; i < 64; ++i) t.remove(at(base + i * 0x10000));
        // A pause between rounds, as real pinning is rare: without it two writers on a busy
        // machine kept a change in progress through every retry of every lookup (CI under
        // stress-ng: no lookup of the fixed range succeeded in 200,000), which is allowed ("not
        // known") but leaves the check below nothing to see.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  uint64_t wrong = 0, known = 0;
  for (int i = 0; i < 200000; ++i) {
    // Between the churned ranges: never pinned. The fixed range: pinned unless the writers kept the
    // counter busy through every retry (then "not known", which is allowed).
    if (t.pinned(at(0x1000000 + 0x8000), 16)) ++wrong;
    if (t.pinned(at(0x500800), 16)) ++known;
  }
  stop = true;
  for (auto& w : writers) w.join();
  CHECK(wrong == 0);
  CHECK(known > 0);
  t.clear();
}

TEST_CASE("async copies only enqueue device to device or with their host side pinned", "[pinned]") {
  PinnedHostRanges& t = pinned_host_ranges();
  t.clear();
  char* device = at(0x7000000000);
  char* pinned = nullptr;
  char* pageable = at(0x600000);
  char* registered = at(0x700000);
  // cudaHostAlloc's exit: the pointer comes back through the params' out pointer.
  void* allocated = at(0x800000);
  cudaHostAlloc_v3020_params alloc{&allocated, 4096, 0};
  note_host_memory(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, &alloc, 0);
  pinned = static_cast<char*>(allocated);
  cudaHostRegister_v4000_params reg{registered, 8192, 0};
  note_host_memory(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, &reg, 0);
  // A failed call pins nothing.
  cudaHostRegister_v4000_params failed{pageable, 4096, 0};
  note_host_memory(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, &failed, 712);

  CHECK(enqueues_only(device + 64, device, 100, cudaMemcpyDeviceToDevice));
  CHECK(enqueues_only(device, pinned, 100, cudaMemcpyHostToDevice));
  CHECK(enqueues_only(pinned + 100, device, 100, cudaMemcpyDeviceToHost));
  CHECK(enqueues_only(registered + 4096, device, 4096, cudaMemcpyDeviceToHost));
  CHECK_FALSE(enqueues_only(registered + 4096, device, 4097, cudaMemcpyDeviceToHost));  // past its end
  CHECK_FALSE(enqueues_only(pageable, device, 100, cudaMemcpyDeviceToHost));
  CHECK_FALSE(enqueues_only(device, pageable, 100, cudaMemcpyHostToDevice));
  CHECK_FALSE(enqueues_only(pinned, registered, 100, cudaMemcpyHostToHost));
  // The direction left to the pointers: one side known pinned, the other taken for the device.
  CHECK(enqueues_only(device, pinned, 100, cudaMemcpyDefault));
  CHECK(enqueues_only(pinned, device, 100, cudaMemcpyDefault));
  CHECK_FALSE(enqueues_only(device, pageable, 100, cudaMemcpyDefault));
  CHECK_FALSE(enqueues_only(pinned, registered, 100, cudaMemcpyDefault));  // host to host

  // The driver's calls, and its allocation.
  void* driver_pinned = at(0x900000);
  cuMemAllocHost_v2_params dalloc{&driver_pinned, 4096};
  note_host_memory(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &dalloc, 0);
  auto driver_flag = [](CUpti_CallbackId cbid, const void* params) {
    ApiCallRecord e{};
    REQUIRE(classify_api_call(CUPTI_CB_DOMAIN_DRIVER_API, cbid, params, &e));
    CHECK(e.bytes == 64);
    return (e.flags & kFlagEnqueuesOnly) != 0;
  };
  const CUdeviceptr dptr = CUdeviceptr(reinterpret_cast<uintptr_t>(device));
  cuMemcpyDtoHAsync_v2_params d2h_pinned{driver_pinned, dptr, 64, nullptr};
  cuMemcpyDtoHAsync_v2_params d2h_pageable{pageable, dptr, 64, nullptr};
  cuMemcpyHtoDAsync_v2_params h2d_pinned{dptr, driver_pinned, 64, nullptr};
  cuMemcpyDtoDAsync_v2_params d2d{dptr, dptr + 128, 64, nullptr};
  cuMemcpyAsync_params any_pinned{CUdeviceptr(reinterpret_cast<uintptr_t>(driver_pinned)), dptr, 64, nullptr};
  cuMemcpyAsync_params any_pageable{CUdeviceptr(reinterpret_cast<uintptr_t>(pageable)), dptr, 64, nullptr};
  CHECK(driver_flag(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, &d2h_pinned));
  CHECK_FALSE(driver_flag(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, &d2h_pageable));
  CHECK(driver_flag(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &h2d_pinned));
  CHECK(driver_flag(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, &d2d));
  CHECK(driver_flag(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &any_pinned));
  CHECK_FALSE(driver_flag(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &any_pageable));

  // Freed and unregistered: pageable again.
  cudaFreeHost_v3020_params free_params{pinned};
  note_host_memory(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, &free_params, 0);
  cudaHostUnregister_v4000_params unreg{registered};
  note_host_memory(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, &unreg, 0);
  cuMemFreeHost_params dfree{driver_pinned};
  note_host_memory(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &dfree, 0);
  CHECK_FALSE(enqueues_only(pinned, device, 100, cudaMemcpyDeviceToHost));
  CHECK_FALSE(enqueues_only(registered, device, 100, cudaMemcpyDeviceToHost));
  CHECK_FALSE(driver_flag(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, &d2h_pinned));
  CHECK(t.size() == 0);

  // Launches and syncs never carry the flag.
  ApiCallRecord launch{};
  REQUIRE(classify_api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, nullptr, &launch));
  CHECK(launch.flags == 0);
}

}  // namespace
}  // namespace gapwatch
