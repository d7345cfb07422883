// tests/unit/analysis_kernel_stats_test.cpp: the kernels table and the longest gaps' neighbours,
// on event streams computed by hand; and the diagnosis of a slow launch call against many short
// launch gaps, through the whole engine. Times are microseconds (us()).

#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "analysis/diagnosis.h"
#include "analysis/kernel_stats.h"

#include <algorithm>
#include <string>

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

constexpr uint32_t kMain = 100;
constexpr uint32_t kGemm = 1, kAdd = 2, kCopyKernel = 3;
constexpr uint32_t kLaunchName = 11, kMallocName = 12;

DeviceActivityEvent named(DeviceActivityEvent e, uint32_t name_id) {
  e.name_id = name_id;
  return e;
}

ApiCallEvent namedCall(ApiCallEvent e, uint32_t api_name_id) {
  e.api_name_id = api_name_id;
  return e;
}

EngineFeed& names(EngineFeed& feed) {
  return feed.name(v1::STRING_KIND_KERNEL_NAME, kGemm, "void sgemm_128x64_nn<float, 4>(float const*, float*, int)")
      .name(v1::STRING_KIND_KERNEL_NAME, kAdd, "void at::native::add_kernel<float>(float*, float const*)")
      .name(v1::STRING_KIND_KERNEL_NAME, kCopyKernel, "copy_kernel")
      .name(v1::STRING_KIND_API_NAME, kLaunchName, "cudaLaunchKernel")
      .name(v1::STRING_KIND_API_NAME, kMallocName, "cudaMalloc");
}

const KernelStats& row(const std::vector<KernelStats>& rows, const std::string& name) {
  for (const KernelStats& k : rows) {
    if (k.name == name) return k;
  }
  FAIL("no row " << name);
  static KernelStats none;
  return none;
}

}  // namespace

TEST_CASE("the kernels table ranks names by device time, with count, share of busy, mean and median") {
  // gemm: 3 runs of 100 us; add: 10 runs of 5 us, each launched by a 10 us call (short on both
  // counts); copy_kernel: 2 runs of 40 and 60 us. Kernels run back to back from 0 (no overlap).
  AnalysisOptions options;
  options.top_n = 2;
  EngineFeed feed(options);
  names(feed);
  uint64_t t = 0, id = 1;
  for (int i = 0; i < 3; ++i, t += us(100), ++id) feed.add(named(kernelAt(t, t + us(100), 0), kGemm));
  for (int i = 0; i < 10; ++i, t += us(5), ++id) {
    feed.add(namedCall(launch(kMain, t - std::min(t, us(10)), t, 1000 + id), kLaunchName));
    feed.add(named(kernelAt(t, t + us(5), 1000 + id), kAdd));
  }
  feed.add(named(kernelAt(t, t + us(40), 0), kCopyKernel));
  feed.add(named(kernelAt(t + us(40), t + us(100), 0), kCopyKernel));
  const ProcessAnalysis a = feed.run();
  const KernelTable& k = a.kernels;
  CHECK(k.kernels == 15);
  CHECK(k.distinct == 3);
  CHECK(k.total_ns == us(300 + 50 + 100));
  CHECK(k.busy_ns == us(450));
  REQUIRE(k.top_by_time.size() == 2);  // top_n
  CHECK(k.top_by_time[0].name == "void sgemm_128x64_nn<float, 4>(float const*, float*, int)");
  CHECK(k.top_by_time[0].count == 3);
  CHECK(k.top_by_time[0].total_ns == us(300));
  CHECK(k.top_by_time[0].median_ns == us(100));  // all equal: exact
  CHECK(k.top_by_time[0].busy_share == Approx(300.0 / 450.0));
  CHECK_FALSE(k.top_by_time[0].short_kernel);
  CHECK(k.top_by_time[1].name == "copy_kernel");
  CHECK(k.top_by_time[1].meanNs() == us(50));
  CHECK(k.top_by_time[1].median_ns >= us(40));
  CHECK(k.top_by_time[1].median_ns <= us(41));  // the lower run's bucket, within 2 %
  REQUIRE(k.short_by_count.size() == 1);
  const KernelStats& add = row(k.short_by_count, "void at::native::add_kernel<float>(float*, float const*)");
  CHECK(add.count == 10);
  CHECK(add.under_20us == 10);
  CHECK(add.shorter_than_launch == 10);
  CHECK(add.short_kernel);
  CHECK(add.median_ns == us(5));
}

TEST_CASE("kernel names shorten to what a line can hold") {
  CHECK(shortKernelName("void sgemm_128x64_nn<float, 4>(float const*, float*, int)") == "sgemm_128x64_nn<float, 4>");
  // Instances of one kernel stay apart by their first-level template arguments.
  CHECK(shortKernelName("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<long>, "
                        "at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<long>)", 100) ==
        "vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<...>, Array<...> >");
  CHECK(shortKernelName("void at::native::(anonymous namespace)::k<int>(int)") ==
        "k<int>");
  CHECK(shortKernelName("copy_kernel") == "copy_kernel");
  CHECK(shortKernelName("_Z19vectorized_add_bf16PKfS0_Pf") == "vectorized_add_bf16");
  CHECK(shortKernelName(std::string(100, 'x'), 20) == std::string(17, 'x') + "...");
}

TEST_CASE("the compact histogram's median is within 2 % and its buckets stay few") {
  CompactDurations d;
  for (uint64_t v = 1; v <= 1001; ++v) d.add(us(v));
  const uint64_t m = d.median();
  CHECK(m >= us(501) * 98 / 100);
  CHECK(m <= us(501) * 102 / 100);
  CHECK(d.buckets() < 200);  // 1001 distinct values, under 10 powers of two of 32 buckets
  for (uint64_t ns : {uint64_t{0}, uint64_t{31}, uint64_t{32}, uint64_t{1000}, uint64_t{123456789}}) {
    const uint32_t b = CompactDurations::bucketOf(ns);
    CHECK(CompactDurations::lowerOf(b) <= ns);
    CHECK(ns < CompactDurations::upperOf(b));
  }
}

TEST_CASE("a longest gap names the work on either side and the launching thread's call") {
  // gemm [0, 100); the thread sits in a 2 ms launch [150, 2150) of add, which runs at 2200.
  EngineFeed feed;
  names(feed);
  feed.add(namedCall(launch(kMain, us(0), us(5), 1), kLaunchName))
      .add(namedCall(launch(kMain, us(150), us(2150), 2), kLaunchName))
      .add(named(kernelAt(us(0), us(100), 1), kGemm))
      .add(named(kernelAt(us(2200), us(2210), 2), kAdd));
  const ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.size() == 1);
  REQUIRE(a.devices[0].longest_gaps.size() == 1);
  const IdleGap& gap = a.devices[0].longest_gaps[0];
  CHECK(gap.before.kind == v1::ACTIVITY_KIND_KERNEL);
  CHECK(gap.before.name == "void sgemm_128x64_nn<float, 4>(float const*, float*, int)");
  CHECK(gap.before.end_ns == us(100));
  CHECK(gap.after.name == "void at::native::add_kernel<float>(float*, float const*)");
  CHECK(gap.after.start_ns == us(2200));
  REQUIRE(gap.call.known);
  CHECK(gap.call.api_name == "cudaLaunchKernel");
  CHECK(gap.call.thread_id == kMain);
  CHECK(gap.call.exit_ns - gap.call.enter_ns == us(2000));
  CHECK(gap.call.in_gap_ns == us(2000));
  CHECK(gapPlace(gap) == "thread 100 in a 2.00 ms cudaLaunchKernel (2.00 ms of the gap); after sgemm_128x64_nn<float, 4>; "
                         "before add_kernel<float>");
  // The 2 ms in the launch call is launch_overhead by cause, but a long gap: not per-kernel overhead.
  CHECK(a.devices[0].launch_overhead_long_gaps_ns == us(2000));
  CHECK(a.devices[0].launch_overhead_short_gaps == 0);
}

TEST_CASE("a gap the thread spent in a malloc, then in the launch, names both calls") {
  EngineFeed feed;
  names(feed);
  feed.add(namedCall(launch(kMain, us(0), us(5), 1), kLaunchName))
      .add(namedCall(call(v1::API_KIND_MALLOC, kMain, us(150), us(3150)), kMallocName))
      .add(namedCall(launch(kMain, us(3150), us(5150), 2), kLaunchName))
      .add(named(kernelAt(us(0), us(100), 1), kGemm))
      .add(named(kernelAt(us(5200), us(5210), 2), kAdd));
  const ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.at(0).longest_gaps.size() == 1);
  const IdleGap& gap = a.devices[0].longest_gaps[0];
  CHECK(gap.call.api_name == "cudaMalloc");
  CHECK(gap.queued_by.api_name == "cudaLaunchKernel");
  CHECK(gap.queued_by.in_gap_ns == us(2000));
  CHECK(gapPlace(gap) ==
        "thread 100 in a 3.00 ms cudaMalloc (3.00 ms of the gap), then a 2.00 ms cudaLaunchKernel (2.00 ms of the gap); "
        "after sgemm_128x64_nn<float, 4>; before add_kernel<float>");
}

TEST_CASE("a copy at a gap's edge is named by direction and size") {
  EngineFeed feed;
  names(feed);
  DeviceActivityEvent copy = copyAt(us(0), us(10), 1, v1::MEMORY_KIND_PAGEABLE, v1::COPY_KIND_D2H);
  copy.bytes = 4;
  feed.add(call(v1::API_KIND_MEMCPY_ASYNC, kMain, us(0), us(12), 1))
      .add(namedCall(launch(kMain, us(100), us(105), 2), kLaunchName))
      .add(copy)
      .add(named(kernelAt(us(110), us(120), 2), kGemm));
  const ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.at(0).longest_gaps.size() == 1);
  CHECK(a.devices[0].longest_gaps[0].before.name == "memcpy DtoH 4 B");
}

TEST_CASE("one slow first launch of a kernel is a one-time first pass, not launch overhead") {
  // alexnet_inference in small: a few short kernels, then one 300 ms cudaLaunchKernel (a module
  // load) before the first run of the next kernel. All the idle is the thread inside that call.
  EngineFeed feed;
  names(feed);
  uint64_t t = 0, id = 1;
  for (int i = 0; i < 5; ++i, t += us(20), ++id) {
    feed.add(namedCall(launch(kMain, t, t + us(5), id), kLaunchName)).add(named(kernelAt(t + us(6), t + us(16), id), kAdd));
  }
  feed.add(namedCall(launch(kMain, t, t + ms(300), id), kLaunchName))
      .add(named(kernelAt(t + ms(300) + us(2), t + ms(300) + us(50), id), kGemm));
  ProcessAnalysis a = feed.run();
  diagnose(a, AnalysisOptions{});
  const auto has = [&](const char* id_) {
    return std::any_of(a.findings.begin(), a.findings.end(), [&](const Finding& f) { return f.id == id_; });
  };
  CHECK_FALSE(has(kFindingLaunchOverhead));
  // Nothing after the call is long enough to be a steady state: the window is one first pass.
  REQUIRE(a.findings.size() == 1);
  const Finding& f = a.findings.front();
  CHECK(f.id == kFindingFirstPass);
  CHECK(f.title == "in the first pass: one-time set-up (lazy kernel loading)");
  CHECK(f.fix.find("CUDA_MODULE_LOADING=EAGER") != std::string::npos);
  REQUIRE(a.devices[0].first_pass);
  CHECK(a.devices[0].first_pass->window_end_ns == a.devices[0].window_end_ns);
  CHECK(verdict(a).find("all of it in a first pass that does not settle within the window") != std::string::npos);
}

TEST_CASE("a slow launch of a kernel that ran before is no warm-up") {
  // The same 300 ms launch call, of a kernel already launched: no evidence of first-time work (a
  // preempted thread, a full launch queue), so nothing calls it warm-up.
  EngineFeed feed;
  names(feed);
  uint64_t t = 0, id = 1;
  for (int i = 0; i < 5; ++i, t += us(20), ++id) {
    feed.add(namedCall(launch(kMain, t, t + us(5), id), kLaunchName)).add(named(kernelAt(t + us(6), t + us(16), id), kGemm));
  }
  feed.add(namedCall(launch(kMain, t, t + ms(300), id), kLaunchName))
      .add(named(kernelAt(t + ms(300) + us(2), t + ms(300) + us(50), id), kGemm));
  ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.size() == 1);
  CHECK(a.devices[0].warmup_by_cause_ns == std::array<uint64_t, kIdleCauseCount>{});
  diagnose(a, AnalysisOptions{});
  for (const Finding& f : a.findings) CHECK(f.id != kFindingWarmup);
}

TEST_CASE("many short gaps while the host launches are launch overhead, and name the short kernels") {
  // 200 kernels of 5 us, each launched 15 us after the previous one ended: 200 gaps of ~10 us
  // (under the 30 us threshold), the thread in no call for most of each.
  EngineFeed feed;
  names(feed);
  uint64_t t = 0;
  for (uint64_t id = 1; id <= 200; ++id) {
    feed.add(namedCall(launch(kMain, t + us(5), t + us(13), id), kLaunchName))
        .add(named(kernelAt(t + us(15), t + us(20), id), kAdd));
    t += us(20);
  }
  ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.size() == 1);
  CHECK(a.devices[0].launch_overhead_short_gaps == 199);
  CHECK(a.devices[0].launch_overhead_long_gaps_ns == 0);
  diagnose(a, AnalysisOptions{});
  REQUIRE_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  CHECK(f.id == kFindingLaunchOverhead);
  bool names_kernel = false, states_rule = false;
  for (const auto& [name, value] : f.evidence) {
    if (name == "short kernels, most frequent" && value.find("add_kernel<float> x200") == 0) names_kernel = true;
    if (name == "from many short gaps" && value.find("199 gaps under 1.02 ms") == 0) states_rule = true;
  }
  CHECK(names_kernel);
  CHECK(states_rule);
}

TEST_CASE("a gap of host work names the launch that ended it, not a short call inside it") {
  IdleGap gap;
  gap.start_ns = 0;
  gap.end_ns = ms(90);
  gap.call = {true, 0, "cudaMemcpyAsync", 7, ms(50), ms(50) + us(7), us(7), 0, ""};
  gap.queued_by = {true, 0, "cudaLaunchKernel", 7, ms(90) - us(5), ms(90) - us(1), us(4), 0, ""};
  CHECK(gapPlace(gap) == "thread 7 mostly outside CUDA calls, then a 4.00 us cudaLaunchKernel");
}

TEST_CASE("a dependency gap names the call that queued the work before it, not the thread's later calls") {
  // add was launched at [10, 15) but waits for gemm's stream; the thread makes a 50 us malloc in
  // the gap, which held nothing.
  EngineFeed feed;
  names(feed);
  feed.add(namedCall(launch(kMain, us(0), us(5), 1), kLaunchName))
      .add(namedCall(launch(kMain, us(10), us(15), 2, 13), kLaunchName))
      .add(namedCall(call(v1::API_KIND_MALLOC, kMain, us(200), us(250)), kMallocName))
      .add(named(kernelAt(us(20), us(100), 1), kGemm))
      .add(named(kernelAt(us(300), us(310), 2, 13), kAdd));
  const ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.at(0).longest_gaps.size() == 1);
  const IdleGap& gap = a.devices[0].longest_gaps[0];
  CHECK(gap.by_cause_ns[static_cast<std::size_t>(IdleCause::kDependency)] == us(200));
  CHECK(gap.call.api_name == "cudaLaunchKernel");
  CHECK(gap.call.in_gap_ns == 0);
  CHECK(gapPlace(gap) == "thread 100 had returned from a 5.00 us cudaLaunchKernel; after sgemm_128x64_nn<float, 4>; "
                         "before add_kernel<float>");
}
