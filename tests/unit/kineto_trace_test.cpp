// tests/unit/kineto_trace_test.cpp: reader/kineto_trace.h on small hand-written traces: the mapping
// to gapwatch's events, the order they are handed over in, .json.gz, and malformed input refused
// with one line.
#include "analysis/run_analysis.h"
#include "reader/kineto_trace.h"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch {
namespace {

struct Collected : RecordingVisitor {
  std::optional<v1::Hello> hello;
  std::optional<v1::Goodbye> goodbye;
  std::vector<ApiCallEvent> calls;
  std::vector<DeviceActivityEvent> activities;
  std::vector<MarkerEvent> markers;
  std::vector<uint64_t> times;  // every event's time, in the order handed over
  StringTable strings;
  int batches = 0;

  void onHello(const v1::Hello& h, uint64_t) override { hello = h; }
  void onBatch(const DecodedBatch& batch, const StringTable& table) override {
    ++batches;
    for (const StringDefinition& s : batch.strings) strings.define(s.kind, s.id, s.text);
    CHECK(table.size() == strings.size());
    for (const MarkerEvent& m : batch.markers) markers.push_back(m), times.push_back(m.time_ns);
    for (const ApiCallEvent& c : batch.api_calls) calls.push_back(c), times.push_back(c.start_ns);
    for (const DeviceActivityEvent& a : batch.activities) activities.push_back(a), times.push_back(a.start_ns);
  }
  void onGoodbye(const v1::Goodbye& g, uint64_t) override { goodbye = g; }
};

KinetoReadResult readText(const std::string& text, Collected& out) {
  MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  return readKinetoTrace(source, out);
}

std::string gzip(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A launch on a CPU thread with a negative tid, then (in the device block) its kernel.
const std::string kLaunchAndKernel = R"J({
  "schemaVersion": 1,
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": -549452224, "ts": 90, "dur": 30},
    {"ph": "X", "cat": "kernel", "name": "void gemm<float>(int)", "pid": 0, "tid": 7, "ts": 110, "dur": 20,
     "args": {"External id": 5, "device": 0, "stream": 7, "correlation": 77, "grid": [1, 1, 1]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": -549452224, "ts": 100, "dur": 5,
     "args": {"cbid": 211, "correlation": 77, "External id": 5}},
    {"ph": "s", "id": 77, "pid": 4242, "tid": -549452224, "ts": 100, "cat": "ac2g", "name": "ac2g"},
    {"ph": "M", "name": "thread_name", "pid": 4242, "tid": -549452224, "ts": 0, "args": {"name": "thread 1 (python)"}}
  ]
})J";

TEST_CASE("a kernel is joined to its launch by correlation", "[kineto]") {
  Collected got;
  const KinetoReadResult r = readText(kLaunchAndKernel, got);
  REQUIRE(r.read.ok());
  REQUIRE(got.hello);
  CHECK(got.hello->pid() == 4242);
  CHECK(got.hello->host().empty());
  CHECK(got.hello->rank() == 3);
  CHECK(got.hello->world_size() == 8);
  REQUIRE(got.hello->probes_size() == 1);
  CHECK(got.hello->probes(0) == v1::PROBE_CUPTI_ACTIVITY);
  REQUIRE(got.calls.size() == 1);
  REQUIRE(got.activities.size() == 1);
  const ApiCallEvent& call = got.calls[0];
  const DeviceActivityEvent& kernel = got.activities[0];
  CHECK(call.kind == v1::API_KIND_LAUNCH);
  CHECK(call.domain == v1::API_DOMAIN_RUNTIME);
  CHECK(call.cbid == 211);
  CHECK(call.start_ns == 100'000);
  CHECK(call.end_ns == 105'000);
  CHECK(call.thread_id != 0);
  CHECK(got.strings.display(v1::STRING_KIND_THREAD_NAME, call.thread_id) == "thread 1 (python)");
  CHECK(got.strings.display(v1::STRING_KIND_API_NAME, call.api_name_id) == "cudaLaunchKernel");
  CHECK(kernel.kind == v1::ACTIVITY_KIND_KERNEL);
  CHECK(kernel.correlation_id == 77);
  CHECK(call.correlation_id == kernel.correlation_id);
  CHECK(kernel.device == 0);
  CHECK(kernel.stream == 7);
  CHECK(kernel.start_ns == 110'000);
  CHECK(kernel.end_ns == 130'000);
  CHECK(got.strings.display(v1::STRING_KIND_KERNEL_NAME, kernel.name_id) == "void gemm<float>(int)");
  REQUIRE(got.goodbye);
  CHECK(got.goodbye->end_time_ns() == 130'000);
  CHECK(got.goodbye->api_calls() == 1);
  CHECK(got.goodbye->activities() == 1);
  CHECK(r.health.has_hello);
  CHECK(r.health.has_goodbye);
  CHECK(r.counts.trace_events == 5);
  CHECK(r.counts.kernels == 1);
  CHECK(r.counts.launches == 1);
}

TEST_CASE("events are handed over in time order, whatever the file's order", "[kineto]") {
  // The CPU block (a step over the whole trace, a late launch) comes before the device block.
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 1000, "dur": 5000000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 4000000, "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4000010, "dur": 5, "args": {"stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2000, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2010, "dur": 5, "args": {"stream": 7, "correlation": 1}}
  ]})";
  Collected got;
  REQUIRE(readText(trace, got).read.ok());
  REQUIRE(got.times.size() == 6);
  // Batches never span more than a second, so the analysis's 2 s window takes each one whole.
  CHECK(got.batches >= 2);
  std::vector<uint64_t> sorted = got.times;
  std::sort(sorted.begin(), sorted.end());
  CHECK(got.times == sorted);
  REQUIRE(got.markers.size() == 2);
  CHECK(got.markers[0].kind == v1::MARKER_KIND_STEP_BEGIN);
  CHECK(got.markers[0].time_ns == 1'000'000);
  CHECK(got.markers[0].step == 3);
  CHECK(got.markers[1].kind == v1::MARKER_KIND_STEP_END);
  CHECK(got.markers[1].time_ns == 5'001'000'000);
  CHECK(got.markers[1].step == 3);
  CHECK(got.strings.display(v1::STRING_KIND_MARKER_NAME, got.markers[0].name_id) == "ProfilerStep#3");
  // One kernel name, defined once.
  CHECK(got.activities[0].name_id == got.activities[1].name_id);
}

TEST_CASE("a memcpy, a memset and their calls", "[kineto]") {
  const std::string trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"correlation": 4}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 20, "dur": 30,
     "args": {"device": 0, "stream": 7, "correlation": 4, "bytes": 4096, "memory bandwidth (GB/s)": 1.5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 70, "dur": 3, "args": {"correlation": 5}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 80, "dur": 2,
     "args": {"device": 0, "stream": 7, "correlation": 5, "bytes": 512}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 8, "ts": 90, "dur": 2,
     "args": {"device": 0, "stream": 8, "correlation": 6, "bytes": 8}}
  ]})J";
  Collected got;
  const KinetoReadResult r = readText(trace, got);
  REQUIRE(r.read.ok());
  REQUIRE(got.calls.size() == 2);
  CHECK(got.calls[0].kind == v1::API_KIND_MEMCPY_ASYNC);
  CHECK(got.calls[1].kind == v1::API_KIND_MEMSET_ASYNC);
  REQUIRE(got.activities.size() == 3);
  const DeviceActivityEvent& copy = got.activities[0];
  CHECK(copy.kind == v1::ACTIVITY_KIND_MEMCPY);
  CHECK(copy.copy_kind == v1::COPY_KIND_H2D);
  CHECK(copy.src_memory == v1::MEMORY_KIND_PAGEABLE);
  CHECK(copy.dst_memory == v1::MEMORY_KIND_DEVICE);
  CHECK(copy.bytes == 4096);
  CHECK(copy.correlation_id == 4);
  const DeviceActivityEvent& set = got.activities[1];
  CHECK(set.kind == v1::ACTIVITY_KIND_MEMSET);
  CHECK(set.dst_memory == v1::MEMORY_KIND_DEVICE);
  CHECK(set.bytes == 512);
  const DeviceActivityEvent& back = got.activities[2];
  CHECK(back.copy_kind == v1::COPY_KIND_D2H);
  CHECK(back.src_memory == v1::MEMORY_KIND_DEVICE);
  CHECK(back.dst_memory == v1::MEMORY_KIND_PINNED);
  CHECK(back.stream == 8);
  CHECK(r.counts.memcpys == 2);
  CHECK(r.counts.memsets == 1);
}

TEST_CASE("stream syncs: the runtime call and the cuda_sync records", "[kineto]") {
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 10, "dur": 500, "args": {"cbid": 131, "correlation": 9}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 12, "dur": 490,
     "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "device": 0, "correlation": 9}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 600, "dur": 10, "args": {"correlation": 10}},
    {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 601, "dur": 8,
     "args": {"cuda_sync_kind": "Context Sync", "stream": 4294967295, "device": 0, "correlation": 10}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuStreamSynchronize", "pid": 1, "tid": 1, "ts": 700, "dur": 1, "args": {"correlation": 11}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamGetCaptureInfo_v2", "pid": 1, "tid": 1, "ts": 800, "dur": 1, "args": {"correlation": 12}}
  ]})";
  Collected got;
  REQUIRE(readText(trace, got).read.ok());
  REQUIRE(got.calls.size() == 4);
  CHECK(got.calls[0].kind == v1::API_KIND_STREAM_SYNC);
  CHECK(got.calls[0].blocked);
  CHECK(got.calls[1].kind == v1::API_KIND_DEVICE_SYNC);
  CHECK(got.calls[2].kind == v1::API_KIND_STREAM_SYNC);
  CHECK(got.calls[2].domain == v1::API_DOMAIN_DRIVER);
  CHECK(got.calls[3].kind == v1::API_KIND_OTHER);
  REQUIRE(got.activities.size() == 2);
  CHECK(got.activities[0].kind == v1::ACTIVITY_KIND_SYNC);
  CHECK(got.activities[0].sync_kind == v1::SYNC_KIND_STREAM_SYNCHRONIZE);
  CHECK(got.activities[0].correlation_id == 9);
  CHECK(got.activities[1].sync_kind == v1::SYNC_KIND_CONTEXT_SYNCHRONIZE);
  CHECK(got.activities[1].stream == 4294967295u);
}

TEST_CASE("decimal times are exact nanoseconds; baseTimeNanoseconds may come last", "[kineto]") {
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4458676522690.655, "dur": 68.0, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4458676522800.1, "dur": 0.001, "args": {"stream": 7}}
  ], "baseTimeNanoseconds": 1711964646000000000})";
  Collected got;
  REQUIRE(readText(trace, got).read.ok());
  REQUIRE(got.activities.size() == 2);
  CHECK(got.activities[0].start_ns == 4458676522690655ull);
  CHECK(got.activities[0].end_ns == 4458676522758655ull);
  CHECK(got.activities[1].start_ns == 4458676522800100ull);
  CHECK(got.activities[1].end_ns == 4458676522800101ull);
  REQUIRE(got.hello);
  CHECK(got.hello->start_time_ns() == 4458676522690655ull);
  CHECK(got.hello->start_unix_ns() == 1711964646000000000ull + 4458676522690655ull);
  CHECK_FALSE(got.hello->has_rank());
}

TEST_CASE(".json.gz is read by content, concatenated members too", "[kineto]") {
  Collected plain;
  REQUIRE(readText(kLaunchAndKernel, plain).read.ok());
  const std::string gz = gzip(kLaunchAndKernel);
  CHECK(looksLikeKinetoTrace(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(gz.data()), gz.size())));
  Collected got;
  REQUIRE(readText(gz, got).read.ok());
  CHECK(got.calls == plain.calls);
  CHECK(got.activities == plain.activities);
  // Two members: the first a prefix of the JSON, the second the rest.
  const std::size_t half = kLaunchAndKernel.size() / 2;
  const std::string two = gzip(kLaunchAndKernel.substr(0, half)) + gzip(kLaunchAndKernel.substr(half));
  Collected joined;
  REQUIRE(readText(two, joined).read.ok());
  CHECK(joined.activities == plain.activities);
}

TEST_CASE("the content decides: a .gwt magic is not a trace", "[kineto]") {
  const std::string gwt = "GAPWATCH\x01\x00\x00\x00";
  CHECK_FALSE(looksLikeKinetoTrace(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(gwt.data()), gwt.size())));
  const std::string json = "\n  {\"traceEvents\": []}";
  CHECK(looksLikeKinetoTrace(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(json.data()), json.size())));
}

TEST_CASE("the standard analysis runs on a trace file", "[kineto]") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "gapwatch_kineto_test_trace.json.gz";
  {
    std::ofstream out(path, std::ios::binary);
    const std::string gz = gzip(kLaunchAndKernel);
    out.write(gz.data(), static_cast<std::streamsize>(gz.size()));
  }
  const analysis::RunReport report = analysis::analyseRecordingFiles({path.string()}, analysis::AnalysisOptions{});
  std::filesystem::remove(path);
  REQUIRE(report.inputs.size() == 1);
  CHECK(report.inputs[0].status == "ok");
  REQUIRE(report.analysis.processes.size() == 1);
  CHECK(report.analysis.processes[0].pid == 4242);
  CHECK(report.analysis.processes[0].late_events == 0);
  CHECK_FALSE(report.analysis.processes[0].truncated);
}

// --- malformed input: refused with one line, nothing handed over ---------------------------------

void checkRefused(const std::string& text, const std::string& expected_part) {
  CAPTURE(text.substr(0, 200));
  Collected got;
  const KinetoReadResult r = readText(text, got);
  REQUIRE_FALSE(r.read.ok());
  const std::string& message = r.read.error->message;
  CAPTURE(message);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.find(expected_part) != std::string::npos);
  CHECK_FALSE(got.hello);
  CHECK(got.batches == 0);
  CHECK_FALSE(hasContentToShow(r.read));
}

const std::string kKernel = R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5})";

TEST_CASE("malformed traces are refused with one line", "[kineto]") {
  checkRefused("", "empty");
  checkRefused("[1, 2]", "not gzip or a JSON object");
  checkRefused(R"({"traceEvents": [)" + kKernel.substr(0, 40), "");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "unterminated)", "");
  checkRefused(R"({"schemaVersion": 1})", "no traceEvents");
  checkRefused(R"({"traceEvents": {"a": 1}})", "traceEvents is not an array");
  checkRefused(R"({"traceEvents": [1]})", "traceEvents[0] is not an object");
  checkRefused(R"({"traceEvents": [)" + kKernel + R"(, {"ph": "X", "cat": "kernel", "name": "k", "dur": 5}]})",
               "traceEvents[1] (kernel) has no ts");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "10"}]})", "traceEvents[0].ts is not a number");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": -10}]})", "traceEvents[0].ts is not a non-negative");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 10, "dur": "5"}]})", "traceEvents[0].dur is not a number");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1e400}]})", "traceEvents[0].ts");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": NaN}]})", "");
  checkRefused(R"({"traceEvents": [{"ph": 7, "cat": "kernel", "ts": 1}]})", "traceEvents[0].ph is not a string");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": {"correlation": "x"}}]})",
               "traceEvents[0].args.correlation is not a number");
  checkRefused(R"({"traceEvents": []} trailing)", "");
  checkRefused(R"({"traceEvents": [], "distributedInfo": {"rank": "zero"}})", "distributedInfo.rank");
  checkRefused(R"({"traceEvents": [)" + std::string(100000, '[') + std::string(100000, ']') + "]}", "");
  const std::string gz = gzip(R"({"traceEvents": [)" + kKernel + "]}");
  checkRefused(gz.substr(0, gz.size() / 2), "gzip stream is cut short");
  std::string corrupt = gz;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x5a);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x5a);
  checkRefused(corrupt, "gzip");
  checkRefused(gzip("GAPWATCH"), "not a JSON object");
}

TEST_CASE("skipped events are not checked", "[kineto]") {
  // A cpu_op without ts, an instant with a string ts: the import does not use them.
  Collected got;
  const KinetoReadResult r = readText(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add"},
      {"ph": "i", "name": "Iteration Start", "ts": "1"}, )" + kKernel + "]}", got);
  REQUIRE(r.read.ok());
  CHECK(got.activities.size() == 1);
}

}  // namespace
}  // namespace gapwatch
