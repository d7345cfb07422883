// tests/unit/basic_report_test.cpp: the basic report's numbers on cases computed by hand: busy as
// the union of overlapping streams, idle gaps inside the window only, zero-length kernels, ties,
// the log2 histogram's bucket edges, sync points by type, drops, leading time, and what the report
// claims when no device activity was recorded.

#include <catch2/catch.hpp>

#include "collector/basic_report.h"
#include "collector/byte_source.h"
#include "collector/device_busy.h"
#include "collector/gap_histogram.h"
#include "collector/recording.h"
#include "gwt_test_writer.h"

#include <vector>

namespace {

using namespace gapwatch;
using test::kernel;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;

BusySummary busyOf(std::vector<Interval> intervals) { return summarizeBusy(intervals); }

BasicReport reportOf(const std::vector<DeviceActivityEvent>& activities,
                     const std::vector<ApiCallEvent>& api_calls = {},
                     std::optional<v1::Hello> hello = test::makeHello()) {
  BasicReportBuilder builder;
  if (hello) builder.onHello(*hello, 0);
  for (const auto& a : activities) builder.addActivity(a);
  for (const auto& c : api_calls) builder.addApiCall(c);
  return builder.finish(StreamHealth{});
}

}  // namespace

TEST_CASE("busy time counts overlapping streams once and idle is the rest of the window") {
  // stream 1: [100, 300] and [1000, 1100]; stream 2: [200, 400], overlapping the first.
  const BusySummary s = busyOf({{100, 300}, {1000, 1100}, {200, 400}});
  CHECK(s.window_start_ns == 100);
  CHECK(s.window_end_ns == 1100);
  CHECK(s.windowNs() == 1000);
  CHECK(s.busy_ns == 400);  // [100, 400] and [1000, 1100]
  CHECK(s.idle_ns == 600);  // [400, 1000]
  CHECK(s.gaps.count() == 1);
  CHECK(s.idleFraction() == Approx(0.6));
}

TEST_CASE("an interval inside another adds nothing and does not end the run") {
  const BusySummary s = busyOf({{0, 1000}, {100, 200}, {1500, 1600}});
  CHECK(s.busy_ns == 1100);
  CHECK(s.idle_ns == 500);
  CHECK(s.gaps.count() == 1);
}

TEST_CASE("time before the first and after the last activity is outside the window, not idle") {
  v1::Hello hello = test::makeHello();
  hello.set_process_start_ns(1 * kS);
  hello.set_start_time_ns(2 * kS);
  BasicReportBuilder builder;
  builder.onHello(hello, 0);
  builder.addActivity(kernel(0, 1, 5 * kS, 5 * kS + 10 * kUs));
  builder.addActivity(kernel(0, 1, 5 * kS + 30 * kUs, 5 * kS + 40 * kUs));
  v1::Goodbye goodbye;
  goodbye.set_end_time_ns(9 * kS);
  builder.onGoodbye(goodbye, 0);
  const BasicReport r = builder.finish(StreamHealth{});

  REQUIRE(r.devices.size() == 1);
  const BusySummary& s = r.devices[0].busy;
  CHECK(s.windowNs() == 40 * kUs);
  CHECK(s.busy_ns == 20 * kUs);
  CHECK(s.idle_ns == 20 * kUs);
  CHECK(r.leading_reference == LeadingReference::kProcessStart);
  REQUIRE(r.leading_ns);
  CHECK(*r.leading_ns == 4 * kS);
  CHECK(r.devices[0].leading_ns == 4 * kS);
  CHECK(r.span_start_ns == 2 * kS);
  CHECK(r.span_end_ns == 9 * kS);
}

TEST_CASE("without a process start, leading time runs from the recording start") {
  v1::Hello hello = test::makeHello();
  hello.set_process_start_ns(0);
  hello.set_start_time_ns(2 * kS);
  const BasicReport r = reportOf({kernel(0, 1, 3 * kS, 3 * kS + 1)}, {}, hello);
  CHECK(r.leading_reference == LeadingReference::kRecordingStart);
  CHECK(r.leading_ns == 1 * kS);

  const BasicReport without_hello = reportOf({kernel(0, 1, 3 * kS, 3 * kS + 1)}, {}, std::nullopt);
  CHECK(without_hello.leading_reference == LeadingReference::kUnknown);
  CHECK_FALSE(without_hello.leading_ns);
}

TEST_CASE("a zero-length kernel adds no busy time but ends the gap it falls in") {
  const BusySummary with_zero = busyOf({{0, 1000}, {3000, 3000}, {6000, 7000}});
  CHECK(with_zero.busy_ns == 2000);
  CHECK(with_zero.idle_ns == 5000);
  CHECK(with_zero.gaps.count() == 2);
  // [1000, 3000) and [3000, 6000): both in the [2 us, 4 us) bucket.
  CHECK(with_zero.gaps.bucket(2).count == 2);
  CHECK(with_zero.gaps.bucket(2).total_ns == 5000);

  const BusySummary without = busyOf({{0, 1000}, {6000, 7000}});
  CHECK(without.idle_ns == 5000);
  CHECK(without.gaps.count() == 1);
  CHECK(without.gaps.bucket(3).count == 1);  // [4 us, 8 us)
}

TEST_CASE("a zero-length kernel alone makes a zero-length window") {
  const BusySummary s = busyOf({{500, 500}});
  CHECK(s.windowNs() == 0);
  CHECK(s.busy_ns == 0);
  CHECK(s.idle_ns == 0);
  CHECK(s.idleFraction() == 0.0);
}

TEST_CASE("intervals that touch or start together leave no gap") {
  const BusySummary s = busyOf({{10, 20}, {0, 10}, {10, 15}, {20, 20}, {20, 30}});
  CHECK(s.windowNs() == 30);
  CHECK(s.busy_ns == 30);
  CHECK(s.idle_ns == 0);
  CHECK(s.gaps.count() == 0);
}

TEST_CASE("idle gaps go into log2 buckets from under 1 us to 1 s and over") {
  CHECK(GapHistogram::bucketOf(1) == 0);
  CHECK(GapHistogram::bucketOf(999) == 0);
  CHECK(GapHistogram::bucketOf(1 * kUs) == 1);
  CHECK(GapHistogram::bucketOf(2 * kUs - 1) == 1);
  CHECK(GapHistogram::bucketOf(2 * kUs) == 2);
  CHECK(GapHistogram::bucketOf(4 * kUs) == 3);
  CHECK(GapHistogram::bucketOf(5 * kUs) == 3);
  CHECK(GapHistogram::bucketOf(524'288 * kUs - 1) == 19);
  CHECK(GapHistogram::bucketOf(524'288 * kUs) == 20);
  CHECK(GapHistogram::bucketOf(kS - 1) == 20);
  CHECK(GapHistogram::bucketOf(kS) == 21);
  CHECK(GapHistogram::bucketOf(3600 * kS) == 21);

  // Every bucket's bounds agree with bucketOf, and the buckets tile [0, infinity).
  for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
    CAPTURE(b);
    CHECK(GapHistogram::bucketOf(std::max<uint64_t>(GapHistogram::lowerNs(b), 1)) == b);
    if (b + 1 < GapHistogram::kBucketCount) {
      CHECK(GapHistogram::bucketOf(GapHistogram::upperNs(b) - 1) == b);
      CHECK(GapHistogram::upperNs(b) == GapHistogram::lowerNs(b + 1));
    }
  }
  CHECK(GapHistogram::upperNs(GapHistogram::kBucketCount - 1) == UINT64_MAX);
}

TEST_CASE("the histogram counts gaps and their time, a thousand small ones beside one large one") {
  GapHistogram h;
  for (int i = 0; i < 1000; ++i) h.add(5 * kUs);
  h.add(5 * kMs);
  h.add(0);  // not a gap
  CHECK(h.count() == 1001);
  CHECK(h.totalNs() == 10 * kMs);
  const GapHistogram::Bucket& small = h.bucket(GapHistogram::bucketOf(5 * kUs));
  CHECK(small.count == 1000);
  CHECK(small.total_ns == 5 * kMs);
  const GapHistogram::Bucket& large = h.bucket(GapHistogram::bucketOf(5 * kMs));
  CHECK(large.count == 1);
  CHECK(large.total_ns == 5 * kMs);
}

TEST_CASE("every device has its own window, busy time and gaps") {
  const BasicReport r = reportOf({kernel(1, 7, 0, 100), kernel(0, 1, 50, 60), kernel(1, 7, 300, 400),
                                  kernel(0, 2, 60, 70)});
  REQUIRE(r.devices.size() == 2);
  CHECK(r.devices[0].device == 0);
  CHECK(r.devices[0].busy.windowNs() == 20);
  CHECK(r.devices[0].busy.idle_ns == 0);
  CHECK(r.devices[0].kernels == 2);
  CHECK(r.devices[1].device == 1);
  CHECK(r.devices[1].busy.windowNs() == 400);
  CHECK(r.devices[1].busy.idle_ns == 200);
  CHECK(r.device_coverage == DeviceCoverage::kRecorded);
}

TEST_CASE("copies and memsets are busy time, SYNC records are host-side and are not") {
  DeviceActivityEvent copy = kernel(0, 1, 100, 200);
  copy.kind = v1::ACTIVITY_KIND_MEMCPY;
  DeviceActivityEvent memset = kernel(0, 1, 300, 400);
  memset.kind = v1::ACTIVITY_KIND_MEMSET;
  DeviceActivityEvent sync = kernel(0, 0, 200, 300);
  sync.kind = v1::ACTIVITY_KIND_SYNC;
  DeviceActivityEvent sync_elsewhere = kernel(3, 0, 0, 1000);
  sync_elsewhere.kind = v1::ACTIVITY_KIND_SYNC;

  const BasicReport r = reportOf({copy, sync, memset, sync_elsewhere});
  REQUIRE(r.devices.size() == 1);  // device 3 had only a SYNC record
  CHECK(r.devices[0].memcpys == 1);
  CHECK(r.devices[0].memsets == 1);
  CHECK(r.devices[0].busy.busy_ns == 200);
  CHECK(r.devices[0].busy.idle_ns == 100);
  CHECK(r.activities == 4);
}

TEST_CASE("sync points are the blocked calls, by type, with their blocked time") {
  const std::vector<ApiCallEvent> calls = {
      test::apiCall(v1::API_KIND_STREAM_SYNC, 1, 0, 100, true),
      test::apiCall(v1::API_KIND_STREAM_SYNC, 1, 200, 250, true),
      test::apiCall(v1::API_KIND_DEVICE_SYNC, 1, 300, 1300, true),
      test::apiCall(v1::API_KIND_EVENT_SYNC, 1, 0, 7, true),
      test::apiCall(v1::API_KIND_MEMCPY, 1, 0, 20, true),
      test::apiCall(v1::API_KIND_MEMCPY, 1, 0, 20, false),  // small H2D: did not block
      test::apiCall(v1::API_KIND_MEMCPY_ASYNC, 1, 0, 30, true),
      test::apiCall(v1::API_KIND_MEMSET, 1, 0, 5, true),
      test::apiCall(v1::API_KIND_FREE, 1, 0, 40, true),
      test::apiCall(v1::API_KIND_MALLOC, 1, 0, 2, true),
      test::apiCall(v1::API_KIND_LAUNCH, 1, 0, 3, false),
      test::apiCall(v1::API_KIND_MODULE_LOAD, 1, 0, 9, true),
  };
  const BasicReport r = reportOf({}, calls);
  const SyncPointCounter& s = r.sync_points;
  CHECK(s.of(SyncPointKind::kStreamSync).count == 2);
  CHECK(s.of(SyncPointKind::kStreamSync).blocked_ns == 150);
  CHECK(s.of(SyncPointKind::kDeviceSync).blocked_ns == 1000);
  CHECK(s.of(SyncPointKind::kEventSync).count == 1);
  CHECK(s.of(SyncPointKind::kSyncCopy).count == 1);
  CHECK(s.of(SyncPointKind::kPageableAsyncCopy).blocked_ns == 30);
  CHECK(s.of(SyncPointKind::kMemset).count == 1);
  CHECK(s.of(SyncPointKind::kAllocFree).count == 2);
  CHECK(s.of(SyncPointKind::kAllocFree).blocked_ns == 42);
  CHECK(s.of(SyncPointKind::kOther).count == 1);
  CHECK(s.total().count == 10);
  CHECK(s.total().blocked_ns == 150 + 1000 + 7 + 20 + 30 + 5 + 42 + 9);
  CHECK(r.api_calls == 12);
  CHECK(r.launches == 1);
}

TEST_CASE("without the activity probe the report claims nothing about device idle time") {
  v1::Hello symbol_only = test::makeHello();
  symbol_only.clear_probes();
  symbol_only.add_probes(v1::PROBE_CUDART_HOOKS);
  const BasicReport r = reportOf(
      {}, {test::apiCall(v1::API_KIND_STREAM_SYNC, 1, 0, 100, true)}, symbol_only);
  CHECK(r.device_coverage == DeviceCoverage::kProbeInactive);
  CHECK(r.devices.empty());
  CHECK_FALSE(r.leading_ns);
  CHECK(r.sync_points.total().count == 1);  // host-side numbers are still there
}

TEST_CASE("with the activity probe on but no activity, the report says none was recorded") {
  const BasicReport r = reportOf({}, {test::apiCall(v1::API_KIND_LAUNCH, 1, 0, 100)});
  CHECK(r.device_coverage == DeviceCoverage::kNoneRecorded);
  CHECK(r.devices.empty());
}

TEST_CASE("drops come from the counters, Goodbye's totals and missing batches") {
  BasicReportBuilder builder;
  builder.onHello(test::makeHello(), 0);
  builder.addDrop({v1::DROP_SOURCE_THREAD_RING, 7, 10});
  builder.addDrop({v1::DROP_SOURCE_THREAD_RING, 8, 5});
  builder.addDrop({v1::DROP_SOURCE_TRANSPORT, 0, 40});
  v1::Goodbye goodbye;
  goodbye.set_events_dropped(12);  // an update of thread 7's counter was lost: Goodbye knows
  goodbye.set_cupti_records_dropped(3);
  builder.onGoodbye(goodbye, 0);
  StreamHealth health;
  health.batches_missing = 2;
  const BasicReport r = builder.finish(health);
  CHECK(r.drops.events_dropped == 15);
  CHECK(r.drops.cupti_records_dropped == 3);
  CHECK(r.drops.transport_events_dropped == 40);
  CHECK(r.drops.batches_missing == 2);
  CHECK(r.drops.any());
  CHECK_FALSE(reportOf({}).drops.any());
}

TEST_CASE("the report from a stream equals the report from the recording in memory") {
  test::GwtBytes gwt;
  gwt.hello(test::makeHello(7, 10 * kS));
  for (uint64_t sequence = 0; sequence < 3; ++sequence) {
    test::BatchContents batch;
    batch.sequence = sequence;
    batch.base_time_ns = 10 * kS + sequence * kMs;
    for (uint64_t i = 0; i < 20; ++i) {
      const uint64_t t = batch.base_time_ns + i * 40 * kUs;
      batch.activities.push_back(kernel(static_cast<uint32_t>(i % 2), i % 3, t, t + 25 * kUs));
      batch.api_calls.push_back(test::apiCall(v1::API_KIND_STREAM_SYNC, 9, t, t + 3 * kUs, true));
    }
    gwt.batch(test::encodeBatch(batch));
  }
  gwt.goodbye(v1::Goodbye());

  BasicReportBuilder builder;
  StreamDecoder decoder(builder);
  MemoryByteSource source(gwt.span());
  REQUIRE(readRecording(source, decoder).ok());
  const BasicReport streamed = builder.finish(decoder.health());

  MemoryByteSource again(gwt.span());
  const BasicReport from_memory = computeBasicReport(loadRecording(again).recording);

  REQUIRE(streamed.devices.size() == 2);
  REQUIRE(from_memory.devices.size() == 2);
  for (std::size_t d = 0; d < 2; ++d) {
    CHECK(streamed.devices[d].busy.busy_ns == from_memory.devices[d].busy.busy_ns);
    CHECK(streamed.devices[d].busy.idle_ns == from_memory.devices[d].busy.idle_ns);
    CHECK(streamed.devices[d].busy.gaps.count() == from_memory.devices[d].busy.gaps.count());
  }
  // Device 0 runs every other kernel: 10 per batch, 25 us each, never overlapping.
  CHECK(streamed.devices[0].busy.busy_ns == 30 * 25 * kUs);
  CHECK(streamed.sync_points.total().count == 60);
  CHECK(streamed.health.has_goodbye);
}
