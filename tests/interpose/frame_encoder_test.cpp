// The injected library's hand-written protobuf encoder writes exactly what libprotobuf reads:
// random events go through FrameEncoder, libprotobuf parses the frame, and every field, after
// undoing the running deltas of docs/recording-format.md, equals what went in.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include <gapwatch/v1/stream.pb.h>

#include "frame_encoder.h"

using gapwatch::ApiCallFields;
using gapwatch::DeviceActivityFields;
using gapwatch::NcclCallFields;

namespace {

// Reads one `<varint length><Frame>` from `bytes` at `*pos`.
gapwatch::v1::Frame parse_frame(const std::string& bytes, size_t* pos) {
  uint64_t len = 0;
  int shift = 0;
  while (true) {
    REQUIRE(*pos < bytes.size());
    uint8_t b = uint8_t(bytes[(*pos)++]);
    len |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
  }
  REQUIRE(*pos + len <= bytes.size());
  gapwatch::v1::Frame frame;
  REQUIRE(frame.ParseFromArray(bytes.data() + *pos, int(len)));
  *pos += len;
  return frame;
}

namespace wire = gapwatch::wire;

// Any value of an enum, UNSPECIFIED included.
template <uint32_t MaxValue>
uint8_t any_value(std::mt19937_64& rng) {
  return uint8_t(rng() % (MaxValue + 1));
}

// Not sorted: the encoder must handle negative deltas.
uint64_t random_start(std::mt19937_64& rng, uint64_t base) { return base + rng() % 50000000; }
uint64_t random_end(std::mt19937_64& rng, uint64_t start) {
  return start + (rng() % 4 == 0 ? 0 : rng() % 10000000);
}
uint64_t random_bytes(std::mt19937_64& rng) { return rng() % 3 == 0 ? 0 : rng() % (1ull << 40); }
int32_t random_return_code(std::mt19937_64& rng) { return rng() % 5 == 0 ? int32_t(rng() % 1000) - 500 : 0; }

// The fields API calls and activities share; a copy's direction and memory kinds among them.
template <class Fields>
void random_common(std::mt19937_64& rng, uint64_t base, Fields& e) {
  e.copy_kind = any_value<wire::CopyKind::kMaxValue>(rng);
  e.src_memory = any_value<wire::MemoryKind::kMaxValue>(rng);
  e.dst_memory = any_value<wire::MemoryKind::kMaxValue>(rng);
  e.start_ns = random_start(rng, base);
  e.end_ns = random_end(rng, e.start_ns);
  e.correlation_id = rng() % 100000;
  e.bytes = random_bytes(rng);
}

ApiCallFields random_api_call(std::mt19937_64& rng, uint64_t base) {
  ApiCallFields e;
  e.kind = uint8_t(1 + rng() % wire::ApiKind::kMaxValue);
  random_common(rng, base, e);
  e.blocked = rng() % 2;
  e.thread_id = uint32_t(1000 + rng() % 3);
  e.return_code = random_return_code(rng);
  e.api_name_id = uint32_t(rng() % 50);
  e.call_site_id = rng() % 3 ? 0 : uint32_t(rng() % 50);
  e.python_stack_id = rng() % 4 ? 0 : uint32_t(1 + rng() % 1000);
  return e;
}

DeviceActivityFields random_activity(std::mt19937_64& rng, uint64_t base) {
  DeviceActivityFields e;
  e.kind = uint8_t(1 + rng() % wire::ActivityKind::kMaxValue);
  random_common(rng, base, e);
  e.sync_kind = any_value<wire::SyncKind::kMaxValue>(rng);
  e.device = uint32_t(rng() % 3);
  e.name_id = uint32_t(rng() % 50);
  e.graph_id = uint32_t(rng() % 1000);
  e.stream = rng() % 4 == 0 ? 0 : 7 + rng() % 20;
  return e;
}

NcclCallFields random_nccl_call(std::mt19937_64& rng, uint64_t base) {
  NcclCallFields e;
  e.op = uint8_t(1 + rng() % wire::NcclOp::kMaxValue);
  e.data_type = any_value<wire::NcclDataType::kMaxValue>(rng);
  e.thread_id = uint32_t(1000 + rng() % 3);
  e.start_ns = random_start(rng, base);
  e.end_ns = random_end(rng, e.start_ns);
  e.comm_id = uint32_t(rng() % 4);
  e.bytes = random_bytes(rng);
  // Counts past 32 bits too: the schema's count is a uint64 and the recorder carries it whole.
  e.count = rng() % 2 ? rng() % 100000 : (uint64_t(1) << 32) + rng() % (uint64_t(1) << 40);
  e.peer = int32_t(rng() % 9) - 1;
  e.rank = int32_t(rng() % 8);
  e.nranks = int32_t(rng() % 2 ? 8 : 0);
  e.stream = rng() % 4 == 0 ? 0 : 7 + rng() % 20;
  e.return_code = random_return_code(rng);
  e.group_depth = uint32_t(rng() % 3);
  return e;
}

}  // namespace

TEST_CASE("encoded batches parse with libprotobuf and agree field by field", "[encoder]") {
  std::mt19937_64 rng(20261129);
  gapwatch::FrameEncoder encoder;
  for (int round = 0; round < 200; ++round) {
    gapwatch::BatchContent b;
    b.sequence = uint64_t(round);
    uint64_t base = 1000000000000ull + rng() % 1000000000;
    int n = int(rng() % 40);
    for (int i = 0; i < n; ++i) b.api_calls.push_back(random_api_call(rng, base));
    n = int(rng() % 40);
    for (int i = 0; i < n; ++i) b.activities.push_back(random_activity(rng, base));
    n = int(rng() % 10);
    for (int i = 0; i < n; ++i) b.nccl_calls.push_back(random_nccl_call(rng, base));
    n = int(rng() % 10);
    for (int i = 0; i < n; ++i) {
      gapwatch::PythonSampleFields s;
      s.thread_id = rng() % 3 == 0 ? 4242 : 4243;
      // Samples come in time order from the sampler, but a batch's base may be any list's first.
      s.time_ns = base + rng() % 1000000000;
      s.python_stack_id = uint32_t(rng() % 4 == 0 ? 0 : 1 + rng() % 1000);
      s.period_ns = 5000000;
      b.python_samples.push_back(s);
    }
    b.strings.push_back({uint32_t(round + 1), wire::StringKind::kKernelName,
                         "_Z6kernelPf" + std::to_string(round)});
    b.drops.push_back({wire::DropSource::kThreadRing, rng() % 5000, rng() % 100});
    std::string out;
    encoder.batch(b, out);
    size_t pos = 0;
    auto frame = parse_frame(out, &pos);
    CHECK(pos == out.size());
    REQUIRE(frame.has_batch());
    const auto& pb = frame.batch();
    CHECK(pb.sequence() == b.sequence);
    REQUIRE(pb.api_calls_size() == int(b.api_calls.size()));
    uint64_t t = pb.base_time_ns(), c = 0;
    uint32_t thread = 0;
    for (int i = 0; i < pb.api_calls_size(); ++i) {
      const auto& a = pb.api_calls(i);
      const ApiCallFields& e = b.api_calls[size_t(i)];
      t += uint64_t(a.start_delta_ns());
      c += uint64_t(a.correlation_delta());
      if (a.thread_id()) thread = a.thread_id();
      CHECK(int(a.kind()) == e.kind);
      CHECK(thread == e.thread_id);
      CHECK(t == e.start_ns);
      CHECK(t + a.duration_ns() == e.end_ns);
      CHECK(c == e.correlation_id);
      CHECK(a.stream() == 0);
      CHECK(a.bytes() == e.bytes);
      CHECK(int(a.copy_kind()) == e.copy_kind);
      CHECK(int(a.src_memory()) == e.src_memory);
      CHECK(int(a.dst_memory()) == e.dst_memory);
      CHECK(a.blocked() == e.blocked);
      CHECK(a.return_code() == e.return_code);
      CHECK(a.api_name_id() == e.api_name_id);
      CHECK(a.call_site_id() == e.call_site_id);
      CHECK(a.python_stack_id() == e.python_stack_id);
      CHECK(a.cbid() == 0);  // left out to keep a launch within 16 bytes
      CHECK(a.domain() == 0);
    }
    REQUIRE(pb.activities_size() == int(b.activities.size()));
    t = pb.base_time_ns(), c = 0;
    for (int i = 0; i < pb.activities_size(); ++i) {
      const auto& a = pb.activities(i);
      const DeviceActivityFields& e = b.activities[size_t(i)];
      t += uint64_t(a.start_delta_ns());
      c += uint64_t(a.correlation_delta());
      CHECK(int(a.kind()) == e.kind);
      CHECK(a.device() == e.device);
      CHECK(a.stream() == e.stream);
      CHECK(t == e.start_ns);
      CHECK(t + a.duration_ns() == e.end_ns);
      CHECK(c == e.correlation_id);
      CHECK(a.name_id() == e.name_id);
      CHECK(a.bytes() == e.bytes);
      CHECK(int(a.copy_kind()) == e.copy_kind);
      CHECK(int(a.src_memory()) == e.src_memory);
      CHECK(int(a.dst_memory()) == e.dst_memory);
      CHECK(a.graph_id() == e.graph_id);
      CHECK(int(a.sync_kind()) == e.sync_kind);
    }
    REQUIRE(pb.nccl_calls_size() == int(b.nccl_calls.size()));
    t = pb.base_time_ns();
    thread = 0;
    for (int i = 0; i < pb.nccl_calls_size(); ++i) {
      const auto& a = pb.nccl_calls(i);
      const NcclCallFields& e = b.nccl_calls[size_t(i)];
      t += uint64_t(a.start_delta_ns());
      if (a.thread_id()) thread = a.thread_id();
      CHECK(int(a.op()) == e.op);
      CHECK(thread == e.thread_id);
      CHECK(t == e.start_ns);
      CHECK(t + a.duration_ns() == e.end_ns);
      CHECK(a.comm_id() == e.comm_id);
      CHECK(a.bytes() == e.bytes);
      CHECK(a.count() == e.count);
      CHECK(int(a.data_type()) == e.data_type);
      CHECK(a.peer() == e.peer);
      if (e.nranks) {
        CHECK(a.rank() == e.rank);
        CHECK(a.nranks() == e.nranks);
      }
      CHECK(a.stream() == e.stream);
      CHECK(a.return_code() == e.return_code);
      CHECK(a.group_depth() == e.group_depth);
    }
    REQUIRE(pb.python_samples_size() == int(b.python_samples.size()));
    t = pb.base_time_ns();
    thread = 0;
    for (int i = 0; i < pb.python_samples_size(); ++i) {
      const auto& a = pb.python_samples(i);
      const gapwatch::PythonSampleFields& e = b.python_samples[size_t(i)];
      t += uint64_t(a.time_delta_ns());
      if (a.thread_id()) thread = a.thread_id();
      CHECK(thread == e.thread_id);
      CHECK(t == e.time_ns);
      CHECK(a.python_stack_id() == e.python_stack_id);
      CHECK(a.period_ns() == e.period_ns);
    }
    REQUIRE(pb.strings_size() == 1);
    CHECK(pb.strings(0).text() == b.strings[0].text);
    CHECK(pb.strings(0).id() == b.strings[0].id);
    REQUIRE(pb.drops_size() == 1);
    CHECK(pb.drops(0).dropped() == b.drops[0].dropped);
  }
}

TEST_CASE("Hello and Goodbye carry what the recorder knows", "[encoder]") {
  gapwatch::FrameEncoder encoder;
  gapwatch::HelloInfo h;
  h.pid = 4242;
  h.host = "node-7";
  h.has_rank = true;
  h.rank = 0;  // present though zero: proto3 `optional`
  h.has_world_size = true;
  h.world_size = 16;
  h.command_line = {"python", "", "train.py"};
  h.probes = {wire::Probe::kCuptiRuntimeCallbacks, wire::Probe::kCuptiDriverCallbacks, wire::Probe::kCuptiActivity,
              wire::Probe::kNcclHooks};
  h.cupti_version = 130001;
  h.start_time_ns = 123456789;
  h.cupti_unavailable = "";
  gapwatch::GoodbyeInfo g;
  g.end_time_ns = 987654321;
  g.batches = 3;
  g.api_calls = 10;
  g.events_dropped = 2;
  g.drops = {{wire::DropSource::kThreadRing, 77, 2}};
  std::string out;
  encoder.hello(h, out);
  encoder.goodbye(g, out);
  size_t pos = 0;
  auto hello = parse_frame(out, &pos);
  auto bye = parse_frame(out, &pos);
  REQUIRE(hello.has_hello());
  CHECK(hello.hello().pid() == 4242);
  CHECK(hello.hello().host() == "node-7");
  CHECK(hello.hello().has_rank());
  CHECK(hello.hello().rank() == 0);
  CHECK(!hello.hello().has_local_rank());
  CHECK(hello.hello().world_size() == 16);
  REQUIRE(hello.hello().command_line_size() == 3);
  CHECK(hello.hello().command_line(1).empty());
  REQUIRE(hello.hello().probes_size() == 4);
  CHECK(hello.hello().probes(3) == gapwatch::v1::PROBE_NCCL_HOOKS);
  CHECK(hello.hello().clock() == gapwatch::v1::CLOCK_DOMAIN_MONOTONIC);
  CHECK(hello.hello().cupti_version() == 130001);
  CHECK(hello.hello().wire_version() >= 1);
  REQUIRE(bye.has_goodbye());
  CHECK(bye.goodbye().end_time_ns() == 987654321);
  CHECK(bye.goodbye().batches() == 3);
  CHECK(bye.goodbye().events_dropped() == 2);
  REQUIRE(bye.goodbye().drops_size() == 1);
  CHECK(bye.goodbye().drops(0).id() == 77);
}

TEST_CASE("Goodbye carries an exit status only when it is known, 0 included", "[encoder]") {
  gapwatch::FrameEncoder encoder;
  gapwatch::GoodbyeInfo unknown, zero, three;
  zero.has_exit_status = true;
  three.has_exit_status = true;
  three.exit_status = 3;
  std::string out;
  encoder.goodbye(unknown, out);
  encoder.goodbye(zero, out);
  encoder.goodbye(three, out);
  size_t pos = 0;
  auto a = parse_frame(out, &pos), b = parse_frame(out, &pos), c = parse_frame(out, &pos);
  CHECK(!a.goodbye().has_exit_status());
  CHECK(b.goodbye().has_exit_status());
  CHECK(b.goodbye().exit_status() == 0);
  CHECK(c.goodbye().exit_status() == 3);
}

TEST_CASE("Heartbeat carries the calls in progress and the unfinished launches", "[encoder]") {
  gapwatch::FrameEncoder encoder;
  gapwatch::HeartbeatInfo h;
  h.time_ns = 5000000000;
  h.calls = {{4242, 1000000000, 17, "cudaDeviceSynchronize"}, {4243, 2000000000, 0, nullptr}};
  h.unfinished = {{16, 900000000, "_Z11endlessworkv", 4242}};
  std::string out;
  encoder.heartbeat(h, out);
  size_t pos = 0;
  auto frame = parse_frame(out, &pos);
  REQUIRE(frame.has_heartbeat());
  const auto& pb = frame.heartbeat();
  CHECK(pb.time_ns() == 5000000000);
  REQUIRE(pb.calls_size() == 2);
  CHECK(pb.calls(0).thread_id() == 4242);
  CHECK(pb.calls(0).start_ns() == 1000000000);
  CHECK(pb.calls(0).correlation_id() == 17);
  CHECK(pb.calls(0).api_name() == "cudaDeviceSynchronize");
  CHECK(pb.calls(1).api_name().empty());
  REQUIRE(pb.unfinished_size() == 1);
  CHECK(pb.unfinished(0).correlation_id() == 16);
  CHECK(pb.unfinished(0).launch_ns() == 900000000);
  CHECK(pb.unfinished(0).kernel_name() == "_Z11endlessworkv");
  CHECK(pb.unfinished(0).thread_id() == 4242);
  CHECK(pos == out.size());
}

TEST_CASE("strings that are not UTF-8 are repaired so libprotobuf still reads the frame", "[encoder]") {
  gapwatch::FrameEncoder encoder;
  gapwatch::HelloInfo h;
  h.host = std::string("node\xff-1");
  h.command_line = {"python", std::string("caf\xc3\xa9.py"), std::string("\xed\xa0\x80x"), std::string("\xc3")};
  std::string out;
  encoder.hello(h, out);
  size_t pos = 0;
  auto frame = parse_frame(out, &pos);
  REQUIRE(frame.has_hello());
  // Each invalid byte as U+FFFD (EF BF BD), the rule of everything gapwatch writes.
  CHECK(frame.hello().host() == "node\xef\xbf\xbd-1");
  CHECK(frame.hello().command_line(1) == "caf\xc3\xa9.py");  // valid UTF-8 is kept as is
  CHECK(frame.hello().command_line(2) == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx");  // a surrogate is not UTF-8
  CHECK(frame.hello().command_line(3) == "\xef\xbf\xbd");                         // nor is a cut sequence
}
