// tests/unit/analysis_python_sites_test.cpp: calls recorded with Python stacks, as the report
// names them: sync sites by the user's line (stacks that differ only above it are one site), the
// idle each site's syncs drained, where the host came back after a long host gap, the findings'
// evidence and fixes that name those lines, and the stack misses counted by reason.

#include <catch2/catch.hpp>

#include "analysis/diagnosis.h"
#include "analysis/sync_stats.h"
#include "analysis_test_events.h"

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

// Innermost first, as the recorder writes them: torch's frame under the user's line 42 of
// train.py, reached from main (stack 1) or from evaluate (stack 2); a launch made at line 55
// through the DataLoader's __next__ (stack 3).
constexpr const char* kItemFromMain =
    "item\t/usr/lib/python3/dist-packages/torch/_tensor.py\t41\n"
    "step\t/home/u/train.py\t42\n"
    "main\t/home/u/train.py\t90\n"
    "<module>\t/home/u/train.py\t99\n";
constexpr const char* kItemFromEvaluate =
    "item\t/usr/lib/python3/dist-packages/torch/_tensor.py\t41\n"
    "step\t/home/u/train.py\t42\n"
    "evaluate\t/home/u/train.py\t70\n"
    "<module>\t/home/u/train.py\t99\n";
constexpr const char* kLaunchAfterNext =
    "__next__\t/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\t630\n"
    "train\t/home/u/train.py\t55\n"
    "<module>\t/home/u/train.py\t99\n";
constexpr const char* kStepSite = "u/train.py:42 in step (via torch/_tensor.py:41 in item)";
constexpr const char* kResumeSite = "u/train.py:55 in train (via data/dataloader.py:630 in __next__)";

ApiCallEvent withStack(ApiCallEvent e, uint32_t stack) {
  e.python_stack_id = stack;
  return e;
}

// Six steps of 42 ms. In each: kernel A [1 us, 10 ms); a stream sync (from stack 1, then 2, in
// turn) drains it and returns at 10.005 ms; 4 ms of host time; kernel B [14.01, 15) ms; 20 ms of
// host time; a launch from stack 3 and kernel C [35.01, 36) ms; 6 ms of host time to the next
// step. Only the gap after the sync (4.01 ms) is idle after a sync; only the 20 ms gap is a long
// host gap (the default threshold is 10 ms).
constexpr int kSteps = 6;
EngineFeed pythonJob() {
  EngineFeed feed;
  feed.name(v1::STRING_KIND_PYTHON_STACK, 1, kItemFromMain)
      .name(v1::STRING_KIND_PYTHON_STACK, 2, kItemFromEvaluate)
      .name(v1::STRING_KIND_PYTHON_STACK, 3, kLaunchAfterNext);
  for (int i = 0; i < kSteps; ++i) {
    const uint64_t t = ms(42) * uint64_t(i);
    const uint64_t c = 3 * uint64_t(i);
    feed.add(launch(1, t, t + us(1), c + 1))
        .add(withStack(call(v1::API_KIND_STREAM_SYNC, 1, t + us(100), t + ms(10) + us(5), 0, true), 1 + i % 2))
        .add(launch(1, t + ms(14), t + ms(14) + us(5), c + 2))
        .add(withStack(launch(1, t + ms(35), t + ms(35) + us(5), c + 3), 3))
        .add(kernelAt(t + us(1), t + ms(10), c + 1))
        .add(kernelAt(t + ms(14) + us(10), t + ms(15), c + 2))
        .add(kernelAt(t + ms(35) + us(10), t + ms(36), c + 3));
  }
  return feed;
}

const SyncTypeStats& streamSyncs(const ProcessAnalysis& a) {
  REQUIRE(a.sync_points.size() == kSyncPointKindCount);
  return a.sync_points[static_cast<std::size_t>(SyncPointKind::kStreamSync)];
}

const Finding* findingOf(const ProcessAnalysis& p, const std::string& id) {
  for (const Finding& f : p.findings)
    if (f.id == id) return &f;
  return nullptr;
}

const std::string* evidenceOf(const Finding& f, const std::string& name) {
  for (const auto& [key, value] : f.evidence)
    if (key == name) return &value;
  return nullptr;
}

}  // namespace

TEST_CASE("syncs from one user line are one site named by that line, with the idle they drained") {
  const ProcessAnalysis a = pythonJob().run();
  const SyncTypeStats& s = streamSyncs(a);
  REQUIRE(s.top_call_sites.size() == 1);
  const CallSite& site = s.top_call_sites[0];
  CHECK(site.name == kStepSite);
  CHECK(site.count == kSteps);
  CHECK(site.total_ns == s.total_ns);
  CHECK(site.idle_after_ns == kSteps * (ms(4) + us(10)));
  CHECK(site.idle_after_ns == s.idle_after_ns);
  // The whole stack of one of its calls, innermost first.
  REQUIRE(site.python_stack.size() == 4);
  CHECK(site.python_stack[0].function == "item");
  CHECK(site.python_stack[1].file == "/home/u/train.py");
  CHECK(site.python_stack[1].line == 42);
}

TEST_CASE("a long host gap names the line its ending launch was made at") {
  const ProcessAnalysis a = pythonJob().run();
  REQUIRE(a.devices.size() == 1);
  const DeviceAnalysis& d = a.devices[0];
  CHECK(d.long_host_gaps == kSteps);  // the 4 ms and 6 ms gaps are shorter than the 10 ms default
  REQUIRE(d.long_host_gap_sites.size() == 1);
  CHECK(d.long_host_gap_sites[0].name == kResumeSite);
  CHECK(d.long_host_gap_sites[0].gaps == kSteps);
  CHECK(d.long_host_gap_sites[0].host_cpu_ns >= kSteps * ms(19));
  CHECK(d.long_host_gap_sites[0].python_stack.size() == 3);
  // The gap's own description names the line too.
  bool named = false;
  for (const IdleGap& gap : d.longest_gaps) named = named || gap.queued_by.python_site == kResumeSite;
  CHECK(named);
}

TEST_CASE("a long host gap whose launch has no stack is counted but names no line") {
  EngineFeed feed;
  feed.add(launch(1, 0, us(1), 1))
      .add(launch(1, ms(30), ms(30) + us(5), 2))
      .add(kernelAt(us(1), ms(1), 1))
      .add(kernelAt(ms(30) + us(10), ms(31), 2));
  const ProcessAnalysis a = feed.run();
  REQUIRE(a.devices.size() == 1);
  CHECK(a.devices[0].long_host_gaps == 1);
  CHECK(a.devices[0].long_host_gap_sites.empty());
}

TEST_CASE("the sync finding's fix starts at the costliest Python line, and host findings say where the host came back") {
  ProcessAnalysis p = pythonJob().run();
  diagnose(p, AnalysisOptions{});
  const Finding* sync = findingOf(p, kFindingSyncPoints);
  REQUIRE(sync != nullptr);
  CHECK(sync->fix.rfind(std::string("Start at ") + kStepSite + " (6 calls", 0) == 0);
  CHECK(sync->python_site == kStepSite);
  const std::string* most_at = evidenceOf(*sync, "stream synchronize, most at");
  REQUIRE(most_at != nullptr);
  CHECK(most_at->rfind(std::string(kStepSite) + ": 6 calls", 0) == 0);
  // The host part that explains the host time (no host events here: unknown) names the line.
  const Finding* host = findingOf(p, kFindingHostUnknown);
  for (const Finding& f : p.findings) UNSCOPED_INFO(f.id << " " << f.idle_ns);  // on failure: what was found
  REQUIRE(host != nullptr);
  const std::string* back = evidenceOf(*host, "host came back at");
  REQUIRE(back != nullptr);
  CHECK(back->rfind(std::string(kResumeSite) + ", the first launch after 6 of the 6 host gaps", 0) == 0);
  CHECK(host->python_site == kResumeSite);
}

TEST_CASE("without Python stacks the fix names no line") {
  EngineFeed feed;
  feed.add(launch(1, 0, us(1), 1))
      .add(call(v1::API_KIND_STREAM_SYNC, 1, us(100), ms(10) + us(5), 0, true))
      .add(launch(1, ms(12), ms(12) + us(5), 2))
      .add(kernelAt(us(1), ms(10), 1))
      .add(kernelAt(ms(12) + us(10), ms(13), 2));
  ProcessAnalysis p = feed.run();
  diagnose(p, AnalysisOptions{});
  const Finding* sync = findingOf(p, kFindingSyncPoints);
  REQUIRE(sync != nullptr);
  CHECK(sync->fix.find("Start at") == std::string::npos);
  CHECK(sync->python_site.empty());
  CHECK(streamSyncs(p).top_call_sites.at(0).name == kCallSiteNotRecorded);
}

TEST_CASE("stack misses are counted by reason from the recorder's drop counters") {
  AnalysisPipeline pipeline{AnalysisOptions{}};
  addStandardStages(pipeline);
  pipeline.onHello(helloFor(true), 0);
  StringTable strings;
  DecodedBatch batch;
  batch.api_calls = {launch(1, 0, us(1), 1), withStack(call(v1::API_KIND_STREAM_SYNC, 1, us(2), us(9), 0, true), 7)};
  batch.activities = {kernelAt(us(1), us(8), 1)};
  batch.drops = {{v1::DROP_SOURCE_PYTHON_STACK, 1, 5}, {v1::DROP_SOURCE_PYTHON_STACK, 4, 2},
                 {v1::DROP_SOURCE_THREAD_RING, 1234, 3}};
  pipeline.onBatch(batch, strings);
  // A later total replaces an earlier one: the counters are cumulative.
  DecodedBatch later;
  later.drops = {{v1::DROP_SOURCE_PYTHON_STACK, 1, 6}};
  pipeline.onBatch(later, strings);
  StreamHealth health;
  const ProcessAnalysis r = pipeline.finish(ReadResult{}, health);
  CHECK(r.python_stacks == 1);
  CHECK(r.python_stack_misses == 8);
  REQUIRE(r.python_stack_misses_by_reason.size() == 2);
  CHECK(r.python_stack_misses_by_reason[0].first == "an interpreter version gapwatch has no frame layout for");
  CHECK(r.python_stack_misses_by_reason[0].second == 6);
  CHECK(r.python_stack_misses_by_reason[1].second == 2);
  CHECK(r.events_dropped == 3);
}
