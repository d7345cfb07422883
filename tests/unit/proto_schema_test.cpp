// tests/unit/proto_schema_test.cpp: gapwatch.v1 behaves as docs/recording-format.md says.
//
// These tests pin what readers and writers rely on: the delta rules of a batch survive the wire,
// the Frame carries each message kind, data from a newer schema is kept rather than lost, and the
// .proto sources follow the schema conventions (Next id comments, UNSPECIFIED = 0).

#include <catch2/catch.hpp>

#include "gwt_test_writer.h"
#include "reader/events.h"

#include <gapwatch/recording_format.h>
#include <gapwatch/v1/events.pb.h>
#include <gapwatch/v1/stream.pb.h>
#include <gapwatch/wire_schema.h>

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <nccl.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace v1 = gapwatch::v1;

// The events with absolute values are the reader's (reader/events.h), and the writer's side of
// the delta rules is the test writer's encodeBatch (gwt_test_writer.h): no second declaration of
// either that could drift from the schema.
using gapwatch::ApiCallEvent;
using gapwatch::DeviceActivityEvent;

v1::EventBatch encodeEvents(uint64_t sequence, uint64_t base_time_ns, std::vector<ApiCallEvent> calls,
                            std::vector<DeviceActivityEvent> activities) {
  gapwatch::test::BatchContents contents;
  contents.sequence = sequence;
  contents.base_time_ns = base_time_ns;
  contents.api_calls = std::move(calls);
  contents.activities = std::move(activities);
  return gapwatch::test::encodeBatch(contents);
}

// The reader's side, written from the rules in events.proto (independently of StreamDecoder).
std::vector<ApiCallEvent> decodeApiCalls(const v1::EventBatch& batch) {
  std::vector<ApiCallEvent> calls;
  uint64_t time = batch.base_time_ns();
  uint64_t corr = 0;
  uint32_t thread = 0;
  for (const v1::ApiCall& in : batch.api_calls()) {
    time += static_cast<uint64_t>(in.start_delta_ns());
    corr += static_cast<uint64_t>(in.correlation_delta());
    if (in.thread_id() != 0) thread = in.thread_id();
    ApiCallEvent c;
    c.kind = in.kind();
    c.thread_id = thread;
    c.start_ns = time;
    c.end_ns = time + in.duration_ns();
    c.correlation_id = corr;
    c.stream = in.stream();
    c.bytes = in.bytes();
    c.copy_kind = in.copy_kind();
    c.src_memory = in.src_memory();
    c.dst_memory = in.dst_memory();
    c.blocked = in.blocked();
    c.return_code = in.return_code();
    c.api_name_id = in.api_name_id();
    c.device = in.device();
    c.call_site_id = in.call_site_id();
    c.cbid = in.cbid();
    c.domain = in.domain();
    c.python_stack_id = in.python_stack_id();
    calls.push_back(c);
  }
  return calls;
}

std::vector<DeviceActivityEvent> decodeActivities(const v1::EventBatch& batch) {
  std::vector<DeviceActivityEvent> acts;
  uint64_t time = batch.base_time_ns();
  uint64_t corr = 0;
  for (const v1::DeviceActivity& in : batch.activities()) {
    time += static_cast<uint64_t>(in.start_delta_ns());
    corr += static_cast<uint64_t>(in.correlation_delta());
    DeviceActivityEvent a;
    a.kind = in.kind();
    a.device = in.device();
    a.stream = in.stream();
    a.start_ns = time;
    a.end_ns = time + in.duration_ns();
    a.correlation_id = corr;
    a.name_id = in.name_id();
    a.bytes = in.bytes();
    a.copy_kind = in.copy_kind();
    a.src_memory = in.src_memory();
    a.dst_memory = in.dst_memory();
    a.graph_id = in.graph_id();
    a.sync_kind = in.sync_kind();
    a.event_record_correlation_id = in.event_record_correlation_id();
    a.event_record_stream = in.event_record_stream();
    acts.push_back(a);
  }
  return acts;
}

template <typename Message>
Message roundTrip(const Message& in) {
  std::string bytes;
  REQUIRE(in.SerializeToString(&bytes));
  Message out;
  REQUIRE(out.ParseFromString(bytes));
  return out;
}

// A field the current schema does not have, as a newer writer would append it.
std::string unknownVarintField(uint32_t number, uint64_t value) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.WriteTag(number << 3 | 0);  // wire type 0: varint
    out.WriteVarint64(value);
  }
  return bytes;
}

std::string unknownBytesField(uint32_t number, const std::string& value) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.WriteTag(number << 3 | 2);  // wire type 2: length-delimited
    out.WriteVarint32(static_cast<uint32_t>(value.size()));
    out.WriteString(value);
  }
  return bytes;
}

// `// Next id: N` of every top-level message in a .proto source, by message name.
std::map<std::string, int> nextIdComments(const std::string& path) {
  std::ifstream file(path);
  REQUIRE(file.good());
  const std::regex message_start(R"(^message\s+(\w+)\s*\{)");
  const std::regex next_id(R"(^\s*//\s*Next id:\s*(\d+))");
  std::map<std::string, int> result;
  std::string current;
  std::string line;
  while (std::getline(file, line)) {
    std::smatch m;
    if (std::regex_search(line, m, message_start)) {
      current = m[1];
      result[current] = 0;  // 0: no comment seen yet
    } else if (!current.empty() && std::regex_search(line, m, next_id)) {
      result[current] = std::stoi(m[1]);
    } else if (line.rfind('}', 0) == 0) {
      current.clear();
    }
  }
  return result;
}

const google::protobuf::FileDescriptor* schemaFile(const std::string& name) {
  // Referencing the generated types makes sure both files are linked and registered.
  (void)v1::Frame::descriptor();
  (void)v1::EventBatch::descriptor();
  return google::protobuf::DescriptorPool::generated_pool()->FindFileByName(name);
}

}  // namespace

TEST_CASE("A batch with delta-encoded times and correlation ids round-trips field by field",
          "[proto][batch]") {
  const uint64_t t0 = 1'700'000'000'000'000'000ULL;

  // Two threads interleaved, one copy that blocked, one call without a correlation id, and one
  // call that entered before the previous one (rings drain thread by thread, so lists are not
  // sorted): deltas go negative and the thread rule must restore each call's thread.
  // The fields after api_name_id: device, call_site_id, cbid, domain.
  std::vector<ApiCallEvent> calls(5);
  calls[0] = {v1::API_KIND_LAUNCH, 1234, t0 + 100, t0 + 3'100, 1'000'000, 13, 0,
              v1::COPY_KIND_UNSPECIFIED, v1::MEMORY_KIND_UNSPECIFIED,
              v1::MEMORY_KIND_UNSPECIFIED, false, 0, 1, 0, 0, 211, v1::API_DOMAIN_RUNTIME};
  calls[1] = {v1::API_KIND_MEMCPY, 1234, t0 + 5'000, t0 + 905'000, 1'000'001, 7, 64 << 20,
              v1::COPY_KIND_H2D, v1::MEMORY_KIND_PAGEABLE, v1::MEMORY_KIND_DEVICE, true, 0, 2, 0,
              9, 31, v1::API_DOMAIN_RUNTIME};
  calls[2] = {v1::API_KIND_STREAM_SYNC, 1240, t0 + 4'000, t0 + 1'004'000, 1'000'007, 14, 0,
              v1::COPY_KIND_UNSPECIFIED, v1::MEMORY_KIND_UNSPECIFIED,
              v1::MEMORY_KIND_UNSPECIFIED, true, 0, 3, 1, 10, 131, v1::API_DOMAIN_RUNTIME};
  calls[2].python_stack_id = 12;  // the sync was read with its thread's Python stack
  calls[3] = {v1::API_KIND_OTHER, 1240, t0 + 1'100'000, t0 + 1'100'500, 0, 0, 0,
              v1::COPY_KIND_UNSPECIFIED, v1::MEMORY_KIND_UNSPECIFIED,
              v1::MEMORY_KIND_UNSPECIFIED, false, 700, 0, 1, 0, 0, v1::API_DOMAIN_UNSPECIFIED};
  calls[4] = {v1::API_KIND_MALLOC, 1234, t0 + 1'200'000, t0 + 1'260'000, 1'000'009, 0, 1 << 30,
              v1::COPY_KIND_UNSPECIFIED, v1::MEMORY_KIND_UNSPECIFIED, v1::MEMORY_KIND_DEVICE,
              true, 2, 4, 0, 9, 20, v1::API_DOMAIN_DRIVER};

  std::vector<DeviceActivityEvent> acts(3);
  acts[0] = {v1::ACTIVITY_KIND_MEMCPY, 0, 7, t0 + 6'000, t0 + 900'000, 1'000'001, 0, 64 << 20,
             v1::COPY_KIND_H2D, v1::MEMORY_KIND_PAGEABLE, v1::MEMORY_KIND_DEVICE, 0};
  // Streams run concurrently: the second kernel started before the first.
  acts[1] = {v1::ACTIVITY_KIND_KERNEL, 0, 13, t0 + 950'000, t0 + 990'000, 1'000'000, 5, 0,
             v1::COPY_KIND_UNSPECIFIED, v1::MEMORY_KIND_UNSPECIFIED,
             v1::MEMORY_KIND_UNSPECIFIED, 0};
  acts[2] = {v1::ACTIVITY_KIND_KERNEL, 1, 14, t0 + 920'000, t0 + 921'000, 1'000'005, 6, 0,
             v1::COPY_KIND_UNSPECIFIED, v1::MEMORY_KIND_UNSPECIFIED,
             v1::MEMORY_KIND_UNSPECIFIED, 3};
  v1::EventBatch batch = encodeEvents(41, t0, calls, acts);

  v1::StringDef* name = batch.add_strings();
  name->set_id(5);
  name->set_kind(v1::STRING_KIND_KERNEL_NAME);
  name->set_text("_Z6matmulPfS_S_i");

  v1::NcclCall* nccl = batch.add_nccl_calls();
  nccl->set_op(v1::NCCL_OP_ALL_REDUCE);
  nccl->set_thread_id(1234);
  nccl->set_start_delta_ns(2'000'000);
  nccl->set_duration_ns(12'000);
  nccl->set_comm_id(1);
  nccl->set_count(1 << 20);
  nccl->set_data_type(v1::NCCL_DATA_TYPE_BFLOAT16);
  nccl->set_bytes(2 << 20);
  nccl->set_rank(3);
  nccl->set_nranks(8);
  nccl->set_stream(15);
  nccl->set_group_depth(1);

  v1::Marker* marker = batch.add_markers();
  marker->set_kind(v1::MARKER_KIND_STEP_BEGIN);
  marker->set_thread_id(1234);
  marker->set_time_delta_ns(50);
  marker->set_step(17);

  v1::DropCounter* drop = batch.add_drops();
  drop->set_source(v1::DROP_SOURCE_THREAD_RING);
  drop->set_id(1240);
  drop->set_dropped(3);

  // The deltas really are deltas: later elements carry small numbers, some of them negative.
  CHECK(batch.api_calls(2).thread_id() == 1240);
  CHECK(batch.api_calls(1).thread_id() == 0);
  CHECK(batch.api_calls(2).start_delta_ns() == -1'000);
  CHECK(batch.api_calls(1).correlation_delta() == 1);
  CHECK(batch.activities(2).start_delta_ns() == -30'000);

  v1::Frame frame;
  *frame.mutable_batch() = batch;
  const v1::Frame parsed = roundTrip(frame);
  REQUIRE(parsed.body_case() == v1::Frame::kBatch);
  const v1::EventBatch& got = parsed.batch();

  CHECK(got.sequence() == 41);
  CHECK(got.base_time_ns() == t0);

  const std::vector<ApiCallEvent> got_calls = decodeApiCalls(got);
  REQUIRE(got_calls.size() == calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    INFO("api call " << i);
    CHECK(got_calls[i] == calls[i]);
  }
  const std::vector<DeviceActivityEvent> got_acts = decodeActivities(got);
  REQUIRE(got_acts.size() == acts.size());
  for (size_t i = 0; i < acts.size(); ++i) {
    INFO("activity " << i);
    CHECK(got_acts[i] == acts[i]);
  }

  REQUIRE(got.strings_size() == 1);
  CHECK(got.strings(0).id() == 5);
  CHECK(got.strings(0).kind() == v1::STRING_KIND_KERNEL_NAME);
  CHECK(got.strings(0).text() == "_Z6matmulPfS_S_i");

  REQUIRE(got.nccl_calls_size() == 1);
  const v1::NcclCall& n = got.nccl_calls(0);
  CHECK(n.op() == v1::NCCL_OP_ALL_REDUCE);
  CHECK(got.base_time_ns() + static_cast<uint64_t>(n.start_delta_ns()) == t0 + 2'000'000);
  CHECK(n.duration_ns() == 12'000);
  CHECK(n.count() == (1u << 20));
  CHECK(n.data_type() == v1::NCCL_DATA_TYPE_BFLOAT16);
  CHECK(n.bytes() == (2u << 20));
  CHECK(n.rank() == 3);
  CHECK(n.nranks() == 8);
  CHECK(n.stream() == 15);
  CHECK(n.group_depth() == 1);

  REQUIRE(got.markers_size() == 1);
  CHECK(got.markers(0).kind() == v1::MARKER_KIND_STEP_BEGIN);
  CHECK(got.markers(0).step() == 17);
  REQUIRE(got.drops_size() == 1);
  CHECK(got.drops(0).source() == v1::DROP_SOURCE_THREAD_RING);
  CHECK(got.drops(0).id() == 1240);
  CHECK(got.drops(0).dropped() == 3);
}

TEST_CASE("A launch-heavy batch fits the budget of 16 bytes per event", "[proto][size]") {
  // 1000 launches 8 us apart, each an ApiCall and a kernel DeviceActivity, with correlation ids
  // stepping by 2 (a runtime call and the driver call under it) and the optional CUPTI cbid and
  // domain left out. This is the schema's side of the budget of ARCHITECTURE.md section 8: a
  // plain field-by-field encoding of typical launch-bound work meets it. A new field written on
  // every launch breaks this test on purpose: find the bytes elsewhere first.
  std::vector<ApiCallEvent> calls;
  std::vector<DeviceActivityEvent> acts;
  const uint64_t t0 = 5'000'000'000'000ULL;
  for (uint64_t i = 0; i < 1000; ++i) {
    ApiCallEvent c;
    c.kind = v1::API_KIND_LAUNCH;
    c.thread_id = 31'337;
    c.start_ns = t0 + i * 8'000;
    c.end_ns = c.start_ns + 3'500;
    c.correlation_id = 5'000'000 + 2 * i;
    c.stream = 13;
    c.api_name_id = 1;
    calls.push_back(c);
    DeviceActivityEvent a;
    a.kind = v1::ACTIVITY_KIND_KERNEL;
    a.stream = 13;
    a.start_ns = c.end_ns + 2'000;
    a.end_ns = a.start_ns + 6'000;
    a.correlation_id = c.correlation_id;
    a.name_id = 1 + static_cast<uint32_t>(i % 40);
    acts.push_back(a);
  }
  const v1::EventBatch batch = encodeEvents(1000, t0, calls, acts);
  // Each element after the first of its list (the first carries a delta from the batch base) costs
  // its field tag, its length prefix and its body.
  const auto wire_size = [](const google::protobuf::MessageLite& m) {
    const size_t body = m.ByteSizeLong();
    return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(body) + body;
  };
  size_t largest = 0;
  for (int i = 1; i < batch.api_calls_size(); ++i) {
    largest = std::max(largest, wire_size(batch.api_calls(i)));
  }
  for (int i = 1; i < batch.activities_size(); ++i) {
    largest = std::max(largest, wire_size(batch.activities(i)));
  }
  v1::Frame frame;
  *frame.mutable_batch() = batch;
  INFO("whole frame: " << static_cast<double>(frame.ByteSizeLong()) / 2000.0 << " bytes per event");
  CHECK(largest <= 16);
}

TEST_CASE("The Frame carries exactly one of hello, batch and goodbye", "[proto][frame]") {
  SECTION("hello") {
    v1::Frame frame;
    v1::Hello* hello = frame.mutable_hello();
    hello->set_wire_version(gapwatch::kWireVersion);
    hello->set_pid(4242);
    hello->set_host("node-07");
    hello->set_rank(0);
    hello->set_local_rank(0);
    hello->set_world_size(8);
    hello->add_command_line("python");
    hello->add_command_line("train.py");
    hello->add_command_line("--batch-size=32");
    hello->set_clock(v1::CLOCK_DOMAIN_MONOTONIC);
    hello->add_probes(v1::PROBE_CUPTI_RUNTIME_CALLBACKS);
    hello->add_probes(v1::PROBE_CUPTI_ACTIVITY);
    hello->add_probes(v1::PROBE_NCCL_HOOKS);
    hello->set_library_version(gapwatch::kLibraryVersion);
    hello->set_cupti_version(130001);
    hello->set_cuda_driver_version(13000);
    hello->set_start_time_ns(123'456'789);
    hello->set_process_start_ns(100'000'000);
    hello->set_start_unix_ns(1'750'000'000'000'000'000ULL);

    const v1::Frame got = roundTrip(frame);
    REQUIRE(got.body_case() == v1::Frame::kHello);
    const v1::Hello& h = got.hello();
    CHECK(h.wire_version() == gapwatch::kWireVersion);
    CHECK(h.pid() == 4242);
    CHECK(h.host() == "node-07");
    CHECK(h.has_rank());
    CHECK(h.rank() == 0);
    CHECK(h.world_size() == 8);
    REQUIRE(h.command_line_size() == 3);
    CHECK(h.command_line(2) == "--batch-size=32");
    CHECK(h.clock() == v1::CLOCK_DOMAIN_MONOTONIC);
    REQUIRE(h.probes_size() == 3);
    CHECK(h.probes(1) == v1::PROBE_CUPTI_ACTIVITY);
    CHECK(h.library_version() == gapwatch::kLibraryVersion);
    CHECK(h.cupti_version() == 130001);
    CHECK(h.cuda_driver_version() == 13000);
    CHECK(h.start_time_ns() == 123'456'789);
    CHECK(h.process_start_ns() == 100'000'000);
    CHECK(h.start_unix_ns() == 1'750'000'000'000'000'000ULL);
  }
  SECTION("batch") {
    v1::Frame frame;
    frame.mutable_batch()->set_sequence(7);
    const v1::Frame got = roundTrip(frame);
    REQUIRE(got.body_case() == v1::Frame::kBatch);
    CHECK(got.batch().sequence() == 7);
  }
  SECTION("an empty batch is still a batch") {
    v1::Frame frame;
    frame.mutable_batch();
    const v1::Frame got = roundTrip(frame);
    CHECK(got.body_case() == v1::Frame::kBatch);
  }
  SECTION("goodbye") {
    v1::Frame frame;
    v1::Goodbye* bye = frame.mutable_goodbye();
    bye->set_end_time_ns(999);
    bye->set_exit_reason(v1::EXIT_REASON_SIGNAL);
    bye->set_signal(15);
    bye->set_batches(12);
    bye->set_api_calls(1000);
    bye->set_activities(900);
    bye->set_events_dropped(4);
    bye->set_cupti_records_dropped(2);
    v1::DropCounter* drop = bye->add_drops();
    drop->set_source(v1::DROP_SOURCE_CUPTI);
    drop->set_dropped(2);

    const v1::Frame got = roundTrip(frame);
    REQUIRE(got.body_case() == v1::Frame::kGoodbye);
    const v1::Goodbye& g = got.goodbye();
    CHECK(g.end_time_ns() == 999);
    CHECK(g.exit_reason() == v1::EXIT_REASON_SIGNAL);
    CHECK(g.signal() == 15);
    CHECK(g.batches() == 12);
    CHECK(g.api_calls() == 1000);
    CHECK(g.activities() == 900);
    CHECK(g.events_dropped() == 4);
    CHECK(g.cupti_records_dropped() == 2);
    REQUIRE(g.drops_size() == 1);
    CHECK(g.drops(0).source() == v1::DROP_SOURCE_CUPTI);
  }
  SECTION("setting one body replaces another") {
    v1::Frame frame;
    frame.mutable_hello()->set_pid(1);
    frame.mutable_goodbye()->set_batches(2);
    CHECK(frame.body_case() == v1::Frame::kGoodbye);
    CHECK_FALSE(frame.has_hello());
    // On the wire, the last body wins as well (a writer must never send two).
    std::string hello_bytes;
    std::string goodbye_bytes;
    v1::Frame only_hello;
    only_hello.mutable_hello()->set_pid(1);
    REQUIRE(only_hello.SerializeToString(&hello_bytes));
    REQUIRE(frame.SerializeToString(&goodbye_bytes));
    v1::Frame got;
    REQUIRE(got.ParseFromString(goodbye_bytes + hello_bytes));
    CHECK(got.body_case() == v1::Frame::kHello);
  }
}

TEST_CASE("Hello tells rank 0 apart from no rank", "[proto][hello]") {
  v1::Hello with_rank;
  with_rank.set_rank(0);
  with_rank.set_world_size(0);
  const v1::Hello got = roundTrip(with_rank);
  CHECK(got.has_rank());
  CHECK(got.rank() == 0);
  CHECK(got.has_world_size());
  CHECK_FALSE(got.has_local_rank());

  const v1::Hello none = roundTrip(v1::Hello());
  CHECK_FALSE(none.has_rank());
}

TEST_CASE("Fields from a newer schema are kept through parse and re-serialise", "[proto][compat]") {
  v1::ApiCall call;
  call.set_kind(v1::API_KIND_MEMCPY_ASYNC);
  call.set_duration_ns(42);
  call.set_bytes(4096);
  std::string bytes;
  REQUIRE(call.SerializeToString(&bytes));
  const std::string extra = unknownVarintField(900, 77) + unknownBytesField(901, "future");
  bytes += extra;

  v1::ApiCall got;
  REQUIRE(got.ParseFromString(bytes));
  CHECK(got.kind() == v1::API_KIND_MEMCPY_ASYNC);
  CHECK(got.duration_ns() == 42);
  CHECK(got.bytes() == 4096);
  // A tool that rewrites a recording (a filter, a merge) passes the newer fields on.
  std::string again;
  REQUIRE(got.SerializeToString(&again));
  CHECK(again.size() == bytes.size());
  CHECK(again.find("future") != std::string::npos);
  v1::ApiCall reparsed;
  REQUIRE(reparsed.ParseFromString(again));
  CHECK(reparsed.bytes() == 4096);
}

TEST_CASE("A frame with a body kind this reader does not know parses with no body",
          "[proto][compat]") {
  v1::Frame frame;
  // A number far above Frame's members, so that adding one does not make it known.
  REQUIRE(frame.ParseFromString(unknownBytesField(99, "a newer frame body")));
  CHECK(frame.body_case() == v1::Frame::BODY_NOT_SET);
}

TEST_CASE("Enum values from a newer schema are kept, not turned into UNSPECIFIED",
          "[proto][compat]") {
  v1::DeviceActivity act;
  act.set_kind(static_cast<v1::ActivityKind>(57));
  act.set_src_memory(static_cast<v1::MemoryKind>(12));
  const v1::DeviceActivity got = roundTrip(act);
  CHECK(static_cast<int>(got.kind()) == 57);
  CHECK(static_cast<int>(got.src_memory()) == 12);
  CHECK_FALSE(v1::ActivityKind_IsValid(57));
}

TEST_CASE("Every message ends with a Next id above all of its field numbers",
          "[proto][conventions]") {
  for (const std::string name : {"gapwatch/v1/events.proto", "gapwatch/v1/stream.proto"}) {
    INFO(name);
    const google::protobuf::FileDescriptor* file = schemaFile(name);
    REQUIRE(file != nullptr);
    const std::map<std::string, int> next_ids =
        nextIdComments(std::string(GAPWATCH_PROTO_SOURCE_DIR) + "/" + name);
    REQUIRE(static_cast<int>(next_ids.size()) == file->message_type_count());
    for (int i = 0; i < file->message_type_count(); ++i) {
      const google::protobuf::Descriptor* message = file->message_type(i);
      INFO("message " << message->name());
      REQUIRE(next_ids.count(message->name()) == 1);
      const int next_id = next_ids.at(message->name());
      CHECK(next_id > 0);
      int highest = 0;
      for (int f = 0; f < message->field_count(); ++f) {
        highest = std::max(highest, message->field(f)->number());
      }
      for (int r = 0; r < message->reserved_range_count(); ++r) {
        highest = std::max(highest, message->reserved_range(r)->end - 1);
      }
      CHECK(next_id == highest + 1);
      CHECK(message->nested_type_count() == 0);
      CHECK(message->extension_range_count() == 0);
    }
  }
}

TEST_CASE("Every enum starts with its UNSPECIFIED value at 0", "[proto][conventions]") {
  for (const std::string name : {"gapwatch/v1/events.proto", "gapwatch/v1/stream.proto"}) {
    const google::protobuf::FileDescriptor* file = schemaFile(name);
    REQUIRE(file != nullptr);
    CHECK(file->package() == "gapwatch.v1");
    for (int i = 0; i < file->enum_type_count(); ++i) {
      const google::protobuf::EnumDescriptor* e = file->enum_type(i);
      INFO("enum " << e->name());
      REQUIRE(e->value_count() > 0);
      CHECK(e->value(0)->number() == 0);
      // ApiKind -> API_KIND_UNSPECIFIED
      std::string expected = std::regex_replace(e->name(), std::regex("([a-z0-9])([A-Z])"),
                                                "$1_$2");
      for (char& ch : expected) {
        ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      }
      CHECK(e->value(0)->name() == expected + "_UNSPECIFIED");
      for (int v = 0; v < e->value_count(); ++v) {
        INFO("value " << e->value(v)->name());
        CHECK(e->value(v)->name().rfind(expected + "_", 0) == 0);
      }
    }
  }
}

TEST_CASE("Enums documented as CUDA's numbers have CUDA's numbers", "[proto][conventions]") {
  // The recorder may then copy these values straight from CUPTI and NCCL.
  constexpr auto num = [](auto value) { return static_cast<int>(value); };
  STATIC_REQUIRE(num(v1::MEMORY_KIND_PAGEABLE) == num(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE));
  STATIC_REQUIRE(num(v1::MEMORY_KIND_PINNED) == num(CUPTI_ACTIVITY_MEMORY_KIND_PINNED));
  STATIC_REQUIRE(num(v1::MEMORY_KIND_DEVICE) == num(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
  STATIC_REQUIRE(num(v1::MEMORY_KIND_ARRAY) == num(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY));
  STATIC_REQUIRE(num(v1::MEMORY_KIND_MANAGED) == num(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED));
  STATIC_REQUIRE(num(v1::MEMORY_KIND_DEVICE_STATIC) ==
                 num(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC));
  STATIC_REQUIRE(num(v1::MEMORY_KIND_MANAGED_STATIC) ==
                 num(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC));
  STATIC_REQUIRE(num(v1::SYNC_KIND_EVENT_SYNCHRONIZE) ==
                 num(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE));
  STATIC_REQUIRE(num(v1::SYNC_KIND_STREAM_WAIT_EVENT) ==
                 num(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT));
  STATIC_REQUIRE(num(v1::SYNC_KIND_STREAM_SYNCHRONIZE) ==
                 num(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE));
  STATIC_REQUIRE(num(v1::SYNC_KIND_CONTEXT_SYNCHRONIZE) ==
                 num(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE));
  STATIC_REQUIRE(num(v1::API_DOMAIN_DRIVER) == num(CUPTI_CB_DOMAIN_DRIVER_API));
  STATIC_REQUIRE(num(v1::API_DOMAIN_RUNTIME) == num(CUPTI_CB_DOMAIN_RUNTIME_API));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_INT8) == num(ncclInt8 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_UINT8) == num(ncclUint8 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_INT32) == num(ncclInt32 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_UINT32) == num(ncclUint32 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_INT64) == num(ncclInt64 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_UINT64) == num(ncclUint64 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_FLOAT16) == num(ncclFloat16 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_FLOAT32) == num(ncclFloat32 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_FLOAT64) == num(ncclFloat64 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_BFLOAT16) == num(ncclBfloat16 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_FLOAT8_E4M3) == num(ncclFloat8e4m3 + 1));
  STATIC_REQUIRE(num(v1::NCCL_DATA_TYPE_FLOAT8_E5M2) == num(ncclFloat8e5m2 + 1));
}

TEST_CASE("The recording format numbers are consistent", "[proto][format]") {
  STATIC_REQUIRE(sizeof(gapwatch::kFileMagic) == 8);
  STATIC_REQUIRE(gapwatch::kFileHeaderBytes == 12);
  STATIC_REQUIRE(gapwatch::kMinWireVersion <= gapwatch::kWireVersion);
  STATIC_REQUIRE(gapwatch::kMinFileFormatVersion <= gapwatch::kFileFormatVersion);
  STATIC_REQUIRE(gapwatch::kMaxFrameBytes == 16u * 1024u * 1024u);
  // The first magic byte is not ASCII, so a text file is never mistaken for a recording, and the
  // CR LF / SUB / LF bytes show up damage from text-mode transfers.
  CHECK(gapwatch::kFileMagic[0] == 0x89);
  // A length prefix of a maximal frame fits in 4 varint bytes.
  CHECK(google::protobuf::io::CodedOutputStream::VarintSize32(gapwatch::kMaxFrameBytes) == 4);
}

namespace {

template <std::size_t N>
void checkGeneratedFields(const google::protobuf::Descriptor* message,
                          const gapwatch::wire::Field (&fields)[N]) {
  using google::protobuf::FieldDescriptor;
  using gapwatch::wire::WireType;
  INFO("message " << message->name());
  REQUIRE(static_cast<int>(N) == message->field_count());
  for (int i = 0; i < message->field_count(); ++i) {
    const FieldDescriptor* f = message->field(i);
    INFO("field " << f->name());
    CHECK(fields[i].number == static_cast<uint32_t>(f->number()));
    CHECK(fields[i].repeated == f->is_repeated());
    CHECK(fields[i].packed == f->is_packed());
    const bool length_delimited = f->is_packed() || f->type() == FieldDescriptor::TYPE_STRING ||
                                  f->type() == FieldDescriptor::TYPE_BYTES ||
                                  f->type() == FieldDescriptor::TYPE_MESSAGE;
    CHECK((fields[i].wire_type == WireType::kLengthDelimited) == length_delimited);
  }
}

}  // namespace

TEST_CASE("The generated wire schema says what libprotobuf's descriptors say", "[proto][wire]") {
  namespace wire = gapwatch::wire;
  checkGeneratedFields(v1::ApiCall::descriptor(), wire::ApiCall::kFields);
  checkGeneratedFields(v1::DeviceActivity::descriptor(), wire::DeviceActivity::kFields);
  checkGeneratedFields(v1::NcclCall::descriptor(), wire::NcclCall::kFields);
  checkGeneratedFields(v1::StringDef::descriptor(), wire::StringDef::kFields);
  checkGeneratedFields(v1::Marker::descriptor(), wire::Marker::kFields);
  checkGeneratedFields(v1::DropCounter::descriptor(), wire::DropCounter::kFields);
  checkGeneratedFields(v1::EventBatch::descriptor(), wire::EventBatch::kFields);
  checkGeneratedFields(v1::Hello::descriptor(), wire::Hello::kFields);
  checkGeneratedFields(v1::Goodbye::descriptor(), wire::Goodbye::kFields);
  checkGeneratedFields(v1::Frame::descriptor(), wire::Frame::kFields);
  // The naming rule: the enum's prefix dropped, PascalCase, a letter after a digit kept.
  STATIC_REQUIRE(wire::ApiKind::kMemcpyAsync == v1::API_KIND_MEMCPY_ASYNC);
  STATIC_REQUIRE(wire::CopyKind::kH2D == v1::COPY_KIND_H2D);
  STATIC_REQUIRE(wire::NcclDataType::kFloat8E4M3 == v1::NCCL_DATA_TYPE_FLOAT8_E4M3);
  STATIC_REQUIRE(wire::Probe::kCuptiRuntimeCallbacks == v1::PROBE_CUPTI_RUNTIME_CALLBACKS);
  STATIC_REQUIRE(wire::ExitReason::kNormal == v1::EXIT_REASON_NORMAL);
  STATIC_REQUIRE(wire::MemoryKind::kMaxValue == v1::MemoryKind_MAX);
  STATIC_REQUIRE(wire::ApiCall::kCallSiteId == v1::ApiCall::kCallSiteIdFieldNumber);
  STATIC_REQUIRE(wire::Hello::kRankField.explicit_presence);
  STATIC_REQUIRE(!wire::ApiCall::kKindField.explicit_presence);
}
