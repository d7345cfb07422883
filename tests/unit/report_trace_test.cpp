// tests/unit/report_trace_test.cpp: the report of a PyTorch profiler trace says only what the trace
// holds: its source, "not in trace" for the start-up, drops not recorded by Kineto, no call sites,
// sync waits as an upper bound, copy blocking from names, NCCL host time as c10d's range, and no
// exit status; the same facts as `source` and `not_in_trace` in --json. A .gwt recording's report
// says none of it.
#include "analysis/run_analysis.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gapwatch {
namespace {

// A launch, its kernel, a stream sync (no cuda_sync record), a pageable copy, a record_param_comms
// allreduce with its kernel, and a kernel that has no launch call in the trace.
const std::string kTrace = R"J({
  "schemaVersion": 1,
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 5, "ts": 50, "dur": 2000},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 5, "ts": 400, "dur": 60,
     "args": {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float", "Group size": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 5, "ts": 100, "dur": 5, "args": {"cbid": 211, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 110, "dur": 200, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 9, "tid": 5, "ts": 320, "dur": 60, "args": {"cbid": 41, "correlation": 2}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 330, "dur": 40,
     "args": {"device": 0, "stream": 7, "correlation": 2, "bytes": 4096}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 5, "ts": 420, "dur": 5, "args": {"cbid": 211, "correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 0, "tid": 7, "ts": 430, "dur": 300,
     "args": {"device": 0, "stream": 7, "correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "triton_kernel", "pid": 0, "tid": 7, "ts": 900, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 99}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 9, "tid": 5, "ts": 1000, "dur": 500, "args": {"cbid": 131, "correlation": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 5, "ts": 1600, "dur": 5, "args": {"cbid": 211, "correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1650, "dur": 200, "args": {"device": 0, "stream": 7, "correlation": 5}}
  ]
})J";

struct TraceFile {
  std::string path;
  explicit TraceFile(const std::string& text) {
    char name[] = "/tmp/gapwatch_report_trace_XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TraceFile() { std::remove(path.c_str()); }
};

analysis::RunReport reportOf(const std::string& path) {
  const analysis::RunReport report = analysis::analyseRecordingFiles({path}, analysis::AnalysisOptions{});
  REQUIRE(report.analysis.processes.size() == 1);
  return report;
}

std::string text(const analysis::RunReport& report) {
  std::ostringstream out;
  cli::writeTerminalReport(report, cli::TerminalStyle{false}, out);
  return out.str();
}

bool has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

TEST_CASE("the text report of a trace says what the trace does not hold", "[report][kineto]") {
  const TraceFile trace(kTrace);
  const std::string out = text(reportOf(trace.path));
  INFO(out);
  CHECK(has(out, "source     PyTorch profiler trace (Kineto), schemaVersion 1\n"));
  CHECK(has(out, "start-up   not in trace"));
  CHECK(has(out, "drops      not recorded by Kineto"));
  CHECK(has(out, "call sites            (not recorded in the trace: it has no python_function events)"));
  CHECK(has(out, "sync waits            an upper bound: the trace has no cuda_sync records"));
  CHECK(has(out, "blocking copies       from copy names (Pageable), not measured"));
  CHECK(has(out, "host = c10d's range"));
  CHECK(has(out, "of them 1 with no launch call in the trace"));
  CHECK(has(out, "1 NCCL call (c10d ranges)"));
  CHECK(has(out, "how and when the process ended is not in the trace"));
  // What a recording would say, untrue of a trace.
  CHECK_FALSE(has(out, "exit status"));
  CHECK_FALSE(has(out, "ended normally"));
  CHECK_FALSE(has(out, "from process start"));
  CHECK_FALSE(has(out, "after process start"));
  CHECK_FALSE(has(out, "drops      none"));
  CHECK_FALSE(has(out, "(not recorded)\n"));
}

TEST_CASE("the JSON report of a trace has its source and what is not in it", "[report][kineto]") {
  const TraceFile trace(kTrace);
  const nlohmann::ordered_json doc = cli::reportJson(reportOf(trace.path));
  const auto& p = doc["processes"][0];
  CHECK(p["source"] == "kineto_trace");
  const std::vector<std::string> missing = p["not_in_trace"].get<std::vector<std::string>>();
  CHECK(missing == std::vector<std::string>{"process_start", "process_end", "drops", "call_sites", "blocked_flags",
                                            "sync_records", "nccl_host_calls", "heartbeats"});
  CHECK(p["trace"]["schema_version"] == 1);
  CHECK_FALSE(p["trace"].contains("name"));  // traceName may come after traceEvents: not in a one-pass report
  CHECK(p["trace"]["sync_records"] == 0);
  CHECK(p["leading_ns"].is_null());
  CHECK(p["devices"][0]["leading_ns"].is_null());
  CHECK(p["ended"].is_null());
  CHECK(p["exit_status"].is_null());
  CHECK(p["devices"][0]["work_without_call"] == 1);
  CHECK(p["events"]["nccl_calls"] == 1);
}

TEST_CASE("ranks read from traces are called traces, not recordings", "[report][kineto]") {
  const TraceFile trace(kTrace);
  // The same trace twice: one rank twice, so two jobs (analysis/job_groups.h), each reported alone.
  const analysis::RunReport report = analysis::analyseRecordingFiles({trace.path, trace.path}, analysis::AnalysisOptions{});
  const std::string out = text(report);
  INFO(out);
  CHECK(has(out, "== 2 PyTorch profiler traces of 2 jobs =="));
  CHECK(has(out, "not one job: "));
  CHECK(has(out, "no job has more than one process: each process is reported alone below"));
}

TEST_CASE("a trace with cuda_sync records does not call its sync waits an upper bound", "[report][kineto]") {
  std::string with_sync = kTrace;
  const std::string record =
      R"J({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1000, "dur": 490,
           "args": {"cuda_sync_kind": "Stream Sync", "device": 0, "stream": 7, "correlation": 4}},)J";
  with_sync.insert(with_sync.find("{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\""), record);
  const TraceFile trace(with_sync);
  const analysis::RunReport report = reportOf(trace.path);
  const std::string out = text(report);
  INFO(out);
  CHECK_FALSE(has(out, "an upper bound"));
  const nlohmann::ordered_json doc = cli::reportJson(report);
  for (const auto& key : doc["processes"][0]["not_in_trace"]) CHECK(key != "sync_records");
  CHECK(doc["processes"][0]["trace"]["sync_records"] == 1);
}

}  // namespace
}  // namespace gapwatch
