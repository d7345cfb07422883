// tests/unit/analysis_pipeline_test.cpp: the engine on whole .gwt files: analyzeFile reads a
// recording written byte by byte, fills the process's identity, drops and the stages' parts, and
// says when the recording was cut short.

#include <catch2/catch.hpp>

#include "analysis/run_analysis.h"
#include "analysis_test_events.h"
#include "gwt_test_writer.h"

#include <cstdio>
#include <string>

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

std::string tempPath(const char* name) { return std::string("/tmp/gapwatch_analysis_") + name + ".gwt"; }

gapwatch::test::GwtBytes recording(bool with_goodbye) {
  gapwatch::test::BatchContents calls;
  calls.sequence = 0;
  calls.base_time_ns = ms(1000);
  calls.api_calls = {launch(100, ms(1000) + us(10), ms(1000) + us(15), 1),
                     call(v1::API_KIND_STREAM_SYNC, 100, ms(1000) + us(20), ms(1000) + us(203), 0, true),
                     launch(100, ms(1000) + us(250), ms(1000) + us(255), 2)};
  calls.drops = {{v1::DROP_SOURCE_THREAD_RING, 100, 3}};
  gapwatch::test::BatchContents records;
  records.sequence = 1;
  records.base_time_ns = ms(1000);
  records.activities = {kernelAt(ms(1000) + us(100), ms(1000) + us(200), 1),
                        kernelAt(ms(1000) + us(257), ms(1000) + us(300), 2)};
  v1::Hello hello = gapwatch::test::makeHello(4242, ms(900));
  hello.set_rank(1);
  gapwatch::test::GwtBytes bytes;
  bytes.hello(hello).batch(gapwatch::test::encodeBatch(calls)).batch(gapwatch::test::encodeBatch(records));
  if (with_goodbye) {
    v1::Goodbye goodbye;
    goodbye.set_end_time_ns(ms(1001));
    goodbye.set_exit_reason(v1::EXIT_REASON_NORMAL);
    bytes.goodbye(goodbye);
  }
  return bytes;
}

}  // namespace

TEST_CASE("analyzeFile runs the standard stages over a recording") {
  const std::string path = tempPath("complete");
  recording(true).writeTo(path);
  ReadResult read;
  const ProcessAnalysis a = analyzeFile(path, AnalysisOptions{}, &read);
  std::remove(path.c_str());
  CHECK(read.ok());
  CHECK(a.pid == 4242);
  CHECK(a.host == "testhost");
  REQUIRE(a.rank);
  CHECK(*a.rank == 1);
  CHECK(a.probes == std::vector<std::string>{"cupti_runtime_callbacks", "cupti_activity"});
  CHECK(a.device_timeline);
  CHECK_FALSE(a.truncated);
  CHECK(a.events_dropped == 3);
  CHECK(a.late_events == 0);
  REQUIRE(a.devices.size() == 1);
  const DeviceAnalysis& d = a.devices[0];
  CHECK(d.idle_ns == us(57));
  CHECK(d.after_sync_ns == us(57));
  CHECK(cause(d, IdleCause::kCudaApi) == us(3));  // the sync's own return, [200, 203)
  CHECK(cause(d, IdleCause::kHostCpu) == us(49));
  CHECK(cause(d, IdleCause::kLaunchOverhead) == us(5));
  CHECK(d.leading_ns == ms(1000) + us(100) - ms(400));  // makeHello: process start 500 ms before
  CHECK(a.launches.launches == 2);
  CHECK(a.sync_points[static_cast<std::size_t>(SyncPointKind::kStreamSync)].count == 1);
}

TEST_CASE("a recording without its Goodbye is analysed up to where it ends and marked truncated") {
  const std::string path = tempPath("no_goodbye");
  recording(false).writeTo(path);
  ReadResult read;
  const ProcessAnalysis a = analyzeFile(path, AnalysisOptions{}, &read);
  std::remove(path.c_str());
  CHECK(read.ok());
  CHECK(a.truncated);
  REQUIRE(a.devices.size() == 1);
  CHECK(a.devices[0].idle_ns == us(57));
}

TEST_CASE("a file that cannot be read gives an error and an empty analysis") {
  ReadResult read;
  const ProcessAnalysis a = analyzeFile("/nonexistent/gapwatch.gwt", AnalysisOptions{}, &read);
  CHECK_FALSE(read.ok());
  CHECK(a.devices.empty());
}

TEST_CASE("idle cause names are the ground truth's keys") {
  CHECK(std::string(idleCauseName(IdleCause::kHostCpu)) == "host_cpu");
  CHECK(std::string(idleCauseName(IdleCause::kLaunchOverhead)) == "launch_overhead");
  CHECK(std::string(idleCauseName(IdleCause::kSyncCopy)) == "sync_copy");
  CHECK(std::string(idleCauseName(IdleCause::kCudaApi)) == "cuda_api");
  CHECK(std::string(idleCauseName(IdleCause::kNcclHost)) == "nccl_host");
  CHECK(std::string(idleCauseName(IdleCause::kDependency)) == "dependency");
}

TEST_CASE("a live snapshot shows what the reordering window has released, and changes nothing") {
  // The recording above, then a kernel 4 s later: its arrival moves the window (2 s) past the
  // first two kernels, so a snapshot taken before the end has their gap, and the final analysis
  // also the long gap before the last kernel.
  gapwatch::test::GwtBytes bytes = recording(true);
  gapwatch::test::BatchContents late;
  late.sequence = 2;
  late.base_time_ns = ms(5000);
  late.activities = {kernelAt(ms(5000), ms(5000) + us(50), 3)};
  bytes.batch(gapwatch::test::encodeBatch(late));
  const std::string path = tempPath("snapshot");
  bytes.writeTo(path);
  ProcessAnalyser process(AnalysisOptions{});
  StreamDecoder decoder(process);
  const ReadResult read = readRecordingFile(path, decoder);
  std::remove(path.c_str());
  REQUIRE(read.ok());

  const ProcessAnalysis live = process.snapshot();
  CHECK(live.pid == 4242);
  REQUIRE(live.rank);
  CHECK(*live.rank == 1);
  CHECK(live.events_dropped == 3);
  REQUIRE(live.devices.size() == 1);
  CHECK(live.devices[0].kernels == 2);  // the last one is still in the window
  CHECK(live.devices[0].idle_ns == us(57));
  CHECK(cause(live.devices[0], IdleCause::kHostCpu) == us(49));
  CHECK(live.launches.launches == 2);
  CHECK(live.sync_points[static_cast<std::size_t>(SyncPointKind::kStreamSync)].count == 1);
  CHECK(live.findings.empty());  // no diagnosis: that needs the whole recording

  // A second snapshot says the same: taking one changed nothing.
  CHECK(process.snapshot().devices[0].idle_ns == us(57));
  const ProcessOutcome outcome = process.finish(read, decoder.health());
  REQUIRE(outcome.analysis.devices.size() == 1);
  CHECK(outcome.analysis.devices[0].kernels == 3);
  CHECK(outcome.analysis.devices[0].idle_ns == us(57) + (ms(5000) - (ms(1000) + us(300))));
  CHECK(outcome.analysis.launches.launches == 2);
}
