// tests/unit/analysis_launch_stats_test.cpp: HTA's launch statistics, the queue depth and the
// host-side launch gaps on cases computed by hand.

#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "analysis/launch_stats.h"

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

// Three launches on stream 7 (the thread and times are the hand computation's):
//   L1 call [0, 5) us,    kernel [10, 12):   API 5, delay 5, kernel 2 < 5: a short kernel
//   L2 call [20, 80),     kernel [300, 400): API 60 (> 50: runtime outlier), delay 220 (> 100)
//   L3 call [100, 103),   kernel [400, 430): API 3, delay 297 (> 100)
EngineFeed threeLaunches() {
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1))
      .add(launch(1, us(20), us(80), 2))
      .add(launch(2, us(100), us(103), 3))
      .add(kernelAt(us(10), us(12), 1))
      .add(kernelAt(us(300), us(400), 2))
      .add(kernelAt(us(400), us(430), 3));
  return feed;
}

}  // namespace

TEST_CASE("HTA's launch statistics") {
  const LaunchStats s = threeLaunches().run().launches;
  CHECK(s.launches == 3);
  CHECK(s.api_total_ns == us(68));
  CHECK(s.api_p50_ns == us(5));  // sorted 3, 5, 60: rank ceil(1.5) = 2
  CHECK(s.api_p99_ns == us(60));
  CHECK(s.launch_delay_mean_ns == us(174));  // (5 + 220 + 297) / 3
  CHECK(s.launch_delay_p50_ns == us(220));
  CHECK(s.launch_delay_p99_ns == us(297));
  CHECK(s.short_kernels == 1);
  CHECK(s.runtime_outliers == 1);
  CHECK(s.launch_delay_outliers == 2);
  CHECK(s.kernels_under_20us == 1);
  CHECK(s.launches_per_second == Approx(3 / 420e-6));  // window [10, 430) us
}

TEST_CASE("launch delay is clipped at zero") {
  // A kernel that starts before its launch call returns (the call's exit is late).
  EngineFeed feed;
  feed.add(launch(1, us(0), us(50), 1)).add(kernelAt(us(10), us(30), 1));
  const LaunchStats s = feed.run().launches;
  CHECK(s.launches == 1);
  CHECK(s.launch_delay_mean_ns == 0);
  CHECK(s.launch_delay_p99_ns == 0);
}

TEST_CASE("queue depth: work whose call entered and that has not finished, per stream") {
  // Depth over time: [0, 12) 1, [12, 20) 0, [20, 100) 1, [100, 400) 2, [400, 430) 1. Max 2; time
  // at depth <= 1 is 130 of 430 us, so the time-weighted p99 is 2.
  const LaunchStats s = threeLaunches().run().launches;
  CHECK(s.queue_depth_max == 2);
  CHECK(s.queue_depth_p99 == 2);

  StreamQueueDepth q;
  q.add(us(0), us(12));
  q.add(us(20), us(400));
  q.add(us(100), us(430));
  q.finish();
  CHECK(q.max() == 2);
  CHECK(q.spanNs() == us(430));
  CHECK(q.percentile(30) == 1);  // depth <= 1 covers 130/430 = 30.2%
  CHECK(q.percentile(31) == 2);
  CHECK(q.percentile(1) == 0);   // depth 0 covers 8/430 = 1.9%
}

TEST_CASE("queue depth of a stream that is mostly idle") {
  StreamQueueDepth q;
  for (uint64_t i = 0; i < 100; ++i) q.add(us(100) * i, us(100) * i + us(1));
  q.finish();
  CHECK(q.max() == 1);
  CHECK(q.percentile(50) == 0);
  CHECK(q.percentile(99) == 1);  // depth 1 for 100 of 9901 us: more than the last 1%
}

TEST_CASE("host-side launch gaps: from one launch call's return to the next one's entry, per thread") {
  // Thread 1: L1 returns at 5, L2 enters at 20: one 15 us gap. Thread 2 launches once: no gap.
  const LaunchStats s = threeLaunches().run().launches;
  CHECK(s.host_launch_gaps.count() == 1);
  CHECK(s.host_launch_gaps.totalNs() == us(15));
  CHECK(s.host_launch_gaps.bucket(GapHistogram::bucketOf(us(15))).count == 1);
}

TEST_CASE("a graph launch is joined to its first kernel and counts once as a launch") {
  // Every kernel of the graph carries the cudaGraphLaunch's correlation id (1).
  EngineFeed feed;
  feed.add(call(v1::API_KIND_GRAPH_LAUNCH, 1, us(0), us(10), 1))
      .add(launch(1, us(40), us(45), 2))
      .add(kernelAt(us(20), us(30), 1))
      .add(kernelAt(us(31), us(35), 1))  // the graph's second kernel
      .add(kernelAt(us(50), us(60), 2));
  const LaunchStats s = feed.run().launches;
  CHECK(s.launches == 2);
  CHECK(s.graph_launches == 1);
  CHECK(s.graph_kernels == 2);
  CHECK(s.api_total_ns == us(15));             // 10 + 5
  CHECK(s.launch_delay_mean_ns == us(7) + 500);  // (10 + 5) / 2: the graph's delay is to its first kernel
  CHECK(s.launch_delay_p99_ns == us(10));
  CHECK(s.short_kernels == 0);  // a graph's kernels are not compared with its launch call
  CHECK(s.host_launch_gaps.count() == 1);
  CHECK(s.host_launch_gaps.totalNs() == us(30));
  CHECK(s.queue_depth_max == 2);  // both graph kernels are queued from 0
}

TEST_CASE("calls made during stream capture are captured, not launches") {
  // Thread 1 captures stream 7, forks stream 8 into the capture (event record, stream wait) and
  // launches on both; it then instantiates and launches the graph, whose two kernels run. Thread
  // 2 launches a kernel of its own meanwhile: that one runs.
  EngineFeed feed;
  feed.add(call(v1::API_KIND_CAPTURE_BEGIN, 1, us(0), us(5)))
      .add(launch(1, us(10), us(12), 1))
      .add(call(v1::API_KIND_MEMCPY_ASYNC, 1, us(13), us(15), 2))
      .add(call(v1::API_KIND_EVENT_RECORD, 1, us(16), us(17)))
      .add(call(v1::API_KIND_STREAM_WAIT_EVENT, 1, us(18), us(19), 0, false, 8))
      .add(launch(1, us(20), us(22), 3, 8))
      .add(call(v1::API_KIND_CAPTURE_END, 1, us(30), us(35)))
      .add(call(v1::API_KIND_GRAPH_INSTANTIATE, 1, us(40), us(100)))
      .add(call(v1::API_KIND_GRAPH_LAUNCH, 1, us(110), us(120), 10))
      .add(launch(2, us(15), us(18), 5))
      .add(kernelAt(us(20), us(25), 5))
      .add(kernelAt(us(130), us(140), 10))
      .add(kernelAt(us(140), us(150), 10));
  const LaunchStats s = feed.run().launches;
  CHECK(s.captured_calls == 5);
  CHECK(s.launches == 2);  // thread 2's launch and the graph launch
  CHECK(s.graph_launches == 1);
  CHECK(s.graph_kernels == 2);
  CHECK(s.api_total_ns == us(13));  // 3 + 10: captured launches are not timed
  CHECK(s.host_launch_gaps.count() == 0);  // thread 1's captured launches are no launches
}

TEST_CASE("without a device timeline, API times and host gaps still count") {
  EngineFeed feed;
  feed.add(launch(1, us(0), us(4), 1)).add(launch(1, us(10), us(16), 2));
  const LaunchStats s = feed.run(false).launches;
  CHECK(s.launches == 0);
  CHECK(s.api_total_ns == us(10));
  CHECK(s.api_p99_ns == us(6));
  CHECK(s.host_launch_gaps.count() == 1);
  CHECK(s.launches_per_second == 0);
}
