// tests/unit/kineto_trace_test.cpp: reader/kineto_trace.h on small hand-written traces: the mapping
// to gapwatch's events, the order they are handed over in, .json.gz, and malformed input refused
// with one line, and the streaming itself (bounded memory, read boundaries, metadata after
// traceEvents).
#include "analysis/run_analysis.h"
#include "reader/kineto_numbers.h"
#include "reader/kineto_trace.h"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdio>
#include <cstring>
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
  std::vector<HostRangeEvent> host_ranges;  // not in `times`: held and handed over like markers
  std::vector<uint64_t> times;  // every event's time, in the order handed over
  StringTable strings;
  int batches = 0;

  void onHello(const v1::Hello& h, uint64_t) override { hello = h; }
  void onBatch(const DecodedBatch& batch, const StringTable& table) override {
    ++batches;
    for (const StringDefinition& s : batch.strings) strings.define(s.kind, s.id, s.text);
    CHECK(table.size() == strings.size());
    for (const MarkerEvent& m : batch.markers) markers.push_back(m), times.push_back(m.time_ns);
    for (const HostRangeEvent& h : batch.host_ranges) host_ranges.push_back(h);
    for (const ApiCallEvent& c : batch.api_calls) calls.push_back(c), times.push_back(c.start_ns);
    for (const DeviceActivityEvent& a : batch.activities) activities.push_back(a), times.push_back(a.start_ns);
  }
  void onGoodbye(const v1::Goodbye& g, uint64_t) override { goodbye = g; }
};

KinetoReadResult readText(const std::string& text, Collected& out, const KinetoReadOptions& options = {}) {
  MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  return readKinetoTrace(source, out, options);
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

TEST_CASE("device events stream in file order; held steps go in front of the work of their time", "[kineto]") {
  // The CPU block (a step over the whole trace) comes first, then the device block, where each
  // kernel comes before its launch call (as Kineto writes them) and a second CUPTI buffer starts
  // earlier than the first ended.
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 1000, "dur": 3000000},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1500010, "dur": 5, "args": {"stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1500000, "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2010, "dur": 5, "args": {"stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2000, "dur": 5, "args": {"correlation": 1}}
  ]})";
  Collected got;
  const KinetoReadResult r = readText(trace, got);
  REQUIRE(r.read.ok());
  REQUIRE(got.times.size() == 6);
  // Batches never span more than a second, so the analysis's 2 s window takes each one whole.
  CHECK(got.batches >= 2);
  // The step's begin goes first; its end (3.001 s) after everything.
  REQUIRE(got.markers.size() == 2);
  CHECK(got.times.front() == 1'000'000);
  CHECK(got.times.back() == 3'001'000'000);
  CHECK(got.markers[0].kind == v1::MARKER_KIND_STEP_BEGIN);
  CHECK(got.markers[0].time_ns == 1'000'000);
  CHECK(got.markers[0].step == 3);
  CHECK(got.markers[1].kind == v1::MARKER_KIND_STEP_END);
  CHECK(got.markers[1].time_ns == 3'001'000'000);
  CHECK(got.markers[1].step == 3);
  CHECK(got.strings.display(v1::STRING_KIND_MARKER_NAME, got.markers[0].name_id) == "ProfilerStep#3");
  // Device events keep the file's order.
  REQUIRE(got.activities.size() == 2);
  CHECK(got.activities[0].correlation_id == 2);
  CHECK(got.activities[1].correlation_id == 1);
  // One kernel name, defined once.
  CHECK(got.activities[0].name_id == got.activities[1].name_id);
  CHECK(r.counts.max_held_events <= 6);
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

TEST_CASE("a distributedInfo after traceEvents reaches the Hello and the report, in one pass", "[kineto]") {
  // More device events than one batch: before the events were put in order first, the Hello went
  // out with the first batch, before the end of the file was read.
  std::string kernels;
  for (int i = 0; i < 5000; ++i) {
    kernels += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + std::to_string(100 + 10 * i) +
               R"(, "dur": 5, "args": {"stream": 7}},)";
  }
  {
    // A single-GPU trace: no distributedInfo anywhere, and no rank.
    Collected got;
    const KinetoReadResult r = readText(R"({"traceEvents": [)" + kernels + R"({"ph": "i", "name": "end"}]})", got);
    REQUIRE(r.read.ok());
    CHECK_FALSE(got.hello->has_rank());
  }
  const std::string late = R"({"traceEvents": [)" + kernels +
                           R"({"ph": "i", "name": "end"}], "distributedInfo": {"rank": 5, "world_size": 8}})";
  {
    Collected got;
    const KinetoReadResult r = readText(late, got);
    REQUIRE(r.read.ok());
    REQUIRE(got.hello);
    CHECK(got.hello->rank() == 5);
    CHECK(got.hello->world_size() == 8);
  }
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "gapwatch_kineto_test_late_rank.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << late;
  }
  const analysis::RunReport run = analysis::analyseRecordingFiles({path.string()}, analysis::AnalysisOptions{});
  std::filesystem::remove(path);
  REQUIRE(run.analysis.processes.size() == 1);
  REQUIRE(run.analysis.processes[0].rank);
  CHECK(*run.analysis.processes[0].rank == 5);
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
  CHECK(message.rfind("Kineto trace: ", 0) == 0);
  // The reader streams, so the visitor may have had part of it; the caller shows nothing.
  CHECK(r.read.summary.frames == 0);
  CHECK_FALSE(hasContentToShow(r.read));
}

const std::string kKernel = R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5})";

TEST_CASE("malformed traces are refused with one line", "[kineto]") {
  checkRefused("", "empty");
  checkRefused("[1, 2]", "not gzip or a JSON object");
  checkRefused(R"({"traceEvents": [)" + kKernel.substr(0, 39), "the trace is cut short inside traceEvents[0], in a string (byte 56)");
  checkRefused(R"({"traceEvents": [)" + kKernel.substr(0, 42), "the trace is cut short inside traceEvents[0] (byte 59)");
  checkRefused(R"({"traceEvents": [)" + kKernel + ", " + kKernel.substr(0, 10), "cut short inside traceEvents[1]");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "unterminated)", "in a string");
  checkRefused(R"({"schemaVersion": 1})", "no traceEvents");
  checkRefused(R"({"traceEvents": {"a": 1}})", "traceEvents is not an array");
  checkRefused(R"({"traceEvents": [1]})", "traceEvents[0] is not an object");
  checkRefused(R"({"traceEvents": [)" + kKernel + R"(, {"ph": "X", "cat": "kernel", "name": "k", "dur": 5}]})",
               "traceEvents[1] (kernel) has no ts");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "10"}]})", "traceEvents[0].ts is not a number");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": -10}]})", "traceEvents[0].ts is not a non-negative");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 10, "dur": "5"}]})", "traceEvents[0].dur is not a number");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1e400}]})", "traceEvents[0].ts is not a non-negative decimal number (1e400)");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": NaN}]})", "traceEvents[0].ts");
  checkRefused(R"({"traceEvents": [{"ph": 7, "cat": "kernel", "ts": 1}]})", "traceEvents[0].ph is not a string");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": {"correlation": "x"}}]})",
               "traceEvents[0].args.correlation is not a number");
  // Integers past int64 are refused, not wrapped into another number (2e19 wrapped to 1553255926290448384).
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": {"correlation": 20000000000000000000}}]})",
               "traceEvents[0].args.correlation is not an integer (20000000000000000000)");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": {"stream": 9223372036854775808}}]})",
               "traceEvents[0].args.stream is not an integer (9223372036854775808)");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": {"device": -9223372036854775809}}]})",
               "traceEvents[0].args.device is not an integer");
  checkRefused(R"({"traceEvents": []} trailing)", "trailing data after the top-level JSON object (byte 20)");
  checkRefused(R"({"traceEvents": []}})", "trailing data");
  checkRefused(R"({"traceEvents": [])", "cut short in the top-level object");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1]]})", "traceEvents[0]");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1}, ]})", "unexpected character in traceEvents[1]");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1} {"ph": "X"}]})", "expected ',' or ']' after traceEvents[0]");
  checkRefused(R"({"traceEvents": [], "traceEvents": []})", "traceEvents appears twice");
  // Unused events (blanked before parsing when they start as Kineto writes them) keep the index.
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a"}, {"ph": "f", "id": 1},
      {"cat": "cpu_op", "ph": "X"}, {"ph": "X", "cat": "kernel", "ts": "1"}]})", "traceEvents[3].ts is not a number");
  checkRefused(R"({"traceEvents" [])", "expected ':' after the key traceEvents");
  checkRefused(R"({"traceEvents": [], "distributedInfo": {"rank": "zero"}})", "distributedInfo.rank");
  // Nesting a million deep: refused at the splitter's 64 levels, inside traceEvents or not.
  checkRefused(R"({"traceEvents": [)" + std::string(1000000, '[') + std::string(1000000, ']') + "]}",
               "traceEvents[0] is nested deeper than 64 levels");
  checkRefused(R"({"deviceProperties": )" + std::string(1000000, '[') + std::string(1000000, ']') + R"(, "traceEvents": []})",
               "the value of deviceProperties is nested deeper than 64 levels");
  const std::string gz = gzip(R"({"traceEvents": [)" + kKernel + "]}");
  checkRefused(gz.substr(0, gz.size() / 2), "gzip stream is cut short");
  std::string corrupt = gz;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x5a);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x5a);
  // Streamed, the damage shows as whatever comes first: bad JSON or the gzip check.
  checkRefused(corrupt, "");
  checkRefused(gz + "garbage after the last member", "gzip stream is corrupt");
  checkRefused(gzip("GAPWATCH"), "not a JSON object");
}

TEST_CASE("ROCm traces: hip* calls are their CUDA twins, and numbers written as strings are read", "[kineto]") {
  // As Kineto's roctracer back end writes them: the HIP runtime's names under cuda_runtime, some
  // args' numbers as strings. A string that is no number is still refused.
  const std::string trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": "3"}},
    {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_SB_MT64x64x8", "pid": 2, "tid": 0, "ts": 16, "dur": 20,
     "args": {"device": "2", "stream": "0", "correlation": "3"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 1, "tid": 1, "ts": 40, "dur": 5, "args": {"correlation": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 1, "tid": 1, "ts": 50, "dur": 40, "args": {"correlation": 5}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Host)", "pid": 2, "tid": 0, "ts": 60, "dur": 4,
     "args": {"device": 2, "stream": 0, "correlation": 5, "bytes": "4096"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemsetAsync", "pid": 1, "tid": 1, "ts": 95, "dur": 2, "args": {"correlation": 6}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipStreamSynchronize_spt", "pid": 1, "tid": 1, "ts": 100, "dur": 9, "args": {"correlation": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipDeviceSynchronize", "pid": 1, "tid": 1, "ts": 110, "dur": 9, "args": {"correlation": 8}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 1, "tid": 1, "ts": 120, "dur": 9, "args": {"correlation": 9}}
  ]})J";
  Collected got;
  const KinetoReadResult r = readText(trace, got);
  REQUIRE(r.read.ok());
  REQUIRE(got.calls.size() == 7);
  CHECK(got.calls[0].kind == v1::API_KIND_LAUNCH);
  CHECK(got.calls[0].correlation_id == 3);
  CHECK(got.calls[1].kind == v1::API_KIND_LAUNCH);
  CHECK(got.calls[2].kind == v1::API_KIND_MEMCPY);
  CHECK(got.calls[3].kind == v1::API_KIND_MEMSET_ASYNC);
  CHECK(got.calls[4].kind == v1::API_KIND_STREAM_SYNC);
  CHECK(got.calls[4].blocked);
  CHECK(got.calls[5].kind == v1::API_KIND_DEVICE_SYNC);
  CHECK(got.calls[6].kind == v1::API_KIND_GRAPH_LAUNCH);
  CHECK(r.counts.launches == 2);
  REQUIRE(got.activities.size() == 2);
  CHECK(got.activities[0].device == 2);
  CHECK(got.activities[0].stream == 0);
  CHECK(got.activities[0].correlation_id == 3);
  CHECK(got.activities[1].bytes == 4096);
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "gpu_memcpy", "ts": 1, "args": {"bytes": "4 KiB"}}]})",
               R"(traceEvents[0].args.bytes is not a number ("4 KiB"))");
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": {"stream": "99999999999999999999"}}]})",
               "traceEvents[0].args.stream is not a number");
}

TEST_CASE("ROCm traces as roctracer writes them: a call's stream is a pointer, a copy's size is on its call", "[kineto]") {
  // libkineto/src/RoctracerActivity_inl.h: a HIP call's stream as C++ prints a pointer, a copy
  // call's "size", "kind", "src" and "dst" as strings, grid and block as arrays; a GPU record's
  // "kind" as a word and no size on it. Until issue 20 the pointer refused the whole trace.
  const std::string trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"External id": 3, "cid": 42, "correlation": 3, "kernel": "k", "stream": "0x55d3c8a0e000",
              "grid": [304, 1, 1], "block": [256, 1, 1], "shared memory": 0}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 16, "dur": 20,
     "args": {"device": 0, "stream": 0, "correlation": 3, "External id": 3, "kind": "Dispatch Kernel"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 1, "tid": 1, "ts": 50, "dur": 40,
     "args": {"stream": "0x0", "cid": 43, "correlation": 5, "src": "0x7f2b0ee69af8", "dst": "0x7f2c0e75690e",
              "size": "4", "kind": "2"}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Host)", "pid": 0, "tid": 0, "ts": 60, "dur": 4,
     "args": {"device": 0, "stream": 0, "correlation": 5, "External id": 5, "kind": "DtoH"}}
  ]})J";
  Collected got;
  const KinetoReadResult r = readText(trace, got);
  REQUIRE(r.read.ok());
  REQUIRE(got.calls.size() == 2);
  CHECK(got.calls[0].kind == v1::API_KIND_LAUNCH);
  CHECK(got.calls[1].kind == v1::API_KIND_MEMCPY);
  CHECK(got.calls[1].bytes == 4);
  REQUIRE(got.activities.size() == 2);
  CHECK(got.activities[1].copy_kind == v1::COPY_KIND_D2H);
  CHECK(got.activities[1].bytes == 0);  // not in the record: the size is the call's
  // A pointer is read as one; anything else in a stream string is still refused.
  uint64_t pointer = 0;
  CHECK(parsePointer("0x55d3c8a0e000", pointer));
  CHECK(pointer == 0x55d3c8a0e000);
  CHECK(parsePointer("0xFFFFFFFFFFFFFFFF", pointer));
  CHECK(pointer == UINT64_MAX);
  CHECK_FALSE(parsePointer("0x", pointer));
  CHECK_FALSE(parsePointer("0x1ffffffffffffffff", pointer));  // 17 digits
  CHECK_FALSE(parsePointer("55d3", pointer));
  checkRefused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": {"stream": "0xq1"}}]})",
               R"(traceEvents[0].args.stream is not a number ("0xq1"))");
}

TEST_CASE("a synchronous copy to the host is a sync point in a trace: hipMemcpyWithStream, PyTorch's .item() on ROCm", "[kineto]") {
  // The call returns when its copy is done, whatever the host memory; before issue 20 only a
  // copy named Pageable made a copy call a sync point, so ROCm's .item() was none.
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "gapwatch_kineto_sync_copy_test.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << R"J({"traceEvents": [
      {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": 3}},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 16, "dur": 500, "args": {"device": 0, "stream": 0, "correlation": 3}},
      {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 1, "tid": 1, "ts": 20, "dur": 505,
       "args": {"stream": "0x0", "correlation": 5, "size": "4", "kind": "2"}},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Host)", "pid": 0, "tid": 0, "ts": 517, "dur": 3,
       "args": {"device": 0, "stream": 0, "correlation": 5, "kind": "DtoH"}},
      {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 700, "dur": 5, "args": {"correlation": 6}},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 706, "dur": 50, "args": {"device": 0, "stream": 0, "correlation": 6}}
    ]})J";
  }
  const analysis::RunReport report = analysis::analyseRecordingFiles({path.string()}, analysis::AnalysisOptions{});
  std::filesystem::remove(path);
  REQUIRE(report.analysis.processes.size() == 1);
  const analysis::ProcessAnalysis& p = report.analysis.processes[0];
  const analysis::SyncTypeStats* copy = nullptr;
  for (const analysis::SyncTypeStats& s : p.sync_points) {
    if (s.kind == SyncPointKind::kSyncCopy) copy = &s;
  }
  REQUIRE(copy != nullptr);
  CHECK(copy->count == 1);
  CHECK(copy->small_reads == 1);
  CHECK(copy->total_ns == 500'000);  // from its entry at 20 us to its copy's end at 520 us
}

TEST_CASE("the corpus' calls are all known: no launch, copy or sync of a documented API is read as another call", "[kineto]") {
  // Issue 20's corpus (tests/data/kineto/): every runtime and driver call in it is a documented
  // CUDA or HIP API whose kind the reader knows. One that came out API_KIND_OTHER would be a
  // launch without its kernel, or a sync point missed.
  int traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GAPWATCH_SOURCE_DIR) / "tests/data/kineto")) {
    if (entry.path().extension() != ".gz") continue;
    Collected got;
    const KinetoReadResult r = readKinetoTraceFile(entry.path().string(), got);
    INFO(entry.path().filename().string());
    REQUIRE(r.read.ok());
    REQUIRE(got.calls.size() >= 20);
    std::vector<std::string> other;
    for (const ApiCallEvent& c : got.calls) {
      if (c.kind == v1::API_KIND_OTHER) other.push_back(got.strings.display(v1::STRING_KIND_API_NAME, c.api_name_id));
    }
    CHECK(other.empty());
    if (!other.empty()) FAIL_CHECK("first call of no known kind: " << other.front());
    ++traces;
  }
  CHECK(traces == 8);  // every family of make_corpus.py
}

TEST_CASE("integers at int64's limits are read exactly", "[kineto]") {
  Collected got;
  const KinetoReadResult r = readText(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
      "ts": 10, "dur": 5, "args": {"stream": 9223372036854775807, "correlation": 18, "device": 0}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": -9223372036854775808, "ts": 8, "dur": 1,
      "args": {"correlation": 18}}]})", got);
  REQUIRE(r.read.ok());
  REQUIRE(got.activities.size() == 1);
  CHECK(got.activities[0].stream == 9223372036854775807ull);
  REQUIRE(got.calls.size() == 1);
  CHECK(got.calls[0].correlation_id == 18);
}

TEST_CASE("skipped events are not checked", "[kineto]") {
  // A cpu_op without ts (evidence only: left out, counted), an instant with a string ts (not used).
  Collected got;
  const KinetoReadResult r = readText(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add"},
      {"ph": "i", "name": "Iteration Start", "ts": "1"}, )" + kKernel + "]}", got);
  REQUIRE(r.read.ok());
  CHECK(got.activities.size() == 1);
  CHECK(r.counts.host_ranges_unreadable == 1);
}

TEST_CASE("ops, annotations and data-loading ranges become host ranges; nested ops only their outermost", "[kineto]") {
  Collected got;
  const KinetoReadResult r = readText(R"({"traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 5, "ts": 0, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "pid": 1, "tid": 5, "ts": 1, "dur": 9},
      {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 5, "ts": 20, "dur": 10, "args": {"Input Dims": [[2, 3]]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 5, "ts": 21, "dur": 8},
      {"ph": "X", "cat": "user_annotation", "name": "## metrics:publish ##", "pid": 1, "tid": 5, "ts": 40, "dur": 5},
      {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 5, "ts": 50, "dur": 5},
      {"ph": "X", "cat": "python_function", "name": "torch/utils/data/dataloader.py(631): __next__", "pid": 1, "tid": 5, "ts": 2, "dur": 7},
      {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 1, "tid": 5, "ts": 0, "dur": 90},
      )" + kKernel + "]}", got);
  REQUIRE(r.read.ok());
  // The step is a marker and the nccl range an NCCL call; the nested aten::addmm and the frame
  // that is not data loading are not sent.
  REQUIRE(got.host_ranges.size() == 4);
  std::vector<std::pair<v1::HostRangeKind, std::string>> kinds;
  for (const HostRangeEvent& h : got.host_ranges) {
    kinds.emplace_back(h.kind, got.strings.display(v1::STRING_KIND_HOST_RANGE_NAME, h.name_id));
  }
  std::sort(kinds.begin(), kinds.end());
  CHECK(kinds[0] == std::make_pair(v1::HOST_RANGE_KIND_INPUT_PIPELINE,
                                   std::string("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")));
  CHECK(kinds[1] == std::make_pair(v1::HOST_RANGE_KIND_INPUT_PIPELINE,
                                   std::string("torch/utils/data/dataloader.py(631): __next__")));
  CHECK(kinds[2] == std::make_pair(v1::HOST_RANGE_KIND_FRAMEWORK_OP, std::string("aten::linear")));
  CHECK(kinds[3] == std::make_pair(v1::HOST_RANGE_KIND_ANNOTATION, std::string("## metrics:publish ##")));
  CHECK(r.counts.nested_ops == 1);
  CHECK(r.counts.host_ranges == 4);
}


// --- streaming: memory bounded by the working set --------------------------------------------

// A trace made on the fly: `{"traceEvents": [{... "name": "` then `length` bytes of 'a' and no
// end. Nothing of its claimed size is ever held by the test.
class EndlessStringSource final : public ByteSource {
 public:
  explicit EndlessStringSource(uint64_t length) : left_(length) {}
  std::size_t read(std::span<uint8_t> buffer) override {
    std::size_t n = 0;
    while (n < buffer.size() && head_at_ < kHead.size()) buffer[n++] = static_cast<uint8_t>(kHead[head_at_++]);
    while (n < buffer.size() && left_ > 0) buffer[n++] = 'a', --left_;
    served += n;
    return n;
  }
  const std::string& failure() const override { return failure_; }
  uint64_t served = 0;

 private:
  static constexpr std::string_view kHead = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "name": ")";
  std::size_t head_at_ = 0;
  uint64_t left_;
  std::string failure_;
};

TEST_CASE("a 2 GB string is refused at the 64 MiB element cap, without reading it all", "[kineto]") {
  EndlessStringSource source(uint64_t{2} << 30);
  Collected got;
  const KinetoReadResult r = readKinetoTrace(source, got);
  REQUIRE_FALSE(r.read.ok());
  CAPTURE(r.read.error->message);
  CHECK(r.read.error->message.find("traceEvents[0] is longer than 64 MiB") != std::string::npos);
  CHECK(r.read.error->message.find('\n') == std::string::npos);
  CHECK(source.served < (uint64_t{80} << 20));
  CHECK_FALSE(hasContentToShow(r.read));
}

// Hands out at most `chunk` bytes a read, so that every boundary falls everywhere.
class TrickleSource final : public ByteSource {
 public:
  TrickleSource(const std::string& text, std::size_t chunk) : text_(text), chunk_(chunk) {}
  std::size_t read(std::span<uint8_t> buffer) override {
    const std::size_t n = std::min({buffer.size(), chunk_, text_.size() - at_});
    std::memcpy(buffer.data(), text_.data() + at_, n);
    at_ += n;
    return n;
  }
  const std::string& failure() const override { return failure_; }

 private:
  const std::string& text_;
  std::size_t chunk_;
  std::size_t at_ = 0;
  std::string failure_;
};

// A Kineto-like trace: `steps` ProfilerSteps and CPU ops first, then the device block with
// `per_step` launches per step (each kernel before its call, as Kineto writes them, with a
// backward jump at every "CUPTI buffer" of 1000 events), then thread names.
std::string syntheticTrace(int steps, int per_step) {
  std::string t = R"({"schemaVersion": 1, "distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [)";
  const uint64_t step_us = 100'000;  // 0.1 s
  const uint64_t start = 1'700'000'000'000'000;
  for (int s = 0; s < steps; ++s) {
    const uint64_t ts = start + static_cast<uint64_t>(s) * step_us;
    t += R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(s) + R"(", "pid": 9, "tid": -5, "ts": )" +
         std::to_string(ts) + R"(, "dur": )" + std::to_string(step_us - 10) + "},\n";
    t += R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm \"quoted\" \\ back", "pid": 9, "tid": -5, "ts": )" + std::to_string(ts + 1) +
         R"(, "dur": 3, "args": {"Input Dims": [[1, 2], [3]]}},)" + "\n";
  }
  uint64_t correlation = 1;
  const int total = steps * per_step;
  for (int i = 0; i < total; ++i) {
    // Every thousand events, a step back by half the span of the previous thousand.
    const int buffer = i / 1000, within = i % 1000;
    const uint64_t spacing = static_cast<uint64_t>(step_us / per_step);
    const uint64_t ts = start + (static_cast<uint64_t>(buffer) * 1000 + static_cast<uint64_t>(within)) * spacing -
                        (buffer > 0 && within < 500 ? 500 * spacing : 0);
    const std::string c = std::to_string(correlation++);
    t += R"({"ph": "X", "cat": "kernel", "name": "kernel_)" + std::to_string(i % 7) + R"(", "pid": 0, "tid": 7, "ts": )" +
         std::to_string(ts + 5) + R"(, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": )" + c + "}},\n";
    t += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": -5, "ts": )" + std::to_string(ts) +
         R"(, "dur": 3, "args": {"cbid": 211, "correlation": )" + c + "}},\n";
    t += R"({"ph": "f", "id": )" + c + R"(, "pid": 0, "tid": 7, "ts": )" + std::to_string(ts + 5) + R"(, "cat": "ac2g", "name": "ac2g", "bp": "e"},)" + "\n";
  }
  t += R"({"name": "thread_name", "ph": "M", "ts": 0, "pid": 9, "tid": -5, "args": {"name": "python"}}]})";
  return t;
}

struct Analysed {
  KinetoReadResult read;
  analysis::ProcessAnalysis analysis;
};

Analysed analyse(ByteSource& source) {
  analysis::ProcessAnalyser analyser(analysis::AnalysisOptions{});
  Analysed out;
  out.read = readKinetoTrace(source, analyser);
  out.analysis = analyser.finish(out.read.read, out.read.health).analysis;
  return out;
}

TEST_CASE("a long trace streams: the events held do not grow with it, none is late", "[kineto]") {
  uint64_t held_short = 0, held_long = 0;
  for (const int per_step : {100, 1000}) {
    const std::string trace = syntheticTrace(20, per_step);
    MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(trace.data()), trace.size()));
    const Analysed a = analyse(source);
    CAPTURE(per_step, trace.size());
    REQUIRE(a.read.read.ok());
    CHECK(a.read.counts.kernels == static_cast<uint64_t>(20 * per_step));
    CHECK(a.read.counts.launches == static_cast<uint64_t>(20 * per_step));
    CHECK(a.read.counts.steps == 20);
    CHECK(a.analysis.late_events == 0);
    CHECK(a.analysis.rank == 1);
    // The held steps (two markers each) and one batch, however many device events.
    CHECK(a.read.counts.max_held_events <= 2 * 20 + 4096);
    CHECK(a.read.counts.max_buffered_bytes <= (std::size_t{16} << 20));
    (per_step == 100 ? held_short : held_long) = a.read.counts.max_held_events;
  }
  CHECK(held_long <= held_short + 4096);
  CHECK(held_long < 20 * 1000 * 2 / 4);  // a small part of the 40,000 device events
}

TEST_CASE("traces joined end to end: each CPU block's NCCL ranges are handed over by time, none late", "[kineto]") {
  // Three copies of a small trace, 5 s apart, each with its own CPU block (a step and a c10d
  // nccl:all_reduce range) before its device block: the ranges of a later copy must not wait for
  // the end of the file (they would then arrive seconds after the reorder window closed).
  std::string t = R"({"distributedInfo": {"rank": 0}, "traceEvents": [)";
  uint64_t correlation = 1;
  for (int copy = 0; copy < 3; ++copy) {
    const uint64_t base = 1'700'000'000'000'000 + static_cast<uint64_t>(copy) * 5'000'000;
    t += R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(copy) +
         R"(", "pid": 9, "tid": 1, "ts": )" + std::to_string(base) + R"(, "dur": 1000000},)";
    t += R"({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 9, "tid": 1, "ts": )" +
         std::to_string(base + 500'000) + R"(, "dur": 50},)";
    for (int i = 0; i < 100; ++i) {
      const uint64_t ts = base + static_cast<uint64_t>(i) * 10'000;
      const std::string c = std::to_string(correlation++);
      t += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 1, "ts": )" +
           std::to_string(ts) + R"(, "dur": 3, "args": {"correlation": )" + c + "}},";
      t += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + std::to_string(ts + 5) +
           R"(, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": )" + c + "}},";
    }
  }
  t.back() = ']';
  t += "}";
  MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.data()), t.size()));
  const Analysed a = analyse(source);
  REQUIRE(a.read.read.ok());
  CHECK(a.read.counts.host.annotation_calls == 3);
  CHECK(a.read.counts.steps == 3);
  CHECK(a.analysis.late_events == 0);
}

TEST_CASE("python_function events give the calls their call sites", "[kineto]") {
  // with_stack=True: train.py's loop calls step(), which calls loss.item() (a sync); the launch
  // is made in step() itself. The innermost Python range around each call is its call site.
  const std::string t = R"({"traceEvents": [
    {"ph": "X", "cat": "python_function", "name": "train.py(40): main", "pid": 9, "tid": 1, "ts": 1000, "dur": 900},
    {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 9, "tid": 1, "ts": 1010, "dur": 500},
    {"ph": "X", "cat": "python_function", "name": "torch/_tensor.py(30): item", "pid": 9, "tid": 1, "ts": 1300, "dur": 150},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 1, "ts": 1100, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1110, "dur": 250, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 9, "tid": 1, "ts": 1310, "dur": 60, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 9, "tid": 2, "ts": 1320, "dur": 10, "args": {"correlation": 3}}
  ]})";
  Collected got;
  REQUIRE(readText(t, got).read.ok());
  REQUIRE(got.calls.size() == 3);
  const auto site = [&](const ApiCallEvent& c) {
    const std::string* text = got.strings.find(v1::STRING_KIND_CALL_SITE, c.call_site_id);
    return text ? *text : std::string("(none)");
  };
  CHECK(site(got.calls[0]) == "train.py(12): step");
  CHECK(site(got.calls[1]) == "torch/_tensor.py(30): item");
  CHECK(got.calls[2].call_site_id == 0);  // thread 2 ran no Python range
  // The whole stacks, innermost first, in the recorder's text.
  const auto stack = [&](const ApiCallEvent& c) {
    const std::string* text = got.strings.find(v1::STRING_KIND_PYTHON_STACK, c.python_stack_id);
    return text ? *text : std::string("(none)");
  };
  CHECK(stack(got.calls[0]) == "step\ttrain.py\t12\nmain\ttrain.py\t40\n");
  CHECK(stack(got.calls[1]) == "item\ttorch/_tensor.py\t30\nstep\ttrain.py\t12\nmain\ttrain.py\t40\n");
  CHECK(got.calls[2].python_stack_id == 0);
  // And the report has them: the sync point's call site, and "call sites" no longer missing.
  MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.data()), t.size()));
  const Analysed a = analyse(source);
  bool found = false;
  for (const analysis::SyncTypeStats& s : a.analysis.sync_points) {
    // Named as a recording's are: the user's line, torch's frame folded beneath it.
    for (const analysis::CallSite& c : s.top_call_sites) found = found || c.name == "train.py:12 in step (via torch/_tensor.py:30 in item)";
  }
  CHECK(found);
  const auto& missing = a.analysis.source.not_in_trace;
  CHECK(std::find(missing.begin(), missing.end(), std::string(analysis::kNotInTraceCallSites)) == missing.end());
}

TEST_CASE("a parent and child python_function that start in the same microsecond, child written first: the child is the site", "[kineto]") {
  // Kineto writes a thread's ranges as they end, so a child that starts with its parent comes first.
  const std::string t = R"({"traceEvents": [
    {"ph": "X", "cat": "python_function", "name": "torch/_tensor.py(30): item", "pid": 9, "tid": 1, "ts": 1000, "dur": 100},
    {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 9, "tid": 1, "ts": 1000, "dur": 500},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 9, "tid": 1, "ts": 1010, "dur": 60, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 9, "tid": 1, "ts": 1200, "dur": 10, "args": {"correlation": 3}}
  ]})";
  Collected got;
  REQUIRE(readText(t, got).read.ok());
  REQUIRE(got.calls.size() == 2);
  const auto site = [&](const ApiCallEvent& c) {
    const std::string* text = got.strings.find(v1::STRING_KIND_CALL_SITE, c.call_site_id);
    return text ? *text : std::string("(none)");
  };
  CHECK(site(got.calls[0]) == "torch/_tensor.py(30): item");
  CHECK(site(got.calls[1]) == "train.py(12): step");
  const std::string* stack = got.strings.find(v1::STRING_KIND_PYTHON_STACK, got.calls[0].python_stack_id);
  REQUIRE(stack != nullptr);
  CHECK(*stack == "item\ttorch/_tensor.py\t30\nstep\ttrain.py\t12\n");
}

TEST_CASE("a long CPU side written in order is never sorted again: collectives, Python ranges, held events", "[kineto]") {
  // 3,000 steps of an FSDP-like loop: a Python frame, an op, a collective, launches after it.
  // Each runtime call after a record_param_comms takes the NCCL calls, each call looks its Python
  // range up, and each batch sorts what is held: before issue 20 every one re-sorted all so far.
  std::string t = R"({"traceEvents": [)";
  for (int i = 0; i < 3000; ++i) {
    const std::string ts = std::to_string(1000 + 100 * i);
    const std::string ts2 = std::to_string(1000 + 100 * i + 10);
    t += R"({"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 9, "tid": 1, "ts": )" + ts + R"(, "dur": 90},)";
    t += R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(i) + R"(", "pid": 9, "tid": 1, "ts": )" + ts + R"(, "dur": 95},)";
    t += R"({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 1, "ts": )" + ts2 +
         R"(, "dur": 20, "args": {"Collective name": "allreduce", "In msg nelems": 4, "Out msg nelems": 4, "dtype": "Float", "Group size": 2}},)";
    t += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 1, "ts": )" + std::to_string(1000 + 100 * i + 40) +
         R"(, "dur": 5, "args": {"correlation": )" + std::to_string(i + 1) + "}},";
  }
  t += R"({"ph": "i", "name": "end"}]})";
  Collected got;
  const KinetoReadResult r = readText(t, got);
  REQUIRE(r.read.ok());
  CHECK(got.calls.size() == 3000);
  CHECK(r.counts.host.comms_calls == 3000);
  CHECK(r.counts.steps == 3000);
  CHECK(r.counts.host.comms_ranges_reordered == 0);
  CHECK(r.counts.held_reordered == 0);
  // Every call still has its site.
  std::size_t with_site = 0;
  for (const ApiCallEvent& c : got.calls) with_site += c.call_site_id != 0;
  CHECK(with_site == 3000);
}

TEST_CASE("every read boundary gives the same events", "[kineto]") {
  const std::string trace = syntheticTrace(3, 40);
  Collected whole;
  REQUIRE(readText(trace, whole).read.ok());
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{4093}}) {
    TrickleSource source(trace, chunk);
    Collected got;
    CAPTURE(chunk);
    REQUIRE(readKinetoTrace(source, got).read.ok());
    CHECK(got.calls == whole.calls);
    CHECK(got.activities == whole.activities);
    CHECK(got.markers == whole.markers);
    CHECK(got.strings.display(v1::STRING_KIND_THREAD_NAME, got.calls[0].thread_id) == "python");
    const std::string gz = gzip(trace);
    TrickleSource zipped(gz, chunk);
    Collected inflated;
    REQUIRE(readKinetoTrace(zipped, inflated).read.ok());
    CHECK(inflated.activities == whole.activities);
  }
}

TEST_CASE("metadata after traceEvents is in the Hello, read once, gzipped or not", "[kineto]") {
  std::string trace = R"({"traceEvents": [)";
  for (int i = 0; i < 5000; ++i) {
    trace += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4458676522690.655, "dur": 68.0, "args": {"stream": 7}},)";
  }
  trace += R"({"ph": "i", "name": "end"}], "distributedInfo": {"rank": 5, "world_size": 8}, "baseTimeNanoseconds": 1711964646000000000})";
  for (const bool zipped : {false, true}) {
    const std::string text = zipped ? gzip(trace) : trace;
    MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    Collected got;
    const KinetoReadResult r = readKinetoTrace(source, got);
    REQUIRE(r.read.ok());
    REQUIRE(got.hello);
    CHECK(got.hello->rank() == 5);
    CHECK(got.hello->world_size() == 8);
    CHECK(got.hello->start_unix_ns() == 1711964646000000000ull + 4458676522690655ull);
  }
}

TEST_CASE("events in any order are handed over in time order, with nothing left out, spilled to disk or not", "[kineto]") {
  // A trace listed by kind, as some writers do: every kernel first, then every runtime call, each
  // block in time order, 1000 launches. The engine's window would leave most of them out as late.
  std::string kernels, calls;
  for (int i = 0; i < 1000; ++i) {
    const std::string start = std::to_string(1000 + 100 * i);
    kernels += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + std::to_string(1010 + 100 * i) +
               R"(, "dur": 50, "args": {"stream": 7, "correlation": )" + std::to_string(i + 1) + "}},";
    calls += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )" + start +
             R"(, "dur": 5, "args": {"correlation": )" + std::to_string(i + 1) + "}},";
  }
  const std::string trace = R"({"traceEvents": [)" + kernels + calls + R"({"ph": "i", "name": "end"}]})";
  for (const std::size_t in_memory : {std::size_t{1} << 20, std::size_t{64}}) {
    INFO("in memory: " << in_memory);
    KinetoReadOptions options;
    options.sort_max_in_memory = in_memory;
    MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(trace.data()), trace.size()));
    Collected got;
    const KinetoReadResult r = readKinetoTrace(source, got, options);
    REQUIRE(r.read.ok());
    CHECK(r.counts.sorted_events == 2000);
    CHECK(r.counts.sort_runs_spilled == (in_memory == 64 ? 2000 / 64 : 0));
    CHECK(r.counts.max_sort_held <= in_memory);
    REQUIRE(got.calls.size() == 1000);
    REQUIRE(got.activities.size() == 1000);
    // In time order, each list and the two together as handed over.
    for (std::size_t i = 1; i < got.calls.size(); ++i) CHECK(got.calls[i - 1].start_ns < got.calls[i].start_ns);
    for (std::size_t i = 1; i < got.activities.size(); ++i) CHECK(got.activities[i - 1].start_ns < got.activities[i].start_ns);
  }
  // The engine sees every event: no late ones.
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "gapwatch_kineto_test_by_kind.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << trace;
  }
  const analysis::RunReport run = analysis::analyseRecordingFiles({path.string()}, analysis::AnalysisOptions{});
  std::filesystem::remove(path);
  REQUIRE(run.analysis.processes.size() == 1);
  CHECK(run.analysis.processes[0].late_events == 0);
  REQUIRE(run.analysis.processes[0].devices.size() == 1);
  CHECK(run.analysis.processes[0].devices[0].kernels == 1000);
}

}  // namespace
}  // namespace gapwatch
