// The NCCL communicator cache (interpose/nccl_comm_cache.h): lookups stay short and new
// communicators stay cached however many communicators were created and destroyed before (issue
// 21, item 9).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "nccl_comm_cache.h"

using gapwatch::NcclCommCache;

namespace {

// Communicator handles as malloc gives them: distinct, 16-byte aligned, a page or so apart.
uint64_t handle(uint64_t i) { return 0x7f0000000000ull + i * 0x1230; }

constexpr size_t kSlots = 1024, kProbe = 16;

}  // namespace

TEST_CASE("after 2,000 communicator lifetimes a new one is cached and found in a bounded probe") {
  static NcclCommCache<kSlots, kProbe> cache;
  for (uint64_t i = 0; i < 2000; ++i) {
    REQUIRE(cache.remember(handle(i)));
    REQUIRE(cache.known(handle(i)));
    cache.forget(handle(i));
    REQUIRE_FALSE(cache.known(handle(i)));
  }
  const uint64_t fresh = handle(5000);
  size_t probes = 0;
  CHECK_FALSE(cache.known(fresh, &probes));
  CHECK(probes <= kProbe);
  CHECK(cache.remember(fresh));
  CHECK(cache.known(fresh, &probes));
  CHECK(probes <= kProbe);
}

TEST_CASE("a communicator at a destroyed one's address is new") {
  static NcclCommCache<kSlots, kProbe> cache;
  for (int round = 0; round < 3000; ++round) {
    REQUIRE_FALSE(cache.known(handle(1)));
    REQUIRE(cache.remember(handle(1)));
    REQUIRE(cache.known(handle(1)));
    cache.forget(handle(1));
  }
}

TEST_CASE("live communicators stay known while others come and go") {
  static NcclCommCache<kSlots, kProbe> cache;
  for (uint64_t i = 0; i < 64; ++i) REQUIRE(cache.remember(handle(100000 + i)));
  for (uint64_t i = 0; i < 5000; ++i) {
    cache.remember(handle(i));
    cache.forget(handle(i));
  }
  for (uint64_t i = 0; i < 64; ++i) {
    size_t probes = 0;
    CHECK(cache.known(handle(100000 + i), &probes));
    CHECK(probes <= kProbe);
  }
}

TEST_CASE("threads churning communicators at once") {
  static NcclCommCache<kSlots, kProbe> cache;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const uint64_t live = handle(1000000 + t);
      cache.remember(live);
      for (uint64_t i = 0; i < 20000; ++i) {
        const uint64_t h = handle(t * 100000 + i);
        cache.remember(h);
        if (!cache.known(h)) ++wrong;
        cache.forget(h);
        if (cache.known(h)) ++wrong;
        if (!cache.known(live)) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong.load() == 0);
}
