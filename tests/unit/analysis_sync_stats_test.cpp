// tests/unit/analysis_sync_stats_test.cpp: sync points by type on cases computed by hand: counts,
// blocked time, nearest-rank percentiles (exact, then from the bounded histogram), async copies
// that count only when their record shows pageable memory, and call sites not yet recorded.

#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "analysis/duration_percentiles.h"
#include "analysis/sync_stats.h"

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

const SyncTypeStats& of(const ProcessAnalysis& a, SyncPointKind kind) {
  REQUIRE(a.sync_points.size() == kSyncPointKindCount);
  return a.sync_points[static_cast<std::size_t>(kind)];
}

// A kernel queued at 0 that runs until 10 ms: every sync point of a test that enters before then
// waits for it for its whole duration.
// One query record: "not ready" (600, cudaErrorNotReady) unless it saw the work done.
ApiCallEvent poll(uint32_t thread_id, uint64_t enter_ns, uint64_t exit_ns, bool done) {
  ApiCallEvent e = call(v1::API_KIND_QUERY, thread_id, enter_ns, exit_ns);
  e.return_code = done ? 0 : 600;
  return e;
}

EngineFeed& withLongKernel(EngineFeed& feed) {
  return feed.add(launch(1, 0, us(1), 99)).add(kernelAt(us(1), ms(10), 99));
}

}  // namespace

TEST_CASE("nearest-rank percentiles are exact for small counts") {
  DurationPercentiles p;
  CHECK(p.percentile(50) == 0);
  for (uint64_t v : {7, 1, 9, 3, 5, 2, 8, 4, 10, 6}) p.add(v);
  CHECK(p.count() == 10);
  CHECK(p.percentile(50) == 5);   // v[ceil(5) - 1] = v[4]
  CHECK(p.percentile(99) == 10);  // v[ceil(9.9) - 1] = v[9]
  CHECK(p.percentile(10) == 1);
  DurationPercentiles one;
  one.add(42);
  CHECK(one.percentile(50) == 42);
  CHECK(one.percentile(99) == 42);
}

TEST_CASE("past the exact samples percentiles come from the histogram, within 1%") {
  DurationPercentiles p;
  for (uint64_t v = 1; v <= 100000; ++v) p.add(v * 1000);  // 1 us .. 100 ms
  CHECK(p.count() == 100000);
  CHECK(p.percentile(50) == Approx(50000 * 1000.0).epsilon(0.01));
  CHECK(p.percentile(99) == Approx(99000 * 1000.0).epsilon(0.01));
}

TEST_CASE("sync points are counted by type with their blocked time and percentiles") {
  EngineFeed feed;
  withLongKernel(feed);
  for (uint64_t i = 1; i <= 10; ++i) {
    feed.add(call(v1::API_KIND_STREAM_SYNC, 1, us(100) * i, us(100) * i + us(i), 0, true));
  }
  feed.add(call(v1::API_KIND_DEVICE_SYNC, 1, us(2000), us(2050), 0, true))
      .add(call(v1::API_KIND_MEMCPY, 1, us(3000), us(3010), 0, true))   // D2H: blocked
      .add(call(v1::API_KIND_MEMCPY, 1, us(3100), us(3105), 0, false))  // small H2D: did not block
      .add(call(v1::API_KIND_FREE, 1, us(3200), us(3230), 0, true))
      .add(call(v1::API_KIND_LAUNCH, 1, us(3300), us(3305), 0, false));
  const ProcessAnalysis a = feed.run();
  const SyncTypeStats& stream = of(a, SyncPointKind::kStreamSync);
  CHECK(stream.kind == SyncPointKind::kStreamSync);
  CHECK(stream.count == 10);
  CHECK(stream.total_ns == us(55));
  CHECK(stream.p50_ns == us(5));
  CHECK(stream.p99_ns == us(10));
  CHECK(of(a, SyncPointKind::kDeviceSync).total_ns == us(50));
  CHECK(of(a, SyncPointKind::kSyncCopy).count == 1);
  CHECK(of(a, SyncPointKind::kAllocFree).count == 1);
  CHECK(of(a, SyncPointKind::kEventSync).count == 0);
  CHECK(of(a, SyncPointKind::kEventSync).p50_ns == 0);
}

TEST_CASE("an async copy is a sync point only when its record shows a pageable host side") {
  EngineFeed feed;
  feed.add(call(v1::API_KIND_MEMCPY_ASYNC, 1, us(10), us(50), 1))
      .add(call(v1::API_KIND_MEMCPY_ASYNC, 1, us(60), us(65), 2))
      .add(call(v1::API_KIND_MEMCPY_ASYNC, 1, us(70), us(75), 3))  // its record never came
      .nextBatch()
      .add(copyAt(us(20), us(45), 1, v1::MEMORY_KIND_PAGEABLE, v1::COPY_KIND_D2H))
      .add(copyAt(us(66), us(70), 2, v1::MEMORY_KIND_PINNED));
  const ProcessAnalysis a = feed.run();
  const SyncTypeStats& pageable = of(a, SyncPointKind::kPageableAsyncCopy);
  CHECK(pageable.count == 1);
  CHECK(pageable.total_ns == us(35));  // it waited until its copy ended at 45 us
}

TEST_CASE("call sites the recorder did not record are listed as such") {
  EngineFeed feed;
  withLongKernel(feed);
  feed.add(call(v1::API_KIND_STREAM_SYNC, 1, us(10), us(20), 0, true))
      .add(call(v1::API_KIND_STREAM_SYNC, 1, us(30), us(35), 0, true));
  const ProcessAnalysis a = feed.run();
  const SyncTypeStats& stream = of(a, SyncPointKind::kStreamSync);
  REQUIRE(stream.top_call_sites.size() == 1);
  CHECK(stream.top_call_sites[0].name == kCallSiteNotRecorded);
  CHECK(stream.top_call_sites[0].count == 2);
  CHECK(stream.top_call_sites[0].total_ns == us(15));
  CHECK(of(a, SyncPointKind::kDeviceSync).top_call_sites.empty());
}

TEST_CASE("recorded call sites are named from the string table and ranked by blocked time") {
  AnalysisOptions options;
  options.top_n = 1;
  AnalysisPipeline pipeline(options);
  addStandardStages(pipeline);
  pipeline.onHello(helloFor(true), 0);
  StringTable strings;
  strings.define(v1::STRING_KIND_CALL_SITE, 1, "train.py:42 loss.item()");
  strings.define(v1::STRING_KIND_CALL_SITE, 2, "train.py:50 print(acc)");
  DecodedBatch batch;
  ApiCallEvent a = call(v1::API_KIND_STREAM_SYNC, 1, us(10), us(20), 0, true);
  a.call_site_id = 1;
  ApiCallEvent b = call(v1::API_KIND_STREAM_SYNC, 1, us(30), us(90), 0, true);
  b.call_site_id = 2;
  batch.api_calls = {launch(1, 0, us(1), 99), a, b};
  batch.activities = {kernelAt(us(1), ms(10), 99)};
  pipeline.onBatch(batch, strings);
  StreamHealth health;
  const ProcessAnalysis r = pipeline.finish(ReadResult{}, health);
  const SyncTypeStats& stream = of(r, SyncPointKind::kStreamSync);
  REQUIRE(stream.top_call_sites.size() == 1);
  CHECK(stream.top_call_sites[0].name == "train.py:50 print(acc)");
  CHECK(r.truncated);  // no Goodbye
}

TEST_CASE("a free on an idle device blocks for no time: its duration is host time in a CUDA call") {
  // A kernel [10, 100) us; then a 4.3 ms cudaFreeHost [200, 4500) with nothing queued; then the
  // next launch [4510, 4515) and its kernel at 4520. The gap [100, 4520) is 4300 us in the free
  // (cuda_api), 5 us in the launch, the other 115 us host CPU; no sync drained the queue.
  EngineFeed feed;
  feed.add(launch(1, 0, us(5), 1))
      .add(call(v1::API_KIND_HOST_FREE, 1, us(200), us(4500), 0, true))
      .add(launch(1, us(4510), us(4515), 2))
      .add(kernelAt(us(10), us(100), 1))
      .add(kernelAt(us(4520), us(4600), 2));
  const ProcessAnalysis a = feed.run();
  const SyncTypeStats& free = of(a, SyncPointKind::kAllocFree);
  CHECK(free.count == 1);
  CHECK(free.total_ns == 0);
  CHECK(free.p99_ns == 0);
  CHECK(free.idle_after_ns == 0);
  REQUIRE(a.devices.size() == 1);
  const DeviceAnalysis& d = a.devices[0];
  CHECK(cause(d, IdleCause::kCudaApi) == us(4300));
  CHECK(cause(d, IdleCause::kHostCpu) == us(115));
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(5));
  CHECK(d.after_sync_ns == 0);
}

TEST_CASE("a free that waits for queued work blocks until that work ends") {
  // The kernel queued before the free runs until 1000 us; the free [200, 1200) waited 800 us of
  // it, the last 200 us are the free's own host time.
  EngineFeed feed;
  feed.add(launch(1, 0, us(5), 1))
      .add(call(v1::API_KIND_FREE, 1, us(200), us(1200), 0, true))
      .add(launch(1, us(1300), us(1305), 2))
      .add(kernelAt(us(10), us(1000), 1))
      .add(kernelAt(us(1310), us(1400), 2));
  const ProcessAnalysis a = feed.run();
  const SyncTypeStats& free = of(a, SyncPointKind::kAllocFree);
  CHECK(free.count == 1);
  CHECK(free.total_ns == us(800));
  CHECK(free.idle_after_ns == us(310));  // the gap [1000, 1310) followed the drain
  REQUIRE(a.devices.size() == 1);
  CHECK(a.devices[0].after_sync_ns == us(310));
}

TEST_CASE("an event polling loop is one sync point with every poll counted") {
  // A kernel [10, 10000) us. Thread 1 polls its event 3400 times, one poll [8 + 3i, 9 + 3i) us,
  // the last at [10205, 10206) (it saw the kernel done); then it launches the next kernel, which
  // starts at 10220. The loop waited from its first poll to the kernel's end.
  EngineFeed feed;
  feed.add(launch(1, 0, us(5), 1)).add(call(v1::API_KIND_EVENT_RECORD, 1, us(6), us(7)));
  for (uint64_t i = 0; i < 3400; ++i) feed.add(poll(1, us(8 + 3 * i), us(9 + 3 * i), i == 3399));
  feed.add(launch(1, us(10210), us(10215), 2))
      .add(kernelAt(us(10), us(10000), 1))
      .add(kernelAt(us(10220), us(10300), 2));
  const ProcessAnalysis a = feed.run();
  const SyncTypeStats& polling = of(a, SyncPointKind::kQueryPolling);
  CHECK(polling.count == 1);
  CHECK(polling.polls == 3400);
  CHECK(polling.polling_ns == us(10206 - 8));
  CHECK(polling.total_ns == us(10000 - 8));
  CHECK(polling.idle_after_ns == us(220));  // it drained the queue: the gap [10000, 10220)
  REQUIRE(a.devices.size() == 1);
  CHECK(a.devices[0].after_sync_ns == us(220));
  CHECK(cause(a.devices[0], IdleCause::kCudaApi) == us(69));  // the 69 polls in [10000, 10206)
}

TEST_CASE("another call ends a polling loop; polls of other threads are loops of their own") {
  EngineFeed feed;
  withLongKernel(feed);
  for (uint64_t i = 0; i < 10; ++i) feed.add(poll(1, us(100 + 2 * i), us(101 + 2 * i), false));
  feed.add(call(v1::API_KIND_EVENT_RECORD, 1, us(130), us(131)));
  for (uint64_t i = 0; i < 5; ++i) feed.add(poll(1, us(140 + 2 * i), us(141 + 2 * i), false));
  for (uint64_t i = 0; i < 7; ++i) feed.add(poll(2, us(101 + 2 * i), us(102 + 2 * i), false));
  const ProcessAnalysis a = feed.run();
  const SyncTypeStats& polling = of(a, SyncPointKind::kQueryPolling);
  CHECK(polling.count == 3);
  CHECK(polling.polls == 22);
  CHECK(polling.polling_ns == us(19) + us(9) + us(13));
  CHECK(polling.total_ns == polling.polling_ns);  // the long kernel ran through all of them
}

TEST_CASE("a query that saw the work done ends its loop, so later sync points are counted as they settle") {
  // A side thread queries once, finds the work done, and never calls CUDA again; the main thread
  // synchronises 1000 times. None of those may wait for the side thread's next call to be counted
  // (that held every sync point of a long run in memory, and each activity scanned them all).
  AnalysisOptions options;
  SyncStatsStage stage(options, nullptr);
  stage.begin(RecordingFacts{});
  stage.onApiCall(poll(2, us(1), us(2), true));
  for (uint64_t i = 0; i < 1000; ++i) {
    stage.onApiCall(call(v1::API_KIND_STREAM_SYNC, 1, us(10 + 10 * i), us(12 + 10 * i), 0, true));
    stage.onActivity(kernelAt(us(13 + 10 * i), us(14 + 10 * i), i + 1));
  }
  CHECK(stage.pendingCalls() <= 2);
  stage.finish();
  CHECK(stage.pendingCalls() == 0);
}

TEST_CASE("sync times count without a device timeline too") {
  EngineFeed feed;
  feed.add(call(v1::API_KIND_DEVICE_SYNC, 1, us(10), us(40), 0, true));
  const ProcessAnalysis a = feed.run(false);
  CHECK(of(a, SyncPointKind::kDeviceSync).total_ns == us(30));
  CHECK(of(a, SyncPointKind::kDeviceSync).idle_after_ns == 0);
}
