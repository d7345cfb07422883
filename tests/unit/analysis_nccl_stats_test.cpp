// NCCL statistics of one process (analysis/nccl_stats.h), on hand-built event streams
// fed in time order. Times are in microseconds (us()).
#include "analysis/nccl_stats.h"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

using namespace gapwatch;
using namespace gapwatch::analysis;

namespace {

constexpr uint64_t us(uint64_t v) { return v * 1'000; }

constexpr uint32_t kAllReduceKernel = 1;
constexpr uint32_t kGenericKernel = 2;
constexpr uint32_t kGemm = 3;
constexpr uint32_t kAllGatherKernel = 4;
constexpr uint32_t kSendRecvKernel = 5;

StringTable kernelNames() {
  StringTable strings;
  strings.define(v1::STRING_KIND_KERNEL_NAME, kAllReduceKernel,
                 "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kGenericKernel, "_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kGemm, "_Z13gemm_bf16_128PKfS0_Pf");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kAllGatherKernel, "ncclDevKernel_AllGather_RING_LL");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kSendRecvKernel, "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE");
  return strings;
}

DeviceActivityEvent kernel(uint32_t name_id, uint64_t start_ns, uint64_t end_ns, uint64_t correlation_id = 0,
                           uint64_t stream = 7, uint32_t device = 0) {
  DeviceActivityEvent e;
  e.kind = v1::ACTIVITY_KIND_KERNEL;
  e.name_id = name_id;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.correlation_id = correlation_id;
  e.stream = stream;
  e.device = device;
  return e;
}

DeviceActivityEvent copy(uint64_t start_ns, uint64_t end_ns) {
  DeviceActivityEvent e;
  e.kind = v1::ACTIVITY_KIND_MEMCPY;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.copy_kind = v1::COPY_KIND_H2D;
  return e;
}

NcclCallEvent ncclCall(v1::NcclOp op, uint64_t start_ns, uint64_t end_ns, uint64_t bytes = 0, uint32_t comm_id = 1,
                       uint64_t stream = 7) {
  NcclCallEvent e;
  e.op = op;
  e.thread_id = 100;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.bytes = bytes;
  e.comm_id = comm_id;
  e.stream = stream;
  e.rank = 0;
  e.nranks = 2;
  return e;
}

ApiCallEvent driverLaunch(uint64_t start_ns, uint64_t end_ns, uint64_t correlation_id) {
  ApiCallEvent e;
  e.kind = v1::API_KIND_LAUNCH;
  e.thread_id = 100;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.correlation_id = correlation_id;
  e.domain = v1::API_DOMAIN_DRIVER;
  return e;
}

// Feeds activities (already in start order) to a fresh stage and returns its statistics.
NcclStats statsOf(const std::vector<DeviceActivityEvent>& activities) {
  const StringTable strings = kernelNames();
  NcclStatsStage stage;
  stage.setStrings(&strings);
  for (const DeviceActivityEvent& a : activities) stage.onActivity(a);
  stage.finish();
  ProcessAnalysis result;
  stage.contribute(result);
  return result.nccl;
}

const NcclTypeStats* typeStats(const NcclStats& stats, const std::string& op) {
  for (const NcclTypeStats& t : stats.by_type) {
    if (t.op == op) return &t;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("overlap counts the compute time inside communication: partial overlap", "[nccl_stats]") {
  // comm [0, 100), compute [50, 150): 50 of 100 us of communication hide behind compute.
  const NcclStats stats = statsOf({kernel(kAllReduceKernel, us(0), us(100)), kernel(kGemm, us(50), us(150), 0, 8)});
  CHECK(stats.comm_ns == us(100));
  CHECK(stats.compute_comm_overlap == Approx(0.5));
  CHECK(stats.comm_share_of_busy == Approx(100.0 / 150.0));
}

TEST_CASE("overlap counts the compute time inside communication: nested", "[nccl_stats]") {
  SECTION("compute kernels inside one communication kernel") {
    // comm [0, 100); compute [20, 40) and [60, 70): 30 us of 100.
    const NcclStats stats = statsOf({kernel(kAllReduceKernel, us(0), us(100)), kernel(kGemm, us(20), us(40), 0, 8),
                                     kernel(kGemm, us(60), us(70), 0, 8)});
    CHECK(stats.comm_ns == us(100));
    CHECK(stats.compute_comm_overlap == Approx(0.3));
    CHECK(stats.comm_share_of_busy == Approx(1.0));
  }
  SECTION("a communication kernel inside one compute kernel is fully hidden") {
    // compute [0, 200); comm [50, 100).
    const NcclStats stats = statsOf({kernel(kGemm, us(0), us(200), 0, 8), kernel(kAllReduceKernel, us(50), us(100))});
    CHECK(stats.comm_ns == us(50));
    CHECK(stats.compute_comm_overlap == Approx(1.0));
    CHECK(stats.comm_share_of_busy == Approx(0.25));
  }
}

TEST_CASE("overlap is zero when compute and communication only touch", "[nccl_stats]") {
  // comm [0, 100), compute [100, 200).
  const NcclStats stats = statsOf({kernel(kAllReduceKernel, us(0), us(100)), kernel(kGemm, us(100), us(200), 0, 8)});
  CHECK(stats.comm_ns == us(100));
  CHECK(stats.compute_comm_overlap == 0);
  CHECK(stats.comm_share_of_busy == Approx(0.5));
}

TEST_CASE("overlapping communication kernels count once, with merged intervals", "[nccl_stats]") {
  // comm [0, 100) and [50, 150) on two streams: union 150 us. Compute [120, 300): overlap
  // [120, 150) = 30 us. Busy = [0, 300).
  const NcclStats stats = statsOf({kernel(kAllReduceKernel, us(0), us(100), 0, 7),
                                   kernel(kAllGatherKernel, us(50), us(150), 0, 9),
                                   kernel(kGemm, us(120), us(300), 0, 8)});
  CHECK(stats.comm_ns == us(150));
  CHECK(stats.compute_comm_overlap == Approx(0.2));
  CHECK(stats.comm_share_of_busy == Approx(0.5));
  // Device time per type is the kernels' summed durations, not their union.
  REQUIRE(typeStats(stats, "all_reduce"));
  REQUIRE(typeStats(stats, "all_gather"));
  CHECK(typeStats(stats, "all_reduce")->device_ns == us(100));
  CHECK(typeStats(stats, "all_gather")->device_ns == us(100));
}

TEST_CASE("copies are busy time but not compute", "[nccl_stats]") {
  // comm [0, 100) beside a copy [0, 100), then a copy [100, 300): no overlap; busy 300 us.
  const NcclStats stats = statsOf({copy(us(0), us(100)), kernel(kAllReduceKernel, us(0), us(100)), copy(us(100), us(300))});
  CHECK(stats.comm_ns == us(100));
  CHECK(stats.compute_comm_overlap == 0);
  CHECK(stats.comm_share_of_busy == Approx(100.0 / 300.0));
}

TEST_CASE("unions and overlap are per device, then summed", "[nccl_stats]") {
  // Device 0: comm [0, 100) with compute [0, 100). Device 1: comm [0, 100), nothing else. The same
  // times on two devices must not merge: comm 200 us, overlap 100 of 200, busy 200.
  const NcclStats stats = statsOf({kernel(kAllReduceKernel, us(0), us(100), 0, 7, 0),
                                   kernel(kAllReduceKernel, us(0), us(100), 0, 7, 1),
                                   kernel(kGemm, us(0), us(100), 0, 8, 0)});
  CHECK(stats.comm_ns == us(200));
  CHECK(stats.compute_comm_overlap == Approx(0.5));
  CHECK(stats.comm_share_of_busy == Approx(1.0));
}

TEST_CASE("per collective type: host calls, bytes, host time, kernels and device time", "[nccl_stats]") {
  const StringTable strings = kernelNames();
  NcclStatsStage stage;
  stage.setStrings(&strings);
  stage.onNcclCall(ncclCall(v1::NCCL_OP_COMM_INIT, us(0), us(900)));
  // Two all-reduces, each launching its kernel from inside the host call.
  stage.onNcclCall(ncclCall(v1::NCCL_OP_ALL_REDUCE, us(1000), us(1050), 4096));
  stage.onApiCall(driverLaunch(us(1010), us(1040), 11));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_ALL_REDUCE, us(1100), us(1120), 4));
  stage.onApiCall(driverLaunch(us(1105), us(1115), 12));
  stage.onActivity(kernel(kAllReduceKernel, us(1200), us(1300), 11));
  stage.onActivity(kernel(kAllReduceKernel, us(1300), us(1350), 12));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_COMM_DESTROY, us(5000), us(5010)));
  stage.finish();
  const NcclStats& stats = stage.stats();

  const NcclTypeStats* all_reduce = typeStats(stats, "all_reduce");
  REQUIRE(all_reduce);
  CHECK(all_reduce->calls == 2);
  CHECK(all_reduce->bytes == 4100);
  CHECK(all_reduce->host_ns == us(70));
  CHECK(all_reduce->kernels == 2);
  CHECK(all_reduce->device_ns == us(150));
  REQUIRE(typeStats(stats, "comm_init"));
  CHECK(typeStats(stats, "comm_init")->host_ns == us(900));
  CHECK(typeStats(stats, "comm_init")->kernels == 0);
  REQUIRE(typeStats(stats, "comm_destroy"));
  CHECK(typeStats(stats, "comm_destroy")->calls == 1);
  // Types with nothing recorded are left out.
  CHECK(typeStats(stats, "broadcast") == nullptr);
  CHECK(stats.comm_ns == us(150));
}

TEST_CASE("a generic kernel takes the type of the grouped calls that launched it", "[nccl_stats]") {
  const StringTable strings = kernelNames();
  NcclStatsStage stage;
  stage.setStrings(&strings);
  // ncclGroupStart; ncclSend; ncclRecv; ncclGroupEnd, which launches one fused kernel.
  stage.onNcclCall(ncclCall(v1::NCCL_OP_GROUP_START, us(0), us(1), 0, 0, 0));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_SEND, us(2), us(3), 1024, 1, 7));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_RECV, us(4), us(5), 1024, 1, 7));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_GROUP_END, us(6), us(20), 0, 0, 0));
  stage.onApiCall(driverLaunch(us(10), us(15), 77));
  stage.onActivity(kernel(kGenericKernel, us(30), us(50), 77));
  stage.finish();
  const NcclStats& stats = stage.stats();

  const NcclTypeStats* send_recv = typeStats(stats, "send_recv");
  REQUIRE(send_recv);
  CHECK(send_recv->calls == 2);
  CHECK(send_recv->bytes == 2048);
  // Send 1 + recv 1 + the group's start 1 and end 14.
  CHECK(send_recv->host_ns == us(17));
  CHECK(send_recv->kernels == 1);
  CHECK(send_recv->device_ns == us(20));
  CHECK(typeStats(stats, "generic") == nullptr);
}

TEST_CASE("a generic kernel whose launch was not seen stays generic", "[nccl_stats]") {
  const NcclStats stats = statsOf({kernel(kGenericKernel, us(0), us(40), 5)});
  REQUIRE(typeStats(stats, "generic"));
  CHECK(typeStats(stats, "generic")->kernels == 1);
  CHECK(typeStats(stats, "generic")->device_ns == us(40));
}

TEST_CASE("without NCCL the statistics are empty and the shares zero", "[nccl_stats]") {
  const NcclStats stats = statsOf({kernel(kGemm, us(0), us(100)), copy(us(100), us(200))});
  CHECK(stats.by_type.empty());
  CHECK(stats.comm_ns == 0);
  CHECK(stats.comm_share_of_busy == 0);
  CHECK(stats.compute_comm_overlap == 0);
}

TEST_CASE("launches whose kernel never arrives do not pile up", "[nccl_stats]") {
  NcclLaunchTracker tracker;
  tracker.onNcclCall(ncclCall(v1::NCCL_OP_ALL_REDUCE, 0, us(1'000'000)));
  for (uint64_t i = 1; i <= 20000; ++i) tracker.onApiCall(driverLaunch(i * 10, i * 10 + 5, i));
  CHECK(tracker.pendingLaunches() <= 4096);
  // The newest are kept.
  DeviceActivityEvent k = kernel(kAllReduceKernel, us(2'000'000), us(2'000'001), 20000);
  const NcclLaunchTracker::Launcher launcher = tracker.launcherOf(k);
  CHECK(launcher.comm_id == 1);
  CHECK(launcher.collective == NcclCollective::kAllReduce);
}

TEST_CASE("one launch whose kernel never arrives does not hold the matched ones behind it", "[nccl_stats]") {
  NcclLaunchTracker tracker;
  tracker.onNcclCall(ncclCall(v1::NCCL_OP_ALL_REDUCE, 0, us(1'000'000)));
  tracker.onApiCall(driverLaunch(1, 2, 1));  // its kernel record was dropped
  for (uint64_t i = 2; i <= 20000; ++i) {
    tracker.onApiCall(driverLaunch(i * 10, i * 10 + 5, i));
    tracker.launcherOf(kernel(kAllReduceKernel, us(2'000'000) + i, us(2'000'000) + i + 1, i));
  }
  CHECK(tracker.pendingLaunches() <= 4096);
}

TEST_CASE("all-to-all, gather and scatter have rows of their own, with the SendRecv kernels they launch",
          "[nccl_stats]") {
  const StringTable strings = kernelNames();
  NcclStatsStage stage;
  stage.setStrings(&strings);
  stage.onNcclCall(ncclCall(v1::NCCL_OP_ALL_TO_ALL, us(0), us(20), 2048));
  stage.onApiCall(driverLaunch(us(5), us(15), 21));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_GATHER, us(30), us(40), 256));
  stage.onApiCall(driverLaunch(us(32), us(38), 22));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_SCATTER, us(50), us(60), 256));
  stage.onApiCall(driverLaunch(us(52), us(58), 23));
  stage.onNcclCall(ncclCall(v1::NCCL_OP_SEND, us(70), us(80), 64));
  stage.onApiCall(driverLaunch(us(72), us(78), 24));
  stage.onActivity(kernel(kSendRecvKernel, us(100), us(200), 21));
  stage.onActivity(kernel(kSendRecvKernel, us(200), us(210), 22));
  stage.onActivity(kernel(kSendRecvKernel, us(210), us(230), 23));
  stage.onActivity(kernel(kSendRecvKernel, us(230), us(270), 24));
  stage.finish();
  const NcclStats& stats = stage.stats();
  for (const auto& [op, calls, bytes, device_ns] :
       {std::tuple{"all_to_all", 1u, 2048u, us(100)}, std::tuple{"gather", 1u, 256u, us(10)},
        std::tuple{"scatter", 1u, 256u, us(20)}, std::tuple{"send_recv", 1u, 64u, us(40)}}) {
    const NcclTypeStats* row = typeStats(stats, op);
    REQUIRE(row);
    CHECK(row->calls == calls);
    CHECK(row->bytes == bytes);
    CHECK(row->kernels == 1);
    CHECK(row->device_ns == device_ns);
  }
}
