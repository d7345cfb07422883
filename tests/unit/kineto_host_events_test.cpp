// tests/unit/kineto_host_events_test.cpp: reader/kineto_host_events.h: NCCL host calls from c10d's
// record_param_comms ranges and nccl:* annotations, and a thread's consecutive polls merged into
// one QUERY call; then the same through readKinetoTrace on a small hand-written trace.
#include "reader/kineto_host_events.h"
#include "reader/kineto_trace.h"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gapwatch {
namespace {

KinetoCommsArgs comms(const std::string& collective, int64_t in, int64_t out, const std::string& dtype, int64_t group) {
  KinetoCommsArgs a;
  noteKinetoCommsArg(a, "Collective name", collective);
  noteKinetoCommsArg(a, "In msg nelems", in);
  noteKinetoCommsArg(a, "Out msg nelems", out);
  noteKinetoCommsArg(a, "dtype", dtype);
  noteKinetoCommsArg(a, "Group size", group);
  return a;
}

ApiCallEvent call(v1::ApiKind kind, uint32_t thread, uint64_t start, uint64_t end, uint32_t name_id) {
  ApiCallEvent c;
  c.kind = kind;
  c.thread_id = thread;
  c.start_ns = start;
  c.end_ns = end;
  c.api_name_id = name_id;
  c.return_code = 600;  // never kept: a trace does not record return codes
  return c;
}

constexpr uint32_t kEventQuery = 1, kStreamQuery = 2, kLaunch = 3;

TEST_CASE("record_param_comms of a collective is an NCCL call with its size", "[kineto][nccl]") {
  KinetoHostEvents host;
  // nccl_rank-0's first allreduce: 2049000 floats among 2 ranks.
  host.onRecordParamComms(1, 1000, 190000, comms("allreduce", 2049000, 2049000, "Float", 2));
  const std::vector<NcclCallEvent> calls = host.takeNcclCalls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].op == v1::NCCL_OP_ALL_REDUCE);
  CHECK(calls[0].thread_id == 1);
  CHECK(calls[0].start_ns == 1000);
  CHECK(calls[0].end_ns == 190000);
  CHECK(calls[0].count == 2049000);
  CHECK(calls[0].bytes == 2049000 * 4);
  CHECK(calls[0].data_type == v1::NCCL_DATA_TYPE_FLOAT32);
  CHECK(calls[0].nranks == 2);
  CHECK(host.counts().record_param_comms == 1);
  CHECK(host.counts().comms_calls == 1);
}

TEST_CASE("record_param_comms entries that are no NCCL operation of their own are left out", "[kineto][nccl]") {
  KinetoHostEvents host;
  host.onRecordParamComms(1, 0, 10, comms("wait", 0, 0, "Byte", 1));
  host.onRecordParamComms(1, 20, 30, comms("barrier", 1, 1, "Float", 2));
  host.onRecordParamComms(1, 40, 50, comms("coalesced", 0, 0, "Byte", 2));
  host.onRecordParamComms(1, 60, 70, KinetoCommsArgs{});  // older PyTorch: no args at all
  host.onRecordParamComms(1, 80, 90, comms("something_new", 5, 5, "Float", 2));
  CHECK(host.takeNcclCalls().empty());
  CHECK(host.counts().record_param_comms == 5);
  CHECK(host.counts().comms_calls == 0);
}

TEST_CASE("counts are as NCCL takes them: reduce_scatter's receive count, all_to_all's per peer", "[kineto][nccl]") {
  KinetoHostEvents host;
  host.onRecordParamComms(1, 0, 10, comms("_reduce_scatter_base", 800, 200, "BFloat16", 4));
  host.onRecordParamComms(1, 20, 30, comms("all_to_all", 800, 800, "Half", 4));
  host.onRecordParamComms(1, 40, 50, comms("broadcast", 53, 53, "Long", 2));
  host.onRecordParamComms(1, 60, 70, comms("_allgather_base", 10, 40, "Float", 4));
  host.onRecordParamComms(1, 80, 90, comms("send", 7, 7, "NoSuchType", 2));
  const std::vector<NcclCallEvent> calls = host.takeNcclCalls();
  REQUIRE(calls.size() == 5);
  CHECK(calls[0].op == v1::NCCL_OP_REDUCE_SCATTER);
  CHECK(calls[0].count == 200);
  CHECK(calls[0].bytes == 800 * 2);  // what this rank contributes
  CHECK(calls[1].op == v1::NCCL_OP_ALL_TO_ALL);
  CHECK(calls[1].count == 200);
  CHECK(calls[1].bytes == 200 * 2);
  CHECK(calls[2].op == v1::NCCL_OP_BROADCAST);
  CHECK(calls[2].bytes == 53 * 8);
  CHECK(calls[2].data_type == v1::NCCL_DATA_TYPE_INT64);
  CHECK(calls[3].op == v1::NCCL_OP_ALL_GATHER);
  CHECK(calls[3].count == 10);
  CHECK(calls[4].op == v1::NCCL_OP_SEND);
  CHECK(calls[4].count == 7);
  CHECK(calls[4].bytes == 0);  // an element size it does not know is no guess
}

TEST_CASE("nccl:* annotations are NCCL calls without a size unless a record_param_comms call holds them",
          "[kineto][nccl]") {
  KinetoHostEvents host;
  CHECK_FALSE(host.onUserAnnotation(1, 0, 5, "Optimizer.step#SGD.step"));
  CHECK_FALSE(host.onUserAnnotation(1, 0, 5, "nccl:no_such_op"));
  host.onRecordParamComms(1, 100, 300, comms("allreduce", 10, 10, "Float", 2));
  CHECK(host.onUserAnnotation(1, 120, 210, "nccl:all_reduce"));        // inside: the same collective
  CHECK(host.onUserAnnotation(2, 120, 210, "nccl:all_reduce"));        // another thread's
  CHECK(host.onUserAnnotation(1, 400, 450, "nccl:_all_gather_base"));  // outside any
  CHECK(host.onUserAnnotation(1, 250, 350, "nccl:broadcast"));         // sticks out of it
  const std::vector<NcclCallEvent> calls = host.takeNcclCalls();
  REQUIRE(calls.size() == 4);
  CHECK(calls[0].start_ns == 100);
  CHECK(calls[0].count == 10);
  CHECK(calls[1].thread_id == 2);
  CHECK(calls[1].bytes == 0);
  CHECK(calls[1].count == 0);
  CHECK(calls[2].op == v1::NCCL_OP_BROADCAST);
  CHECK(calls[3].op == v1::NCCL_OP_ALL_GATHER);
  CHECK(host.counts().nccl_annotations == 4);
  CHECK(host.counts().annotation_calls == 3);
}

TEST_CASE("NCCL calls can be taken in parts; a later annotation is still checked against earlier calls",
          "[kineto][nccl]") {
  KinetoHostEvents host;
  host.onRecordParamComms(1, 100, 300, comms("allreduce", 10, 10, "Float", 2));
  CHECK(host.takeNcclCalls().size() == 1);
  CHECK(host.onUserAnnotation(1, 120, 210, "nccl:all_reduce"));
  CHECK(host.onUserAnnotation(1, 500, 600, "nccl:all_reduce"));
  const std::vector<NcclCallEvent> later = host.takeNcclCalls();
  REQUIRE(later.size() == 1);
  CHECK(later[0].start_ns == 500);
  CHECK(host.takeNcclCalls().empty());
}

TEST_CASE("taking NCCL calls after each collective re-sorts nothing already in order", "[kineto][nccl]") {
  // The reader takes the calls whenever a runtime call follows a record_param_comms: once per
  // collective on an FSDP trace. Each take used to sort every range since the start.
  KinetoHostEvents host;
  constexpr uint64_t kCollectives = 20000;
  for (uint64_t i = 0; i < kCollectives; ++i) {
    host.onRecordParamComms(1, 1000 * i, 1000 * i + 500, comms("allreduce", 10, 10, "Float", 2));
    REQUIRE(host.takeNcclCalls().size() == 1);
  }
  CHECK(host.counts().comms_ranges_reordered == 0);
  // Out of order (a CUPTI buffer boundary): only what comes after the late range's place moves,
  // and annotations are still checked against every range.
  host.onRecordParamComms(1, 1000 * (kCollectives - 3) + 600, 1000 * (kCollectives - 3) + 700, comms("allreduce", 1, 1, "Float", 2));
  REQUIRE(host.takeNcclCalls().size() == 1);
  CHECK(host.counts().comms_ranges_reordered == 3);
  CHECK(host.onUserAnnotation(1, 1000 * (kCollectives - 3) + 610, 1000 * (kCollectives - 3) + 690, "nccl:all_reduce"));
  CHECK(host.onUserAnnotation(1, 1000 * 7 + 10, 1000 * 7 + 20, "nccl:all_reduce"));
  CHECK(host.onUserAnnotation(1, 1000 * 7 + 510, 1000 * 7 + 520, "nccl:all_reduce"));
  const std::vector<NcclCallEvent> left = host.takeNcclCalls();
  REQUIRE(left.size() == 1);  // only the one between two ranges
  CHECK(left[0].start_ns == 7510);
}

TEST_CASE("a thread's consecutive polls become one QUERY call with the number of polls", "[kineto][polls]") {
  KinetoHostEvents host;
  std::vector<ApiCallEvent> out;
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 100, 102, kEventQuery), out);
  host.onApiCall(call(v1::API_KIND_QUERY, 2, 101, 103, kEventQuery), out);  // another thread: its own run
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 105, 107, kEventQuery), out);
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 110, 112, kEventQuery), out);
  CHECK(out.empty());  // held until the run ends
  host.onApiCall(call(v1::API_KIND_LAUNCH, 1, 120, 125, kLaunch), out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].kind == v1::API_KIND_QUERY);
  CHECK(out[0].thread_id == 1);
  CHECK(out[0].start_ns == 100);
  CHECK(out[0].end_ns == 112);
  CHECK(out[0].bytes == 3);
  CHECK(out[0].return_code == 0);
  CHECK(out[1].kind == v1::API_KIND_LAUNCH);
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 130, 131, kEventQuery), out);
  host.flushPolls(out);
  REQUIRE(out.size() == 4);
  std::vector<uint64_t> polls_by_thread(3, 0);
  for (std::size_t i = 2; i < out.size(); ++i) polls_by_thread[out[i].thread_id] = out[i].bytes;
  CHECK(polls_by_thread[1] == 1);
  CHECK(polls_by_thread[2] == 1);
  CHECK(host.counts().polls == 5);
  CHECK(host.counts().poll_runs == 3);
}

TEST_CASE("a poll of the other API, or one that goes back in time, starts a new run", "[kineto][polls]") {
  KinetoHostEvents host;
  std::vector<ApiCallEvent> out;
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 100, 102, kEventQuery), out);
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 103, 104, kStreamQuery), out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].api_name_id == kEventQuery);
  CHECK(out[0].bytes == 1);
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 50, 51, kStreamQuery), out);  // before the run's last end
  REQUIRE(out.size() == 2);
  CHECK(out[1].start_ns == 103);
  CHECK(out[1].bytes == 1);
  host.flushPolls(out);
  REQUIRE(out.size() == 3);
  CHECK(out[2].start_ns == 50);
}

TEST_CASE("polls far apart are not one loop", "[kineto][polls]") {
  KinetoHostEvents host;
  std::vector<ApiCallEvent> out;
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 0, 1'000, kEventQuery), out);
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 101'000, 102'000, kEventQuery), out);  // 100 us after: still one
  host.onApiCall(call(v1::API_KIND_QUERY, 1, 202'001, 203'000, kEventQuery), out);  // 100.001 us after: a new one
  host.flushPolls(out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].bytes == 2);
  CHECK(out[0].end_ns == 102'000);
  CHECK(out[1].bytes == 1);
  CHECK(out[1].start_ns == 202'001);
}

TEST_CASE("dtype names are c10's, with their sizes", "[kineto][nccl]") {
  CHECK(kinetoDtype("Float").size == 4);
  CHECK(kinetoDtype("BFloat16").type == v1::NCCL_DATA_TYPE_BFLOAT16);
  CHECK(kinetoDtype("Byte").size == 1);
  CHECK(kinetoDtype("Short").type == v1::NCCL_DATA_TYPE_UNSPECIFIED);
  CHECK(kinetoDtype("Short").size == 2);
  CHECK(kinetoDtype("float").size == 0);  // not c10's spelling
  CHECK(ncclOpOfCollectiveName("wait") == std::nullopt);
  CHECK(ncclOpOfAnnotation("nccl:all_to_all") == v1::NCCL_OP_ALL_TO_ALL);
  CHECK(ncclOpOfAnnotation("all_to_all") == std::nullopt);
}

// --- through the reader ---------------------------------------------------------------------------

struct Collected : RecordingVisitor {
  std::optional<v1::Hello> hello;
  std::optional<v1::Goodbye> goodbye;
  std::vector<ApiCallEvent> calls;
  std::vector<NcclCallEvent> nccl;
  void onHello(const v1::Hello& h, uint64_t) override { hello = h; }
  void onBatch(const DecodedBatch& batch, const StringTable&) override {
    calls.insert(calls.end(), batch.api_calls.begin(), batch.api_calls.end());
    nccl.insert(nccl.end(), batch.nccl_calls.begin(), batch.nccl_calls.end());
  }
  void onGoodbye(const v1::Goodbye& g, uint64_t) override { goodbye = g; }
};

// One thread: a broadcast with its annotation inside, a wait, three polls, a launch.
const std::string kTrace = R"J({
  "schemaVersion": 1, "traceName": "/tmp/trace.json",
  "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 5, "ts": 100, "dur": 50,
     "args": {"Collective name": "broadcast", "In msg nelems": 53, "Out msg nelems": 53, "dtype": "Long",
              "Group size": 2, "In split size": "[]", "Process Group Name": "0"}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:broadcast", "pid": 9, "tid": 5, "ts": 110, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 5, "ts": 160, "dur": 10,
     "args": {"Collective name": "wait", "dtype": "Byte", "In msg nelems": 0, "Group size": 1, "Out msg nelems": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 9, "tid": 5, "ts": 170, "dur": 1,
     "args": {"Collective name": "allreduce"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 9, "tid": 5, "ts": 200, "dur": 1, "args": {"cbid": 18, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 9, "tid": 5, "ts": 202, "dur": 1, "args": {"cbid": 18, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 9, "tid": 5, "ts": 204, "dur": 2, "args": {"cbid": 18, "correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 5, "ts": 210, "dur": 4, "args": {"cbid": 211, "correlation": 4}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 220, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 4}}
  ]
})J";

TEST_CASE("a trace's record_param_comms becomes an NCCL call and its polls one QUERY call", "[kineto]") {
  Collected got;
  MemoryByteSource source(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kTrace.data()), kTrace.size()));
  const KinetoReadResult r = readKinetoTrace(source, got);
  REQUIRE(r.read.ok());
  REQUIRE(got.hello);
  CHECK(got.hello->source() == v1::STREAM_SOURCE_KINETO_TRACE);
  CHECK(got.hello->clock() == v1::CLOCK_DOMAIN_KINETO_US);
  CHECK(got.hello->trace_schema_version() == 1);
  CHECK(got.hello->trace_name() == "/tmp/trace.json");
  REQUIRE(got.nccl.size() == 1);
  CHECK(got.nccl[0].op == v1::NCCL_OP_BROADCAST);
  CHECK(got.nccl[0].start_ns == 100'000);
  CHECK(got.nccl[0].end_ns == 150'000);
  CHECK(got.nccl[0].bytes == 53 * 8);
  CHECK(got.nccl[0].nranks == 2);
  REQUIRE(got.calls.size() == 2);
  CHECK(got.calls[0].kind == v1::API_KIND_QUERY);
  CHECK(got.calls[0].bytes == 3);
  CHECK(got.calls[0].start_ns == 200'000);
  CHECK(got.calls[0].end_ns == 206'000);
  CHECK(got.calls[1].kind == v1::API_KIND_LAUNCH);
  CHECK(got.nccl[0].thread_id == got.calls[0].thread_id);  // one thread map for cpu_op and runtime
  REQUIRE(got.goodbye);
  CHECK(got.goodbye->nccl_calls() == 1);
  CHECK(got.goodbye->exit_reason() == v1::EXIT_REASON_UNSPECIFIED);
  CHECK_FALSE(got.goodbye->has_exit_status());
  CHECK(r.counts.api_calls == 4);
  CHECK(r.counts.host.polls == 3);
  CHECK(r.counts.host.poll_runs == 1);
  CHECK(r.counts.host.record_param_comms == 2);
  CHECK(r.counts.host.comms_calls == 1);
  CHECK(r.counts.host.annotation_calls == 0);
}

}  // namespace
}  // namespace gapwatch
