// tests/unit/report_json_test.cpp: the shape of `gapwatch report --json` (docs/report-json.md) on a
// hand-built report: the version, every documented key with its type, the histogram's 22 buckets,
// findings with evidence as text and as numbers, and the inputs that could not be read.
#include "analysis/diagnosis.h"
#include "tools/report_json.h"

#include <catch2/catch.hpp>

#include <string>

using namespace gapwatch;
using namespace gapwatch::analysis;
using gapwatch::analysis::RunReport;
using json = nlohmann::ordered_json;

namespace {

constexpr uint64_t kMs = 1'000'000;

RunReport dataBoundContent() {
  RunReport content;
  ProcessAnalysis p;
  p.pid = 4242;
  p.host = "node-3";
  p.rank = 0;
  p.probes = {"cupti_activity"};
  DeviceAnalysis d;
  d.window_start_ns = 10 * kMs;
  d.window_end_ns = 110 * kMs;
  d.leading_ns = 3 * kMs;
  d.idle_ns = 80 * kMs;
  d.busy_ns = 20 * kMs;
  d.idle_fraction = 0.8;
  d.kernels = 300;
  d.idle_by_cause_ns[static_cast<std::size_t>(IdleCause::kHostCpu)] = 80 * kMs;
  // The host was inside the DataLoader's range (a trace's host events said so).
  d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kInputPipeline)] = 80 * kMs;
  d.host_part_labels[0] = {{"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 80 * kMs}};
  for (int i = 0; i < 10; ++i) d.gaps.add(8 * kMs);
  IdleGap gap;
  gap.start_ns = 20 * kMs;
  gap.end_ns = 28 * kMs;
  gap.by_cause_ns[0] = 8 * kMs;
  d.longest_gaps.push_back(gap);
  p.devices.push_back(d);
  SyncTypeStats s;
  s.kind = SyncPointKind::kStreamSync;
  s.count = 12;
  p.sync_points.push_back(s);
  p.steps.method = "none";
  content.analysis.processes.push_back(p);
  content.overviews.emplace_back();
  content.files.push_back("run.gwt");
  content.inputs.push_back({"run.gwt", "ok", "", 0});
  content.inputs.push_back({"empty.gwt", "error", "empty file (0 bytes): not a gapwatch recording", -1});
  diagnoseReport(content.analysis);
  return content;
}

}  // namespace

TEST_CASE("the JSON report is versioned and names its options and thresholds") {
  const json doc = cli::reportJson(dataBoundContent());
  CHECK(doc.begin().key() == "gapwatch_report_version");
  CHECK(doc["gapwatch_report_version"] == 1);
  CHECK(doc["generator"].get<std::string>().rfind("gapwatch ", 0) == 0);
  CHECK(doc["options"]["launch_threshold_ns"] == 30000);
  CHECK(doc["options"]["top_n"] == 5);
  CHECK(doc["thresholds"]["min_window_share"] == 0.05);
  for (const char* key : {"inputs", "processes", "jobs", "rank_comparisons", "rank_waits", "findings"}) {
    INFO(key);
    CHECK(doc[key].is_array());
  }
}

TEST_CASE("every input file has a status, and a failed one its message") {
  const json doc = cli::reportJson(dataBoundContent());
  REQUIRE(doc["inputs"].size() == 2);
  CHECK(doc["inputs"][0] == json{{"file", "run.gwt"}, {"status", "ok"}, {"message", ""}, {"process", 0}});
  CHECK(doc["inputs"][1]["status"] == "error");
  CHECK(doc["inputs"][1]["process"].is_null());
  CHECK(doc["inputs"][1]["message"] == "empty file (0 bytes): not a gapwatch recording");
}

TEST_CASE("a process has its identity, totals, idle by cause, devices and the other analyses") {
  const json p = cli::reportJson(dataBoundContent())["processes"][0];
  CHECK(p["file"] == "run.gwt");
  CHECK(p["pid"] == 4242);
  CHECK(p["rank"] == 0);
  CHECK(p["local_rank"].is_null());
  CHECK(p["device_timeline"] == true);
  CHECK(p["ended"] == "no_goodbye");
  CHECK(p["window_ns"] == 100 * kMs);
  CHECK(p["idle_ns"] == 80 * kMs);
  CHECK(p["idle_fraction"] == Approx(0.8));
  CHECK(p["verdict"] == "GPU idle 80.0% of the time; 100% of it waiting on the input pipeline (the host inside data "
                       "loading); up to 5.00x faster if the GPU never waited");
  const json causes = p["idle_by_cause"];
  CHECK(causes.size() == 6);
  for (const char* cause : {"host_cpu", "launch_overhead", "sync_copy", "cuda_api", "nccl_host", "dependency"}) {
    INFO(cause);
    CHECK(causes[cause].is_number_unsigned());
  }
  for (const char* key : {"sync_points", "devices", "findings", "notes"}) CHECK(p[key].is_array());
  for (const char* key : {"launches", "nccl", "steps", "drops", "events"}) CHECK(p[key].is_object());
  CHECK(p["sync_points"][0]["type"] == "stream_sync");
  CHECK(p["sync_points"][0]["name"] == "stream synchronize");
  CHECK(p["launches"]["host_launch_gaps"].size() == 22);
}

TEST_CASE("a device has the full log2 histogram, the after-sync details and the longest gaps") {
  const json d = cli::reportJson(dataBoundContent())["processes"][0]["devices"][0];
  CHECK(d["window_ns"] == 100 * kMs);
  CHECK(d["gap_count"] == 10);
  const json histogram = d["histogram"];
  REQUIRE(histogram.size() == 22);
  CHECK(histogram[0]["lo_ns"] == 0);
  CHECK(histogram[0]["hi_ns"] == 1000);
  CHECK(histogram[21]["hi_ns"].is_null());
  uint64_t total = 0;
  for (const json& bucket : histogram) total += bucket["total_ns"].get<uint64_t>();
  CHECK(total == 80 * kMs);
  CHECK(d["after_sync"]["by_cause"].size() == 6);
  REQUIRE(d["longest_gaps"].size() == 1);
  CHECK(d["longest_gaps"][0]["ns"] == 8 * kMs);
  CHECK(d["longest_gaps"][0]["by_cause"]["host_cpu"] == 8 * kMs);
}

TEST_CASE("a device says where its host split came from, and a process what its Python sampler read") {
  RunReport content = dataBoundContent();
  ProcessAnalysis& p = content.analysis.processes[0];
  {
    const json doc = cli::reportJson(content);
    CHECK(doc["processes"][0]["devices"][0]["host_evidence"] == "none");
    CHECK(doc["processes"][0]["devices"][0]["python_samples"] == 0);
    CHECK(doc["processes"][0]["python_samples"] == json{{"sampler", false}, {"read", 0}, {"missed", 0}});
    CHECK(doc["options"]["input_pipeline_frames"] ==
          json{"/datasets/", "/webdataset/", "/nvidia/dali/", "/ray/data/"});
  }
  p.devices[0].host_evidence = HostEvidence::kPythonSamples;
  p.devices[0].python_samples = 240;
  p.python_sampler = true;
  p.python_samples = 250;
  p.python_sample_misses = 3;
  content.analysis.options.input_pipeline_frames = {"/mydata/"};
  const json doc = cli::reportJson(content);
  const json d = doc["processes"][0]["devices"][0];
  CHECK(d["host_evidence"] == "python_samples");
  CHECK(d["python_samples"] == 240);
  CHECK(doc["processes"][0]["python_samples"] == json{{"sampler", true}, {"read", 250}, {"missed", 3}});
  CHECK(doc["options"]["input_pipeline_frames"] == json{"/mydata/"});
  p.devices[0].host_evidence = HostEvidence::kTraceHostEvents;
  CHECK(cli::reportJson(content)["processes"][0]["devices"][0]["host_evidence"] == "trace_host_events");
}

TEST_CASE("a finding has its id, cause, share, evidence as text and as numbers, and the fix") {
  const json f = cli::reportJson(dataBoundContent())["processes"][0]["findings"][0];
  CHECK(f["id"] == "input_pipeline");
  CHECK(f["host_part"] == "input_pipeline");
  CHECK(f["cause"] == "host_cpu");
  CHECK(f["idle_ns"] == 80 * kMs);
  CHECK(f["idle_share"] == Approx(1.0));
  REQUIRE(f["evidence"].is_array());
  CHECK(f["evidence"][0]["name"] == "idle explained");
  CHECK(f["evidence"][0]["value"].is_string());
  CHECK(f["numbers"]["host_cpu_idle_ns"].is_number_integer());  // integral values stay integers
  CHECK(f["numbers"]["host_cpu_idle_ns"] == 80 * kMs);
  CHECK(f["numbers"]["window_fraction"].is_number_float());
  CHECK(f["fix"].get<std::string>().find("num_workers") != std::string::npos);
}

TEST_CASE("the document is written indented, ending in a newline, and invalid UTF-8 does not stop it") {
  RunReport content = dataBoundContent();
  content.analysis.processes[0].host = "bad\xff" "byte";
  std::ostringstream out;
  cli::writeReportJson(content, out);
  const std::string text = out.str();
  CHECK(text.rfind("{\n  \"gapwatch_report_version\": 1,", 0) == 0);
  CHECK(text.back() == '\n');
  CHECK(json::parse(text)["processes"][0]["host"] == "bad\xef\xbf\xbd" "byte");
}

TEST_CASE("a longest gap carries its neighbours and its call, and a process its kernels table") {
  RunReport content = dataBoundContent();
  ProcessAnalysis& p = content.analysis.processes[0];
  IdleGap& gap = p.devices[0].longest_gaps[0];
  gap.before.kind = v1::ACTIVITY_KIND_KERNEL;
  gap.before.name = "gemm";
  gap.after.kind = v1::ACTIVITY_KIND_MEMCPY;
  gap.after.name = "memcpy HtoD 4 B";
  gap.after.bytes = 4;
  gap.call = {true, 0, "cudaLaunchKernel", 12, 20 * kMs, 27 * kMs, 7 * kMs, 0, ""};
  KernelStats k;
  k.name = "gemm";
  k.count = 3;
  k.total_ns = 6 * kMs;
  k.busy_share = 0.3;
  p.kernels.kernels = 3;
  p.kernels.top_by_time.push_back(k);
  const json doc = cli::reportJson(content);
  const json g = doc["processes"][0]["devices"][0]["longest_gaps"][0];
  CHECK(g["before"]["kind"] == "kernel");
  CHECK(g["before"]["name"] == "gemm");
  CHECK(g["after"]["kind"] == "memcpy");
  CHECK(g["after"]["bytes"] == 4);
  CHECK(g["call"]["api_name"] == "cudaLaunchKernel");
  CHECK(g["call"]["ns"] == 7 * kMs);
  CHECK(g["call"]["in_gap_ns"] == 7 * kMs);
  CHECK(g["queued_by"].is_null());  // not recorded
  const json kernels = doc["processes"][0]["kernels"];
  CHECK(kernels["kernels"] == 3);
  REQUIRE(kernels["top_by_time"].size() == 1);
  CHECK(kernels["top_by_time"][0]["name"] == "gemm");
  CHECK(kernels["top_by_time"][0]["mean_ns"] == 2 * kMs);
  CHECK(kernels["short_by_count"].is_array());
  CHECK(doc["processes"][0]["sync_points"][0]["label"] == "stream synchronize");
  CHECK(doc["thresholds"]["launch_min_gaps"] == 20);
}

TEST_CASE("each job of several ranks has its own comparison; the top-level keys are the only job's") {
  RunReport content = dataBoundContent();
  const ProcessAnalysis one = content.analysis.processes[0];
  content.analysis.processes.clear();
  content.overviews.assign(4, content.overviews[0]);
  content.files = {"a0.gwt", "a1.gwt", "b0.gwt", "b1.gwt"};
  for (int32_t k = 0; k < 4; ++k) {
    content.analysis.processes.push_back(one);
    content.analysis.processes.back().rank = k % 2;
  }
  content.analysis.jobs = {{0, 1}, {2, 3}};
  content.analysis.jobs_why = "rank 0 is there more than once";
  RankComparison a;
  a.processes = {0, 1};
  a.rank_waits = {{0, 1 * kMs, 2}, {1, 30 * kMs, 28, 0, 30, 15, 30, 1e6, 1e4, 20, 1'000'000, 10'000}};
  RankComparison b;
  b.processes = {2, 3};
  b.rank_waits = {{0, 2 * kMs, 3}, {1, 3 * kMs, 4}};
  content.analysis.rank_comparisons = {a, b};
  diagnoseReport(content.analysis);

  json doc = cli::reportJson(content);
  REQUIRE(doc["rank_comparisons"].size() == 2);
  CHECK(doc["rank_comparisons"][0]["processes"] == json{0, 1});
  CHECK(doc["rank_comparisons"][1]["processes"] == json{2, 3});
  CHECK(doc["rank_comparisons"][0]["rank_waits"][1]["waited_for_ns"] == 30 * kMs);
  CHECK(doc["rank_comparisons"][1]["rank_waits"][1]["waited_for_ns"] == 3 * kMs);
  REQUIRE(doc["rank_comparisons"][0]["findings"].size() == 1);
  CHECK(doc["rank_comparisons"][0]["findings"][0]["id"] == kFindingStraggler);
  CHECK(doc["rank_comparisons"][1]["findings"].empty());
  // Two jobs: no one job's numbers at the top level.
  CHECK(doc["cross_rank_processes"].empty());
  CHECK(doc["rank_waits"].empty());
  CHECK(doc["findings"].empty());
  CHECK(doc["straggler_test"].is_null());

  // One job of several ranks: its comparison is also at the top level.
  content.analysis.jobs = {{0, 1}, {2}, {3}};
  content.analysis.rank_comparisons.pop_back();
  doc = cli::reportJson(content);
  REQUIRE(doc["rank_comparisons"].size() == 1);
  CHECK(doc["cross_rank_processes"] == json{0, 1});
  CHECK(doc["rank_waits"] == doc["rank_comparisons"][0]["rank_waits"]);
  CHECK(doc["findings"] == doc["rank_comparisons"][0]["findings"]);
  CHECK(doc["straggler_test"] == doc["rank_comparisons"][0]["straggler_test"]);
}
