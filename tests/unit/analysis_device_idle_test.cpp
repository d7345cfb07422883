// tests/unit/analysis_device_idle_test.cpp: the device idle stage on cases computed by hand.
//
// Window, busy and gaps (overlapping streams, zero-length kernels, the window's edges, clock
// ties), every attribution rule of docs/scenarios.md's ground truth and their precedence,
// after_sync, events that arrive out of order or too late, HTA's per-stream breakdown, the
// longest gaps, and what a recording without a device timeline claims. Times are microseconds
// (us()); a gap of 30 us or more outside any call is host_cpu, a shorter one launch_overhead.

#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "analysis/device_idle.h"

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

constexpr uint32_t kMain = 100;  // the training thread
constexpr uint32_t kOther = 200;

// By value: the tests call it on a temporary result.
DeviceAnalysis onlyDevice(const ProcessAnalysis& a) {
  REQUIRE(a.devices.size() == 1);
  return a.devices[0];
}

}  // namespace

TEST_CASE("busy is the union of overlapping streams; the gap is attributed by the launching thread") {
  // Stream 7: [100, 300) and [500, 600); stream 13: [200, 400). Busy [100, 400) + [500, 600).
  // The gap [400, 500) ends at the kernel queued by a launch at [450, 455): the thread was outside
  // any call before and after it, and the gap is 100 us long, so that time is host_cpu.
  EngineFeed feed;
  feed.add(launch(kMain, us(50), us(60), 1))
      .add(launch(kMain, us(60), us(70), 2, 13))
      .add(launch(kMain, us(450), us(455), 3))
      .add(kernelAt(us(100), us(300), 1))
      .add(kernelAt(us(200), us(400), 2, 13))
      .add(kernelAt(us(500), us(600), 3));
  const DeviceAnalysis d = onlyDevice(feed.run(true, us(10)));
  CHECK(d.window_start_ns == us(100));
  CHECK(d.window_end_ns == us(600));
  CHECK(d.busy_ns == us(400));
  CHECK(d.idle_ns == us(100));
  CHECK(d.idle_fraction == Approx(0.2));
  CHECK(d.leading_ns == us(90));  // process start (10) to the first activity (100)
  CHECK(d.kernels == 3);
  CHECK(d.gaps.count() == 1);
  CHECK(cause(d, IdleCause::kHostCpu) == us(95));
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(5));
  CHECK(causeSum(d) == d.idle_ns);
  CHECK_FALSE(d.longest_gaps.at(0).after_sync);
}

TEST_CASE("time before the first and after the last activity is not idle") {
  EngineFeed feed;
  feed.add(launch(kMain, us(0), us(5), 1))
      .add(launch(kMain, us(900), us(905), 2))  // long after the last kernel ended
      .add(kernelAt(us(500), us(510), 1));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(d.window_start_ns == us(500));
  CHECK(d.window_end_ns == us(510));
  CHECK(d.idle_ns == 0);
  CHECK(d.gaps.count() == 0);
}

TEST_CASE("a zero-length record is counted but neither ends a gap nor widens the window") {
  // Kernels [100, 200) and [300, 400) with zero-length ones at 250 and 500: one gap [200, 300),
  // ended by the kernel at 300 (its launch at [280, 285)), not by the empty one at 250.
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(launch(kMain, us(240), us(245), 2))
      .add(launch(kMain, us(280), us(285), 3))
      .add(launch(kMain, us(290), us(292), 4))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(250), us(250), 2))
      .add(kernelAt(us(300), us(400), 3))
      .add(kernelAt(us(500), us(500), 4));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(d.kernels == 4);
  CHECK(d.window_end_ns == us(400));
  CHECK(d.gaps.count() == 1);
  CHECK(d.idle_ns == us(100));
  // [240, 245) and [280, 285) and [290, 292) are launch calls; the rest (89 us) host_cpu.
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(12));
  CHECK(cause(d, IdleCause::kHostCpu) == us(88));
}

TEST_CASE("work queued before the gap began makes the whole gap a dependency") {
  // The kernel at 500 was launched at [300, 310), before the device went idle at 400: it waited
  // for something else (an event, another stream, a peer).
  EngineFeed feed;
  feed.add(launch(kMain, us(50), us(60), 1))
      .add(launch(kMain, us(300), us(310), 2))
      .add(kernelAt(us(100), us(400), 1))
      .add(kernelAt(us(500), us(600), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kDependency) == us(100));
  CHECK(causeSum(d) == us(100));
}

TEST_CASE("a call that returns exactly when the device goes idle is still a dependency") {
  EngineFeed feed;
  feed.add(launch(kMain, us(50), us(60), 1))
      .add(launch(kMain, us(390), us(400), 2))
      .add(kernelAt(us(100), us(400), 1))
      .add(kernelAt(us(420), us(430), 2));
  CHECK(cause(onlyDevice(feed.run()), IdleCause::kDependency) == us(20));
}

TEST_CASE("a short gap outside any call is launch overhead, a long one host_cpu") {
  EngineFeed short_gap;
  short_gap.add(launch(kMain, us(10), us(15), 1))
      .add(launch(kMain, us(205), us(210), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(220), us(230), 2));  // 20 us gap
  const DeviceAnalysis s = onlyDevice(short_gap.run());
  CHECK(cause(s, IdleCause::kLaunchOverhead) == us(20));

  EngineFeed threshold_gap;  // exactly the threshold (30 us) is no longer shorter than it
  threshold_gap.add(launch(kMain, us(10), us(15), 1))
      .add(launch(kMain, us(225), us(228), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(230), us(240), 2));
  const DeviceAnalysis t = onlyDevice(threshold_gap.run());
  CHECK(cause(t, IdleCause::kHostCpu) == us(27));
  CHECK(cause(t, IdleCause::kLaunchOverhead) == us(3));
}

TEST_CASE("the launch threshold is an option") {
  AnalysisOptions options;
  options.launch_threshold_ns = us(10);
  EngineFeed feed(options);
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(launch(kMain, us(205), us(210), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(220), us(230), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kHostCpu) == us(15));
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(5));
}

TEST_CASE("time inside a blocking copy is sync_copy") {
  // A synchronous H2D copy (blocked) at [210, 400) whose copy runs at [350, 390): the gap
  // [200, 350) is host_cpu until the call (10 us) and sync_copy inside it (140 us).
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(call(v1::API_KIND_MEMCPY, kMain, us(210), us(400), 2, true))
      .add(kernelAt(us(100), us(200), 1))
      .add(copyAt(us(350), us(390), 2, v1::MEMORY_KIND_PINNED));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kHostCpu) == us(10));
  CHECK(cause(d, IdleCause::kSyncCopy) == us(140));
  CHECK(d.memcpys == 1);
}

TEST_CASE("an async copy blocks when its record shows pageable memory, and only then") {
  auto run = [](v1::MemoryKind host_memory) {
    EngineFeed feed;
    feed.add(launch(kMain, us(10), us(15), 1))
        .add(call(v1::API_KIND_MEMCPY_ASYNC, kMain, us(210), us(400), 2))
        .add(kernelAt(us(100), us(200), 1))
        .nextBatch()  // the copy's record comes in a later batch, as CUPTI's buffers do
        .add(copyAt(us(350), us(390), 2, host_memory));
    return feed.run();
  };
  const ProcessAnalysis pageable = run(v1::MEMORY_KIND_PAGEABLE);
  CHECK(cause(onlyDevice(pageable), IdleCause::kSyncCopy) == us(140));
  const ProcessAnalysis pinned = run(v1::MEMORY_KIND_PINNED);
  CHECK(cause(onlyDevice(pinned), IdleCause::kSyncCopy) == 0);
  CHECK(cause(onlyDevice(pinned), IdleCause::kLaunchOverhead) == us(140));
}

TEST_CASE("time inside an NCCL host call is nccl_host, even around the launch nested in it") {
  // ncclAllReduce at [210, 400) launches its kernel through cuLaunchKernelEx at [380, 385); the
  // kernel starts at 390.
  EngineFeed feed;
  ApiCallEvent driver_launch = launch(kMain, us(380), us(385), 5);
  driver_launch.domain = v1::API_DOMAIN_DRIVER;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(ncclCall(kMain, us(210), us(400)))
      .add(driver_launch)
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(390), us(450), 5));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kHostCpu) == us(10));
  CHECK(cause(d, IdleCause::kNcclHost) == us(180));
}

TEST_CASE("time inside other CUDA calls is cuda_api") {
  // cudaMalloc (blocked, an implicit sync) at [210, 300), then the launch at [300, 305).
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(call(v1::API_KIND_MALLOC, kMain, us(210), us(300), 0, true))
      .add(launch(kMain, us(300), us(305), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(310), us(400), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kHostCpu) == us(15));  // [200, 210) and [305, 310)
  CHECK(cause(d, IdleCause::kCudaApi) == us(90));
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(5));
  CHECK(causeSum(d) == us(110));
}

TEST_CASE("cuda_api time inside a synchronize is kept apart from cudaMalloc's") {
  // A stream sync that returns 40 us after its kernel ended, then a cudaMalloc of 90 us: both are
  // cuda_api, only the sync's is a sync's (what a sync storm holds).
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(call(v1::API_KIND_STREAM_SYNC, kMain, us(20), us(240), 0, true))
      .add(call(v1::API_KIND_MALLOC, kMain, us(250), us(340), 0, true))
      .add(launch(kMain, us(340), us(345), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(350), us(400), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kCudaApi) == us(130));
  CHECK(d.cuda_api_in_syncs_ns == us(40));
}

TEST_CASE("where calls overlap, sync_copy beats nccl_host beats launch beats cuda_api") {
  // On one thread during the gap [200, 300): a cuda_api call [200, 300); inside it a launch-type
  // call [210, 280); inside that an NCCL call [220, 270); inside that a blocked copy [230, 260).
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(call(v1::API_KIND_OTHER, kMain, us(200), us(300)))
      .add(call(v1::API_KIND_EVENT_RECORD, kMain, us(210), us(280)))
      .add(ncclCall(kMain, us(220), us(270)))
      .add(call(v1::API_KIND_MEMSET, kMain, us(230), us(260), 0, true))
      .add(launch(kMain, us(290), us(295), 2))  // inside the cuda_api call: launch wins there
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(300), us(310), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kSyncCopy) == us(30));
  CHECK(cause(d, IdleCause::kNcclHost) == us(20));          // [220, 230) + [260, 270)
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(25));    // [210, 220) + [270, 280) + [290, 295)
  CHECK(cause(d, IdleCause::kCudaApi) == us(25));           // [200, 210) + [280, 290) + [295, 300)
}

TEST_CASE("only the launching thread's calls count") {
  // Another thread sits in a blocking copy during the whole gap; the kernel's own thread is in
  // Python: the gap is host_cpu.
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(call(v1::API_KIND_MEMCPY, kOther, us(150), us(500), 9, true))
      .add(launch(kMain, us(290), us(295), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(300), us(310), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kHostCpu) == us(95));
  CHECK(cause(d, IdleCause::kSyncCopy) == 0);
}

TEST_CASE("without the call that queued the work, the gap gets the rule of a thread in no call") {
  EngineFeed feed;  // the launch of correlation 2 was dropped
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(300), us(310), 2))
      .add(kernelAt(us(320), us(330), 3));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kHostCpu) == us(100));        // 100 us: as if outside any call
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(10));  // 10 us
}

TEST_CASE("on a clock tie the activity with the lowest correlation id ends the gap") {
  // Two kernels start at 300 on two streams: correlation 5 was queued at [50, 55) (long before
  // the gap: dependency), correlation 7 at [290, 295). The gap [200, 300) belongs to 5.
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(launch(kMain, us(50), us(55), 5, 13))
      .add(launch(kMain, us(290), us(295), 7))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(300), us(320), 7))
      .add(kernelAt(us(300), us(310), 5, 13));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kDependency) == us(100));
  CHECK(d.busy_ns == us(120));
}

TEST_CASE("back-to-back activities leave no gap") {
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(launch(kMain, us(16), us(20), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(200), us(300), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(d.gaps.count() == 0);
  CHECK(d.busy_ns == us(200));
}

TEST_CASE("a gap that begins when a blocked sync returns is after_sync, and its type gets the idle") {
  // cudaStreamSynchronize [60, 203) waits for the kernel [100, 200); the host then runs Python
  // until the launch at [250, 255); the kernel starts at 257.
  EngineFeed feed;
  feed.add(launch(kMain, us(50), us(55), 1))
      .add(call(v1::API_KIND_STREAM_SYNC, kMain, us(60), us(203), 0, true))
      .add(launch(kMain, us(250), us(255), 2))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(257), us(300), 2));
  const ProcessAnalysis a = feed.run();
  const DeviceAnalysis d = onlyDevice(a);
  CHECK(d.after_sync_ns == us(57));
  CHECK(d.after_sync_gaps == 1);
  CHECK(d.after_sync_hideable_ns == us(57));  // min(gap 57, blocked 143)
  CHECK(cause(d, IdleCause::kCudaApi) == us(3));
  CHECK(cause(d, IdleCause::kHostCpu) == us(49));
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(5));
  CHECK(d.after_sync_by_cause_ns == d.idle_by_cause_ns);
  REQUIRE(a.sync_points.size() == kSyncPointKindCount);
  CHECK(a.sync_points[static_cast<std::size_t>(SyncPointKind::kStreamSync)].idle_after_ns == us(57));
  CHECK(d.longest_gaps.at(0).after_sync);
}

TEST_CASE("after_sync follows what the sync waited for, not when it returned") {
  // The truth flags a gap when a blocked call waited for exactly the work that ended at g0.
  auto base = [](EngineFeed& feed) {
    feed.add(launch(kMain, us(50), us(55), 1)).add(kernelAt(us(100), us(200), 1));
  };
  EngineFeed late_return;  // another thread's device sync waited for kernel 1, returned after g1
  base(late_return);
  late_return.add(call(v1::API_KIND_DEVICE_SYNC, kOther, us(60), us(320), 0, true))
      .add(launch(kMain, us(290), us(295), 2))
      .add(kernelAt(us(300), us(310), 2));
  CHECK(onlyDevice(late_return.run()).after_sync_ns == us(100));

  EngineFeed late_start;  // entered after the device went idle: it waited for nothing
  base(late_start);
  late_start.add(call(v1::API_KIND_DEVICE_SYNC, kMain, us(210), us(220), 0, true))
      .add(launch(kMain, us(290), us(295), 2))
      .add(kernelAt(us(300), us(310), 2));
  CHECK(onlyDevice(late_start.run()).after_sync_ns == 0);

  EngineFeed waited_for_next;  // kernel 2 was queued before the sync: it waited for that too
  base(waited_for_next);
  waited_for_next.add(launch(kMain, us(56), us(58), 2, 13))
      .add(call(v1::API_KIND_DEVICE_SYNC, kMain, us(60), us(320), 0, true))
      .add(kernelAt(us(300), us(310), 2, 13));
  const DeviceAnalysis w = onlyDevice(waited_for_next.run());
  CHECK(w.after_sync_ns == 0);
  CHECK(cause(w, IdleCause::kDependency) == us(100));

  EngineFeed queued_later;  // kernel 1 was queued after the sync began: not what it waited for
  queued_later.add(call(v1::API_KIND_DEVICE_SYNC, kOther, us(40), us(203), 0, true))
      .add(launch(kMain, us(50), us(55), 1))
      .add(kernelAt(us(100), us(200), 1))
      .add(launch(kMain, us(290), us(295), 2))
      .add(kernelAt(us(300), us(310), 2));
  CHECK(onlyDevice(queued_later.run()).after_sync_ns == 0);
}

TEST_CASE("a stream sync drains the queue only for work on its own stream") {
  // The call does not name its stream; CUPTI's SYNCHRONIZATION record (same correlation id) does.
  auto run = [](uint64_t synced_stream) {
    EngineFeed feed;
    DeviceActivityEvent record = work(v1::ACTIVITY_KIND_SYNC, us(61), us(202), 9, synced_stream);
    record.sync_kind = v1::SYNC_KIND_STREAM_SYNCHRONIZE;
    feed.add(launch(kMain, us(50), us(55), 1))
        .add(call(v1::API_KIND_STREAM_SYNC, kMain, us(60), us(203), 9, true))
        .add(launch(kMain, us(250), us(255), 2))
        .add(kernelAt(us(100), us(200), 1))
        .add(record)
        .add(kernelAt(us(260), us(300), 2));
    return onlyDevice(feed.run()).after_sync_ns;
  };
  CHECK(run(7) == us(60));
  CHECK(run(13) == 0);
}

TEST_CASE("a sync that waited for a zero-length copy after the device went idle did not drain it") {
  // item(): a 4-byte D2H copy into pageable memory (a zero-length record at 250) and a stream sync
  // that waits for that copy; the queue drained at 200 but neither call waited for that.
  EngineFeed feed;
  feed.add(launch(kMain, us(50), us(55), 1))
      .add(call(v1::API_KIND_MEMCPY_ASYNC, kMain, us(150), us(252), 2))
      .add(call(v1::API_KIND_STREAM_SYNC, kMain, us(253), us(256), 3, true))
      .add(launch(kMain, us(280), us(285), 4))
      .add(kernelAt(us(100), us(200), 1))
      .add(copyAt(us(250), us(250), 2, v1::MEMORY_KIND_PAGEABLE, v1::COPY_KIND_D2H))
      .add(kernelAt(us(290), us(300), 4));
  const ProcessAnalysis a = feed.run();
  const DeviceAnalysis d = onlyDevice(a);
  CHECK(d.after_sync_ns == 0);
  CHECK(d.memcpys == 1);
  CHECK(a.sync_points[static_cast<std::size_t>(SyncPointKind::kPageableAsyncCopy)].count == 1);
}

TEST_CASE("a sync whose waited-for work is reported later is still placed in order") {
  // The batches come in drained order, not time order: first the host thread's calls up to
  // 1 ms (the sync returned at 203 us, long before its kernel's record arrives), then CUPTI's
  // records of both kernels.
  EngineFeed feed;
  feed.add(launch(kMain, us(50), us(55), 1))
      .add(call(v1::API_KIND_STREAM_SYNC, kMain, us(60), us(203), 0, true))
      .add(launch(kMain, us(250), us(255), 2))
      .add(launch(kMain, us(990), us(995), 3))
      .nextBatch()
      .add(kernelAt(us(257), us(300), 2))  // out of order inside the batch too
      .add(kernelAt(us(100), us(200), 1))
      .nextBatch()
      .add(kernelAt(us(1000), us(1010), 3));
  const ProcessAnalysis a = feed.run();
  const DeviceAnalysis d = onlyDevice(a);
  CHECK(a.late_events == 0);
  CHECK(d.after_sync_ns == us(57));
  CHECK(cause(d, IdleCause::kHostCpu) == us(49) + us(695));  // then [300, 990) + [995, 1000)
  CHECK(cause(d, IdleCause::kCudaApi) == us(3));
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(10));
}

TEST_CASE("an activity that arrives after the window has passed it is counted late and left out") {
  AnalysisOptions options;
  options.reorder_window_ns = ms(1);
  EngineFeed feed(options);
  feed.add(launch(kMain, us(10), us(15), 1))
      .add(launch(kMain, us(20), us(25), 2))
      .add(launch(kMain, ms(5), ms(5) + us(5), 3))
      .add(kernelAt(us(100), us(200), 1))
      .nextBatch()
      .add(kernelAt(ms(5) + us(10), ms(5) + us(20), 3))  // releases everything up to 4.01 ms
      .nextBatch()
      .add(kernelAt(us(50), us(60), 2));  // too late: the kernel at 100 us is out already
  const ProcessAnalysis a = feed.run();
  CHECK(a.late_events == 1);
  const DeviceAnalysis d = onlyDevice(a);
  CHECK(d.kernels == 2);
  CHECK(d.busy_ns == us(110));
}

TEST_CASE("HTA's per-stream breakdown: host_wait, kernel_wait and other") {
  // Stream 7: k1 [100, 200); k2 [210, 300) launched at 60, before k1 ended: a 10 us interval
  // under HTA's 30 us is kernel_wait; k3 [400, 500) launched at 350, after k2 ended: host_wait;
  // k4 [600, 700) launched at 390, before k3 ended, 100 us: other.
  EngineFeed feed;
  feed.add(launch(kMain, us(50), us(55), 1))
      .add(launch(kMain, us(60), us(65), 2))
      .add(launch(kMain, us(350), us(355), 3))
      .add(launch(kMain, us(390), us(395), 4))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(210), us(300), 2))
      .add(kernelAt(us(400), us(500), 3))
      .add(kernelAt(us(600), us(700), 4))
      .add(kernelAt(us(150), us(160), 9, 13));  // another stream: its own row
  const DeviceAnalysis d = onlyDevice(feed.run());
  REQUIRE(d.streams.size() == 2);
  const StreamIdle& s = d.streams[0];
  CHECK(s.stream == 7);
  CHECK(s.kernel_wait_ns == us(10));
  CHECK(s.host_wait_ns == us(100));
  CHECK(s.other_ns == us(100));
  CHECK(d.streams[1].stream == 13);
  CHECK(d.streams[1].host_wait_ns + d.streams[1].kernel_wait_ns + d.streams[1].other_ns == 0);
}

TEST_CASE("the longest gaps are kept by length, with min_gap_ns hiding short ones from the list only") {
  AnalysisOptions options;
  options.top_n = 2;
  options.min_gap_ns = us(20);
  EngineFeed feed(options);
  feed.add(launch(kMain, us(1), us(2), 1))
      .add(kernelAt(us(100), us(110), 1))
      .add(kernelAt(us(120), us(130), 2))   // gap 10 us
      .add(kernelAt(us(180), us(190), 3))   // gap 50 us
      .add(kernelAt(us(220), us(230), 4));  // gap 30 us
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(d.gaps.count() == 3);
  CHECK(d.idle_ns == us(90));
  REQUIRE(d.longest_gaps.size() == 2);
  CHECK(d.longest_gaps[0].start_ns == us(130));
  CHECK(d.longest_gaps[0].end_ns == us(180));
  CHECK(d.longest_gaps[1].start_ns == us(190));
  uint64_t listed = 0;
  for (uint64_t v : d.longest_gaps[0].by_cause_ns) listed += v;
  CHECK(listed == us(50));
  // The histogram has all three: 10 us in [8, 16) us, 30 us in [16, 32), 50 us in [32, 64).
  CHECK(d.gaps.bucket(GapHistogram::bucketOf(us(10))).count == 1);
  CHECK(d.gaps.bucket(GapHistogram::bucketOf(us(30))).total_ns == us(30));
  CHECK(d.gaps.bucket(GapHistogram::bucketOf(us(50))).count == 1);
}

TEST_CASE("devices are analysed apart") {
  EngineFeed feed;
  feed.add(launch(kMain, us(1), us(2), 1))
      .add(launch(kMain, us(3), us(4), 2))
      .add(kernelAt(us(100), us(200), 1, 7, 0))
      .add(kernelAt(us(150), us(250), 2, 7, 1))
      .add(kernelAt(us(300), us(310), 3, 7, 0));
  const ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.size() == 2);
  CHECK(a.devices[0].device == 0);
  CHECK(a.devices[0].idle_ns == us(100));
  CHECK(a.devices[1].device == 1);
  CHECK(a.devices[1].idle_ns == 0);
}

TEST_CASE("without the activity probe nothing is claimed about device idle") {
  EngineFeed feed;
  feed.add(launch(kMain, us(10), us(15), 1)).add(call(v1::API_KIND_DEVICE_SYNC, kMain, us(20), us(90), 0, true));
  const ProcessAnalysis a = feed.run(/*device_timeline=*/false);
  CHECK_FALSE(a.device_timeline);
  CHECK(a.devices.empty());
  CHECK(a.sync_points[static_cast<std::size_t>(SyncPointKind::kDeviceSync)].count == 1);
}

TEST_CASE("the calls held for attribution stay bounded however long the recording") {
  // 20 000 launches of 10 us kernels, each after 30 us of Python: the stage must forget calls the
  // device has passed.
  AnalysisPipeline pipeline;
  auto& idle = pipeline.emplaceStage<DeviceIdleStage>(pipeline.options());
  pipeline.onHello(helloFor(true), 0);
  StringTable strings;
  std::size_t most_held = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    DecodedBatch batch;
    const uint64_t t = us(40) * i;
    batch.api_calls.push_back(launch(kMain, t, t + us(5), i + 1));
    batch.api_calls.push_back(call(v1::API_KIND_STREAM_SYNC, kMain, t + us(6), t + us(18), 0, true));
    batch.activities.push_back(kernelAt(t + us(7), t + us(17), i + 1));
    pipeline.onBatch(batch, strings);
    most_held = std::max(most_held, idle.heldCalls());
  }
  StreamHealth health;
  health.has_goodbye = true;
  const ProcessAnalysis a = pipeline.finish(ReadResult{}, health);
  CHECK(most_held < 64);
  REQUIRE(a.devices.size() == 1);
  // Each gap [t + 17, t + 47): 1 us in this step's sync and 1 us in the next one's (it enters at
  // t + 46), 22 + 1 us of Python, 5 us in the launch.
  CHECK(a.devices[0].gaps.count() == 19999);
  CHECK(cause(a.devices[0], IdleCause::kCudaApi) == 19999 * us(2));
  CHECK(cause(a.devices[0], IdleCause::kHostCpu) == 19999 * us(23));
  CHECK(cause(a.devices[0], IdleCause::kLaunchOverhead) == 19999 * us(5));
  CHECK(a.devices[0].after_sync_ns == 19999 * us(30));
}

TEST_CASE("a query that saw the work done does not hold later blocked calls until the end") {
  // A side thread queries once and finds its work done, then never calls CUDA again; the main
  // thread synchronises 5000 times while kernels run. The stage prunes what no later gap can need
  // every 1024 events, so what it keeps stays under that, whatever the length of the run; an open
  // loop on the side thread held all 5000.
  AnalysisOptions options;
  DeviceIdleStage stage(options);
  stage.begin(RecordingFacts{});
  ApiCallEvent query = call(v1::API_KIND_QUERY, 2, us(1), us(2));
  query.return_code = 0;  // done
  stage.onApiCall(query);
  for (uint64_t i = 0; i < 5000; ++i) {
    stage.onApiCall(call(v1::API_KIND_STREAM_SYNC, 1, us(10 + 10 * i), us(12 + 10 * i), 0, true));
    stage.onActivity(kernelAt(us(13 + 10 * i), us(14 + 10 * i), i + 1));
  }
  CHECK(stage.blockedCallsPending() <= 1100);
}

TEST_CASE("host time is split by the launching thread's host ranges: data loading, then ops, then the rest") {
  // Kernels [0, 100) and [1000, 1100); the gap [100, 1000) ends at the kernel launched at
  // [990, 1000). The thread, outside any CUDA call over [100, 990): in the DataLoader's range over
  // [100, 400), inside which an op runs [200, 300) (data loading wins); in an op over [500, 700);
  // under an annotation only over [700, 990) but for [800, 850) in an op; nothing over [400, 500).
  EngineFeed feed;
  feed.name(v1::STRING_KIND_HOST_RANGE_NAME, 1, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
      .name(v1::STRING_KIND_HOST_RANGE_NAME, 2, "aten::stack")
      .name(v1::STRING_KIND_HOST_RANGE_NAME, 3, "aten::linear")
      .name(v1::STRING_KIND_HOST_RANGE_NAME, 4, "## metrics:publish ##")
      .add(launch(kMain, us(0), us(0) + 500, 1))
      .add(launch(kMain, us(990), us(1000), 2))
      .add(hostRange(v1::HOST_RANGE_KIND_INPUT_PIPELINE, kMain, us(100), us(400), 1))
      .add(hostRange(v1::HOST_RANGE_KIND_FRAMEWORK_OP, kMain, us(200), us(300), 2))
      .add(hostRange(v1::HOST_RANGE_KIND_FRAMEWORK_OP, kMain, us(500), us(700), 3))
      .add(hostRange(v1::HOST_RANGE_KIND_ANNOTATION, kMain, us(700), us(990), 4))
      .add(hostRange(v1::HOST_RANGE_KIND_FRAMEWORK_OP, kMain, us(800), us(850), 3))
      // Another thread's op says nothing of the launching thread.
      .add(hostRange(v1::HOST_RANGE_KIND_FRAMEWORK_OP, kOther, us(100), us(1000), 3))
      // A kind this engine does not know is left out.
      .add(hostRange(static_cast<v1::HostRangeKind>(9), kMain, us(400), us(500), 3))
      .add(kernelAt(us(0), us(100), 1))
      .add(kernelAt(us(1000), us(1100), 2));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kHostCpu) == us(890));
  const auto part = [&](HostPart p) { return d.host_cpu_by_part_ns[static_cast<std::size_t>(p)]; };
  CHECK(part(HostPart::kInputPipeline) == us(300));
  CHECK(part(HostPart::kFramework) == us(250));
  CHECK(part(HostPart::kOther) == us(340));  // [400, 500) outside everything, [700, 990) less the op
  CHECK(part(HostPart::kUnknown) == 0);
  REQUIRE(d.host_part_labels[static_cast<std::size_t>(HostPart::kOther)].size() == 2);
  CHECK(d.host_part_labels[static_cast<std::size_t>(HostPart::kOther)][0].name == "## metrics:publish ##");
  CHECK(d.host_part_labels[static_cast<std::size_t>(HostPart::kOther)][0].ns == us(240));
  CHECK(d.host_part_labels[static_cast<std::size_t>(HostPart::kOther)][1].name.empty());  // outside any annotation
  CHECK(d.host_part_labels[static_cast<std::size_t>(HostPart::kFramework)][0].name == "aten::linear");
  CHECK(d.longest_gaps.at(0).host_by_part_ns == d.host_cpu_by_part_ns);
}

TEST_CASE("without host ranges, host time is unknown, and its share in long gaps is kept as a hint") {
  // Gaps of 500 us and 2 ms, both host_cpu, in a recording that holds no host range.
  EngineFeed feed;
  feed.add(launch(kMain, us(0), us(1), 1))
      .add(launch(kMain, us(690), us(700), 2))
      .add(launch(kMain, us(2790), us(2800), 3))
      .add(kernelAt(us(100), us(200), 1))
      .add(kernelAt(us(700), us(800), 2))
      .add(kernelAt(us(2800), us(2900), 3));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kUnknown)] == cause(d, IdleCause::kHostCpu));
  CHECK(cause(d, IdleCause::kHostCpu) == us(490) + us(1990));
  CHECK(d.unknown_host_in_long_gaps_ns == us(1990));
}

TEST_CASE("a host range around the whole run does not hold the later ranges behind it") {
  // One annotation spans the run (an epoch range); inside it, 20 000 steps of 1 ms (20 s: far
  // longer than the pipeline's reorder window), each a 900 us annotation of its own, a launch and
  // its kernel. The stage must forget the
  // steps' annotations once the device has passed them, the long one still open at the front.
  AnalysisPipeline pipeline;
  auto& idle = pipeline.emplaceStage<DeviceIdleStage>(pipeline.options());
  pipeline.onHello(helloFor(true), 0);
  StringTable strings;
  constexpr uint64_t kSteps = 20000;
  std::size_t most_held = 0;
  for (uint64_t i = 0; i < kSteps; ++i) {
    DecodedBatch batch;
    const uint64_t t = us(1000) * i;
    if (i == 0) batch.host_ranges.push_back(hostRange(v1::HOST_RANGE_KIND_ANNOTATION, kMain, 0, us(1000) * kSteps, 1));
    batch.host_ranges.push_back(hostRange(v1::HOST_RANGE_KIND_ANNOTATION, kMain, t, t + us(900), 2));
    batch.api_calls.push_back(launch(kMain, t + us(900), t + us(905), i + 1));
    batch.activities.push_back(kernelAt(t + us(905), t + us(1000), i + 1));
    pipeline.onBatch(batch, strings);
    most_held = std::max(most_held, idle.heldCalls());
  }
  StreamHealth health;
  health.has_goodbye = true;
  const ProcessAnalysis a = pipeline.finish(ReadResult{}, health);
  CHECK(most_held < 2100);  // what one prune interval (1024 events) leaves, and the long range
  REQUIRE(a.devices.size() == 1);
  // Each gap [t + 1000, t + 1905): 900 us in the next step's annotation (the innermost), 5 us in
  // the launch.
  const DeviceAnalysis& d = a.devices[0];
  CHECK(cause(d, IdleCause::kHostCpu) == (kSteps - 1) * us(900));
  CHECK(d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kOther)] == (kSteps - 1) * us(900));
}

// ---- Host time from sampled Python stacks (a live recording without host ranges) ------------------

namespace {

const std::string kSite = "/venv/lib/python3.11/site-packages/";
const std::string kUser = "/home/ana/proj/";

// Stack ids of the sampled-stack tests, and their texts (innermost frame first).
constexpr uint32_t kLoaderStack = 1, kTorchStack = 2, kMetricsStack = 3, kLoggingStack = 4, kCompileStack = 5,
                   kNoFrameStack = 6;

EngineFeed& nameStacks(EngineFeed& feed) {
  return feed
      .name(v1::STRING_KIND_PYTHON_STACK, kLoaderStack,
            "__next__\t" + kSite + "torch/utils/data/dataloader.py\t631\ntrain\t" + kUser + "train.py\t42\n")
      .name(v1::STRING_KIND_PYTHON_STACK, kTorchStack,
            "forward\t" + kSite + "torch/nn/modules/linear.py\t116\nforward\t" + kUser + "model.py\t30\n")
      .name(v1::STRING_KIND_PYTHON_STACK, kMetricsStack,
            "compute_metrics\t" + kUser + "metrics.py\t17\ntrain\t" + kUser + "train.py\t60\n")
      .name(v1::STRING_KIND_PYTHON_STACK, kLoggingStack, "log\t" + kUser + "logger.py\t9\n")
      .name(v1::STRING_KIND_PYTHON_STACK, kCompileStack,
            "_compile\t" + kSite + "torch/_dynamo/convert_frame.py\t650\ntrain\t" + kUser + "train.py\t44\n")
      .name(v1::STRING_KIND_PYTHON_STACK, kNoFrameStack, "...\t\t0\n");
}

// Kernels [0, 100) and [1000, 1100), the second launched at [990, 1000): one gap [100, 1000) whose
// host_cpu time is [100, 990), the launching thread outside any call.
EngineFeed oneHostGap() {
  EngineFeed feed;
  nameStacks(feed.withSampler())
      .add(launch(kMain, us(0), us(0) + 500, 1))
      .add(launch(kMain, us(990), us(1000), 2))
      .add(kernelAt(us(0), us(100), 1))
      .add(kernelAt(us(1000), us(1100), 2));
  return feed;
}

uint64_t part(const DeviceAnalysis& d, HostPart p) { return d.host_cpu_by_part_ns[static_cast<std::size_t>(p)]; }

const std::vector<HostLabel>& labels(const DeviceAnalysis& d, HostPart p) {
  return d.host_part_labels[static_cast<std::size_t>(p)];
}

}  // namespace

TEST_CASE("sampled stacks split host time by their class, under the Python lines they name") {
  // Period 100 us. Samples at 200 and 350 (the DataLoader), 500 (torch), 800 (metrics): 200's
  // reach starts where the last call returned, not before ([100, ...)); 200 and 350 share [250,
  // 300) at 275, 350 and 500 share [400, 450) at 425; 500 reaches 600, 800 reaches back to 700
  // only, and to 900: [600, 700) and [900, 990) no sample speaks for.
  EngineFeed feed = oneHostGap();
  feed.add(pythonSample(kMain, us(200), kLoaderStack, us(100)))
      .add(pythonSample(kMain, us(350), kLoaderStack, us(100)))
      .add(pythonSample(kMain, us(500), kTorchStack, us(100)))
      .add(pythonSample(kMain, us(800), kMetricsStack, us(100)))
      .add(pythonSample(kOther, us(600), kMetricsStack, us(500)));  // another thread's says nothing
  const ProcessAnalysis a = feed.run();
  const DeviceAnalysis d = onlyDevice(a);
  CHECK(cause(d, IdleCause::kHostCpu) == us(890));
  CHECK(part(d, HostPart::kInputPipeline) == us(325));  // [100, 425)
  CHECK(part(d, HostPart::kFramework) == us(175));      // [425, 600)
  CHECK(part(d, HostPart::kOther) == us(200));          // [700, 900)
  CHECK(part(d, HostPart::kUnknown) == us(190));        // [600, 700) and [900, 990)
  REQUIRE(labels(d, HostPart::kInputPipeline).size() == 1);
  CHECK(labels(d, HostPart::kInputPipeline)[0].name == "proj/train.py:42 in train");
  CHECK(labels(d, HostPart::kInputPipeline)[0].ns == us(325));
  REQUIRE(labels(d, HostPart::kFramework).size() == 1);
  CHECK(labels(d, HostPart::kFramework)[0].name == "proj/model.py:30 in forward");
  REQUIRE(labels(d, HostPart::kOther).size() == 1);
  CHECK(labels(d, HostPart::kOther)[0].name == "proj/metrics.py:17 in compute_metrics");
  CHECK(labels(d, HostPart::kUnknown).empty());
  CHECK(d.host_evidence == HostEvidence::kPythonSamples);
  CHECK(d.python_samples == 4);
  CHECK(d.longest_gaps.at(0).host_by_part_ns == d.host_cpu_by_part_ns);
  CHECK(a.python_sampler);
  CHECK(a.python_samples == 5);
}

TEST_CASE("two samples closer than two periods share the time between them at their midpoint") {
  // Period 100 us: 200 would reach 300 and 260 back to 160; each takes the side nearer to it.
  EngineFeed feed = oneHostGap();
  feed.add(pythonSample(kMain, us(200), kLoaderStack, us(100)))
      .add(pythonSample(kMain, us(260), kMetricsStack, us(100)));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(part(d, HostPart::kInputPipeline) == us(130));  // [100, 230)
  CHECK(part(d, HostPart::kOther) == us(130));          // [230, 360)
  CHECK(part(d, HostPart::kUnknown) == us(890 - 260));
}

TEST_CASE("a sample speaks for one period either side, and time no sample covers stays unknown, not other") {
  EngineFeed feed = oneHostGap();
  feed.add(pythonSample(kMain, us(500), kMetricsStack, us(100)));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(part(d, HostPart::kOther) == us(200));  // [400, 600)
  CHECK(part(d, HostPart::kUnknown) == us(690));
  CHECK(part(d, HostPart::kInputPipeline) + part(d, HostPart::kFramework) == 0);
}

TEST_CASE("a sample does not speak across a call of its thread: the call ends the stretch it sampled") {
  // Period 200 us. A CUDA call [400, 420) between samples at 300 and 470: 300 stops at the call
  // (not at 500, nor at the midpoint 385), 470 starts when it returned (not at 270).
  EngineFeed feed = oneHostGap();
  feed.add(pythonSample(kMain, us(300), kMetricsStack, us(200)))
      .add(call(v1::API_KIND_OTHER, kMain, us(400), us(420)))
      .add(pythonSample(kMain, us(470), kLoggingStack, us(200)));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kCudaApi) == us(20));
  CHECK(cause(d, IdleCause::kHostCpu) == us(870));
  const std::vector<HostLabel>& other = labels(d, HostPart::kOther);
  REQUIRE(other.size() == 2);
  CHECK(other[0].name == "proj/metrics.py:17 in compute_metrics");
  CHECK(other[0].ns == us(300));  // [100, 400)
  CHECK(other[1].name == "proj/logger.py:9 in log");
  CHECK(other[1].ns == us(250));  // [420, 670)
  CHECK(part(d, HostPart::kUnknown) == us(320));  // [670, 990)
}

TEST_CASE("a sample read while its thread was inside a recorded call covers nothing") {
  // An NCCL call [150, 450) is open at 300: the sampler does not count it as CUDA, the engine does.
  EngineFeed feed = oneHostGap();
  feed.add(ncclCall(kMain, us(150), us(450))).add(pythonSample(kMain, us(300), kMetricsStack, us(400)));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(cause(d, IdleCause::kNcclHost) == us(300));
  CHECK(part(d, HostPart::kOther) == 0);
  CHECK(part(d, HostPart::kUnknown) == us(590));
  CHECK(d.python_samples == 0);
  CHECK(d.host_evidence == HostEvidence::kNone);
}

TEST_CASE("a sample whose stack could not be read covers its time as unknown, and takes its share of it") {
  // Period 100 us: 300, 400 (unreadable) and 500 share at 350 and 450; a stack whose definition
  // never came and one with no frame are unknown too.
  EngineFeed feed = oneHostGap();
  feed.add(pythonSample(kMain, us(300), kLoaderStack, us(100)))
      .add(pythonSample(kMain, us(400), 0, us(100)))
      .add(pythonSample(kMain, us(500), kLoaderStack, us(100)))
      .add(pythonSample(kMain, us(750), 99, us(50)))
      .add(pythonSample(kMain, us(900), kNoFrameStack, us(50)));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(part(d, HostPart::kInputPipeline) == us(300));  // [200, 350) and [450, 600)
  CHECK(part(d, HostPart::kUnknown) == us(590));
  CHECK(d.python_samples == 2);  // only readable stacks count as evidence
}

TEST_CASE("a sample of the compilers is warm-up evidence, named by its compiler frame") {
  EngineFeed feed = oneHostGap();
  feed.add(pythonSample(kMain, us(500), kCompileStack, us(300)));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(part(d, HostPart::kFramework) == us(600));  // [200, 800): Dynamo is torch
  CHECK(d.warmup_host_by_part_ns[static_cast<std::size_t>(HostPart::kFramework)] == us(600));
  CHECK(d.warmup_by_cause_ns[static_cast<std::size_t>(IdleCause::kHostCpu)] == us(600));
  REQUIRE(d.longest_gaps.size() == 1);
  CHECK(d.longest_gaps[0].warmup_evidence == "_dynamo/convert_frame.py:650 in _compile (a sampled Python stack)");
  CHECK(labels(d, HostPart::kFramework).at(0).name == "proj/train.py:44 in train");
}

TEST_CASE("a sample counts once on each device whose host time it covered; a launch ends its stretch") {
  // Device 0: kernels [0, 100) and [200, 300), the second launched at [190, 200); device 1: kernels
  // [0, 100) and [300, 400), launched at [290, 300). One sample at 150 of period 1 ms: the launch
  // at 190 ends its stretch, so it covers [100, 190) of both gaps and nothing after.
  EngineFeed feed;
  nameStacks(feed.withSampler())
      .add(launch(kMain, us(0), us(0) + 500, 1))
      .add(launch(kMain, us(190), us(200), 2))
      .add(launch(kMain, us(290), us(300), 3))
      .add(kernelAt(us(0), us(100), 1))
      .add(kernelAt(us(200), us(300), 2))
      .add(work(v1::ACTIVITY_KIND_KERNEL, us(0), us(100), 4, 7, 1))
      .add(work(v1::ACTIVITY_KIND_KERNEL, us(300), us(400), 3, 7, 1))
      .add(pythonSample(kMain, us(150), kMetricsStack, us(1000)));
  const ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.size() == 2);
  const DeviceAnalysis& d0 = a.devices[0];
  const DeviceAnalysis& d1 = a.devices[1];
  CHECK(part(d0, HostPart::kOther) == us(90));
  CHECK(part(d0, HostPart::kUnknown) == 0);
  CHECK(part(d1, HostPart::kOther) == us(90));    // [100, 190)
  CHECK(part(d1, HostPart::kUnknown) == us(90));  // [200, 290): after the launch, a stretch it was not taken in
  CHECK(d0.python_samples == 1);
  CHECK(d1.python_samples == 1);
}

TEST_CASE("a trace's host ranges, where the recording holds them, are the evidence instead of samples") {
  EngineFeed feed = oneHostGap();
  feed.name(v1::STRING_KIND_HOST_RANGE_NAME, 1, "aten::linear")
      .add(hostRange(v1::HOST_RANGE_KIND_FRAMEWORK_OP, kMain, us(100), us(200), 1))
      .add(pythonSample(kMain, us(500), kLoaderStack, us(400)));
  const DeviceAnalysis d = onlyDevice(feed.run());
  CHECK(d.host_evidence == HostEvidence::kTraceHostEvents);
  CHECK(part(d, HostPart::kFramework) == us(100));
  CHECK(part(d, HostPart::kInputPipeline) == 0);
  CHECK(d.python_samples == 0);
}

TEST_CASE("without samples or ranges the split's evidence is none") {
  const ProcessAnalysis a = oneHostGap().run();
  const DeviceAnalysis d = onlyDevice(a);
  CHECK(d.host_evidence == HostEvidence::kNone);
  CHECK(part(d, HostPart::kUnknown) == us(890));
  CHECK(a.python_sampler);
  CHECK(a.python_samples == 0);
}

TEST_CASE("sample spans are forgotten once the device has passed them") {
  // 20 000 steps of 1 ms (20 s, far past the reorder window), each with 900 us of host time and
  // two samples in it.
  AnalysisPipeline pipeline;
  auto& idle = pipeline.emplaceStage<DeviceIdleStage>(pipeline.options());
  pipeline.onHello(helloFor(true, 0, true), 0);
  StringTable strings;
  strings.define(v1::STRING_KIND_PYTHON_STACK, kMetricsStack, "compute_metrics\t" + kUser + "metrics.py\t17\n");
  constexpr uint64_t kSteps = 20000;
  std::size_t most_held = 0;
  for (uint64_t i = 0; i < kSteps; ++i) {
    DecodedBatch batch;
    const uint64_t t = us(1000) * i;
    batch.python_samples.push_back(pythonSample(kMain, t + us(300), kMetricsStack, us(300)));
    batch.python_samples.push_back(pythonSample(kMain, t + us(600), kMetricsStack, us(300)));
    batch.api_calls.push_back(launch(kMain, t + us(900), t + us(905), i + 1));
    batch.activities.push_back(kernelAt(t + us(905), t + us(1000), i + 1));
    pipeline.onBatch(batch, strings);
    most_held = std::max(most_held, idle.heldCalls());
  }
  StreamHealth health;
  health.has_goodbye = true;
  const ProcessAnalysis a = pipeline.finish(ReadResult{}, health);
  CHECK(most_held < 2100);
  REQUIRE(a.devices.size() == 1);
  // Each gap [t + 1000, t + 1905): the step's host time [t + 1000, t + 1900) is the samples' own
  // ([t + 1000, t + 1450) and [t + 1450, t + 1900)), the launch's 5 us is launch overhead.
  const DeviceAnalysis& d = a.devices[0];
  CHECK(d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kOther)] == (kSteps - 1) * us(900));
  CHECK(d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kUnknown)] == 0);
  CHECK(d.python_samples == 2 * (kSteps - 1));
}

TEST_CASE("a short copy that held a long gap waited for its stream: a dependency, not a blocking copy") {
  // A 60-byte host-to-device copy stuck 492 ms behind a stream wait on an event whose work is not
  // on this timeline (queued before the window): the thread sat in the copy call, the device idled.
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1)).add(kernelAt(us(10), ms(1), 1));
  feed.add(call(v1::API_KIND_STREAM_WAIT_EVENT, 1, ms(1) + us(10), ms(1) + us(12), 0, false, 9));
  feed.add(call(v1::API_KIND_MEMCPY_ASYNC, 1, ms(1) + us(20), ms(493) + us(10), 2, true, 9));
  DeviceActivityEvent copy = copyAt(ms(493), ms(493) + us(2), 2, v1::MEMORY_KIND_PAGEABLE);
  copy.stream = 9;
  copy.bytes = 60;
  feed.add(copy);
  const ProcessAnalysis a = feed.run();
  const DeviceAnalysis& d = a.devices[0];
  CHECK(d.idle_by_cause_ns[static_cast<std::size_t>(IdleCause::kSyncCopy)] == 0);
  CHECK(d.idle_by_cause_ns[static_cast<std::size_t>(IdleCause::kDependency)] >= ms(491));
  CHECK(d.copy_waits == 1);
  CHECK(d.copy_wait_ns >= ms(491));
}

TEST_CASE("a slow short copy without a stream wait before it stays a blocking copy") {
  // The same copy without the stream wait: a slowly staged pageable copy (a loaded host) is what
  // the recording shows, and nothing says it waited for anything else.
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1)).add(kernelAt(us(10), ms(1), 1));
  feed.add(call(v1::API_KIND_MEMCPY_ASYNC, 1, ms(1) + us(20), ms(493) + us(10), 2, true, 9));
  DeviceActivityEvent copy = copyAt(ms(493), ms(493) + us(2), 2, v1::MEMORY_KIND_PAGEABLE);
  copy.stream = 9;
  feed.add(copy);
  const ProcessAnalysis a = feed.run();
  CHECK(a.devices[0].idle_by_cause_ns[static_cast<std::size_t>(IdleCause::kSyncCopy)] >= ms(491));
  CHECK(a.devices[0].copy_waits == 0);
}

TEST_CASE("a copy whose own transfer filled the gap it held is still a blocking copy") {
  // A pageable 64 MB copy: the call blocks while its transfer runs, as long as the transfer.
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1)).add(kernelAt(us(10), ms(1), 1));
  feed.add(call(v1::API_KIND_MEMCPY, 1, ms(1) + us(20), ms(9), 2, true));
  feed.add(copyAt(ms(3), ms(9) - us(5), 2, v1::MEMORY_KIND_PAGEABLE));
  const ProcessAnalysis a = feed.run();
  const DeviceAnalysis& d = a.devices[0];
  CHECK(d.idle_by_cause_ns[static_cast<std::size_t>(IdleCause::kSyncCopy)] > ms(1));
  CHECK(d.copy_waits == 0);
}

TEST_CASE("a copy behind a stream wait names the wait, and no event record before it means before the window") {
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1)).add(kernelAt(us(10), ms(1), 1));
  feed.add(call(v1::API_KIND_STREAM_WAIT_EVENT, 1, ms(1) + us(10), ms(1) + us(12), 0, false, 9));
  feed.add(call(v1::API_KIND_MEMCPY, 1, ms(1) + us(20), ms(493) + us(10), 2, true, 9));
  DeviceActivityEvent copy = copyAt(ms(493), ms(493) + us(2), 2, v1::MEMORY_KIND_PAGEABLE);
  copy.stream = 9;
  copy.bytes = 60;
  feed.add(copy);
  const CopyWait& w = feed.run().devices[0].longest_copy_wait;
  CHECK(w.wait_ns >= ms(491));
  CHECK(w.copy_enter_ns == ms(1) + us(20));
  CHECK(w.stream_wait_ns == ms(1) + us(10));
  CHECK(w.bytes == 60);
  CHECK(w.thread_id == 1);
  CHECK_FALSE(w.event_record_seen);
}

TEST_CASE("a copy behind a stream wait names the latest event record before the wait") {
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1)).add(kernelAt(us(10), ms(1), 1));
  feed.add(call(v1::API_KIND_EVENT_RECORD, 2, us(400), us(402), 0, false, 4));
  feed.add(call(v1::API_KIND_STREAM_WAIT_EVENT, 1, ms(1) + us(10), ms(1) + us(12), 0, false, 9));
  feed.add(call(v1::API_KIND_MEMCPY, 1, ms(1) + us(20), ms(493) + us(10), 2, true, 9));
  DeviceActivityEvent copy = copyAt(ms(493), ms(493) + us(2), 2, v1::MEMORY_KIND_PAGEABLE);
  copy.stream = 9;
  feed.add(copy);
  const CopyWait& w = feed.run().devices[0].longest_copy_wait;
  CHECK(w.wait_ns >= ms(491));
  CHECK(w.event_record_seen);
  CHECK(w.event_record_ns == us(400));
  CHECK(w.event_record_thread == 2);
}

TEST_CASE("a copy queued behind a launch that came after the stream wait did not wait for the event") {
  // wait, launch, copy on one stream: the copy is queued behind the launch, not right behind the
  // wait, so nothing says the wait is what held it.
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1)).add(kernelAt(us(10), ms(1), 1));
  feed.add(call(v1::API_KIND_STREAM_WAIT_EVENT, 1, ms(1) + us(10), ms(1) + us(12), 0, false, 9));
  feed.add(call(v1::API_KIND_LAUNCH, 1, ms(1) + us(14), ms(1) + us(18), 3, false, 9));
  feed.add(call(v1::API_KIND_MEMCPY, 1, ms(1) + us(20), ms(493) + us(10), 2, true, 9));
  DeviceActivityEvent copy = copyAt(ms(493), ms(493) + us(2), 2, v1::MEMORY_KIND_PAGEABLE);
  copy.stream = 9;
  feed.add(copy);
  const ProcessAnalysis a = feed.run();
  CHECK(a.devices[0].copy_waits == 0);
  CHECK(a.devices[0].longest_copy_wait.wait_ns == 0);
}
