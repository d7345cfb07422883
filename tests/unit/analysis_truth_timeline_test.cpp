// tests/unit/analysis_truth_timeline_test.cpp: the engine reproduces the simulator's ground truth
// exactly when it is given the simulator's own timeline.
//
// gapwatch-sim runs each shipped scenario (without gapwatch) and writes its truth, which holds the
// complete timeline: every logged call and every device op. The test turns that timeline into the
// events a perfect recorder would have written (async copies without their `blocked` flag, which
// only the copy record tells a real recorder), hands them over in drained order (calls in 50 ms
// batches, device records 300 ms late, as CUPTI's buffers come), and checks that window, busy,
// idle, gaps, every cause, after_sync and the sync points come out as the truth says, to the
// nanosecond. What is left between a recording and the truth is then the recorder's measurement
// (docs/analysis.md, "Engine and ground truth").

#include <catch2/catch.hpp>

#include "analysis_test_events.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using Json = nlohmann::json;

std::size_t column(const Json& table, const char* name) {
  const Json& fields = table["fields"];
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] == name) return i;
  }
  FAIL("truth table has no column " << name);
  return 0;
}

v1::ApiKind apiKindOf(const std::string& kind) {
  static const std::map<std::string, v1::ApiKind> kinds = {
      {"launch", v1::API_KIND_LAUNCH},           {"graph_launch", v1::API_KIND_GRAPH_LAUNCH},
      {"memcpy", v1::API_KIND_MEMCPY},           {"memcpy_async", v1::API_KIND_MEMCPY_ASYNC},
      {"memset", v1::API_KIND_MEMSET},           {"memset_async", v1::API_KIND_MEMSET_ASYNC},
      {"device_sync", v1::API_KIND_DEVICE_SYNC}, {"stream_sync", v1::API_KIND_STREAM_SYNC},
      {"event_sync", v1::API_KIND_EVENT_SYNC},   {"event_record", v1::API_KIND_EVENT_RECORD},
      {"stream_wait_event", v1::API_KIND_STREAM_WAIT_EVENT},
      {"malloc", v1::API_KIND_MALLOC},           {"free", v1::API_KIND_FREE},
      {"host_alloc", v1::API_KIND_HOST_ALLOC},   {"host_free", v1::API_KIND_HOST_FREE}};
  auto it = kinds.find(kind);
  return it == kinds.end() ? v1::API_KIND_OTHER : it->second;
}

// cudaMemcpyKind as the truth's ops table writes it.
v1::CopyKind copyKindOf(int memcpy_kind) {
  switch (memcpy_kind) {
    case 0: return v1::COPY_KIND_H2H;
    case 1: return v1::COPY_KIND_H2D;
    case 2: return v1::COPY_KIND_D2H;
    case 3: return v1::COPY_KIND_D2D;
    default: return v1::COPY_KIND_UNSPECIFIED;
  }
}

struct Timed {
  uint64_t time_ns;
  bool is_call;
  std::size_t index;
};

// Feeds one process of the truth to a pipeline and returns the analysis.
ProcessAnalysis analyseTimeline(const Json& process) {
  const Json& calls = process["timeline"]["api_calls"];
  const Json& ops = process["timeline"]["ops"];
  std::vector<ApiCallEvent> api_calls;
  std::vector<NcclCallEvent> nccl_calls;
  std::vector<DeviceActivityEvent> activities;
  const std::size_t c_kind = column(calls, "kind"), c_tid = column(calls, "tid"), c_enter = column(calls, "enter_ns"),
                    c_exit = column(calls, "exit_ns"), c_corr = column(calls, "correlation_id"),
                    c_stream = column(calls, "stream"), c_blocked = column(calls, "blocked");
  for (const Json& row : calls["rows"]) {
    const std::string kind = row[c_kind];
    if (kind == "nccl") {
      nccl_calls.push_back(test::ncclCall(row[c_tid], row[c_enter], row[c_exit]));
      continue;
    }
    ApiCallEvent e = test::call(apiKindOf(kind), row[c_tid], row[c_enter], row[c_exit], row[c_corr],
                                row[c_blocked].get<int>() == 1, row[c_stream]);
    if (e.kind == v1::API_KIND_MEMCPY_ASYNC) e.blocked = false;  // a recorder cannot know
    api_calls.push_back(e);
  }
  const std::size_t o_kind = column(ops, "kind"), o_device = column(ops, "device"), o_stream = column(ops, "stream"),
                    o_corr = column(ops, "correlation_id"), o_start = column(ops, "start_ns"),
                    o_end = column(ops, "end_ns"), o_copy = column(ops, "copy_kind"), o_src = column(ops, "src_kind"),
                    o_dst = column(ops, "dst_kind");
  for (const Json& row : ops["rows"]) {
    const std::string kind = row[o_kind];
    if (kind == "marker") continue;  // event markers are no device work
    DeviceActivityEvent a = test::work(kind == "kernel"   ? v1::ACTIVITY_KIND_KERNEL
                                       : kind == "memcpy" ? v1::ACTIVITY_KIND_MEMCPY
                                                          : v1::ACTIVITY_KIND_MEMSET,
                                       row[o_start], row[o_end], row[o_corr], row[o_stream], row[o_device]);
    if (a.kind == v1::ACTIVITY_KIND_MEMCPY) a.copy_kind = copyKindOf(row[o_copy]);
    a.src_memory = static_cast<v1::MemoryKind>(row[o_src].get<int>());
    a.dst_memory = static_cast<v1::MemoryKind>(row[o_dst].get<int>());
    activities.push_back(a);
  }

  // Drained order: calls by 50 ms slice of entry time; records 300 ms after they started.
  constexpr uint64_t kSlice = 50'000'000, kCuptiDelay = 300'000'000;
  std::vector<Timed> order;
  for (std::size_t i = 0; i < api_calls.size(); ++i) order.push_back({api_calls[i].start_ns / kSlice, true, i});
  for (std::size_t i = 0; i < activities.size(); ++i) {
    order.push_back({(activities[i].start_ns + kCuptiDelay) / kSlice, false, i});
  }
  std::stable_sort(order.begin(), order.end(), [](const Timed& a, const Timed& b) { return a.time_ns < b.time_ns; });
  AnalysisPipeline pipeline;
  addStandardStages(pipeline);
  v1::Hello hello = test::helloFor(true);
  hello.set_pid(process["pid"]);
  pipeline.onHello(hello, 0);
  StringTable strings;
  DecodedBatch batch;
  batch.nccl_calls = nccl_calls;  // NCCL calls in one early batch: the window sorts them in
  uint64_t slice = order.empty() ? 0 : order.front().time_ns;
  for (const Timed& t : order) {
    if (t.time_ns != slice) {
      pipeline.onBatch(batch, strings);
      batch = DecodedBatch{};
      slice = t.time_ns;
    }
    if (t.is_call) batch.api_calls.push_back(api_calls[t.index]);
    else batch.activities.push_back(activities[t.index]);
  }
  pipeline.onBatch(batch, strings);
  StreamHealth health;
  health.has_goodbye = true;
  return pipeline.finish(ReadResult{}, health);
}

void checkScenario(const std::string& name) {
  const std::string truth_path = std::string(GAPWATCH_TEST_TMP_DIR) + "/truth-timeline-" + name + "-" +
                                 std::to_string(getpid()) + ".json";
  const std::string command = std::string("env -u LD_PRELOAD -u CUDA_INJECTION64_PATH ") + GAPWATCH_SIM_PATH + " " +
                              GAPWATCH_SCENARIO_DIR + "/" + name + ".json --truth " + truth_path + " --quiet";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(truth_path);
  const Json truth = Json::parse(in);
  static const std::map<std::string, SyncPointKind> sync_types = {
      {"device_sync", SyncPointKind::kDeviceSync},  {"stream_sync", SyncPointKind::kStreamSync},
      {"event_sync", SyncPointKind::kEventSync},    {"sync_copy", SyncPointKind::kSyncCopy},
      {"pageable_async_copy", SyncPointKind::kPageableAsyncCopy}, {"memset", SyncPointKind::kMemset},
      {"malloc_free", SyncPointKind::kAllocFree},   {"other", SyncPointKind::kOther}};
  for (const Json& process : truth["processes"]) {
    const ProcessAnalysis a = analyseTimeline(process);
    INFO("scenario " << name << ", rank " << process["rank"]);
    CHECK(a.late_events == 0);
    REQUIRE(a.devices.size() == process["devices"].size());
    for (const DeviceAnalysis& d : a.devices) {
      const Json& t = process["devices"][d.device];
      INFO("device " << d.device);
      CHECK(d.window_start_ns == t["window"]["start_ns"].get<uint64_t>());
      CHECK(d.window_end_ns == t["window"]["end_ns"].get<uint64_t>());
      CHECK(d.busy_ns == t["busy_ns"].get<uint64_t>());
      CHECK(d.idle_ns == t["idle_ns"].get<uint64_t>());
      CHECK(d.gaps.count() == t["gap_count"].get<uint64_t>());
      CHECK(d.after_sync_ns == t["after_sync"]["ns"].get<uint64_t>());
      CHECK(d.after_sync_gaps == t["after_sync"]["gaps"].get<uint64_t>());
      for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
        const char* cause = idleCauseName(static_cast<IdleCause>(c));
        INFO("cause " << cause);
        CHECK(d.idle_by_cause_ns[c] == t["idle_by_cause"][cause].get<uint64_t>());
      }
      for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
        CHECK(d.gaps.bucket(b).count == t["histogram"][b]["count"].get<uint64_t>());
      }
    }
    for (const auto& [type, kind] : sync_types) {
      const Json& t = process["sync_points"][type];
      const SyncTypeStats& s = a.sync_points[static_cast<std::size_t>(kind)];
      INFO("sync type " << type);
      CHECK(s.count == t["count"].get<uint64_t>());
      CHECK(s.total_ns == t["total_ns"].get<uint64_t>());
      // Exact up to DurationPercentiles::kExactSamples calls, within 1% beyond.
      CHECK(static_cast<double>(s.p50_ns) == Approx(t["p50_ns"].get<double>()).epsilon(0.01));
      CHECK(static_cast<double>(s.p99_ns) == Approx(t["p99_ns"].get<double>()).epsilon(0.01));
    }
  }
  if (!std::getenv("GAPWATCH_KEEP_TRUTH")) std::remove(truth_path.c_str());  // set it to look at one
}

}  // namespace

TEST_CASE("truth timeline: healthy") { checkScenario("healthy"); }
TEST_CASE("truth timeline: data-bound") { checkScenario("data-bound"); }
TEST_CASE("truth timeline: launch-bound") { checkScenario("launch-bound"); }
TEST_CASE("truth timeline: sync-bound") { checkScenario("sync-bound"); }
TEST_CASE("truth timeline: pageable-copies") { checkScenario("pageable-copies"); }
TEST_CASE("truth timeline: nccl-bound") { checkScenario("nccl-bound"); }
TEST_CASE("truth timeline: warmup-recompile") { checkScenario("warmup-recompile"); }
