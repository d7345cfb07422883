// tests/unit/export_trace_stage_test.cpp: the export stage and the Perfetto writer on events made
// by hand: memory stays bounded however long the run (launches whose work was dropped included),
// every flow that starts ends, and slices that overlap without nesting go to a lane of their own.
#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "export/perfetto_trace_writer.h"
#include "export/trace_export_stage.h"

#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace gapwatch::exporter {
namespace {

using analysis::test::launch;
using analysis::test::us;
using analysis::test::work;

// Keeps what the stage handed over, as counts.
class CountingSink final : public TraceSink {
 public:
  void process(uint64_t, uint32_t, int32_t, const std::string&) override { ++processes; }
  void track(const TrackInfo& track) override { kinds[track.uuid] = track.kind; }
  void slice(const Slice& slice) override {
    ++slices[kinds.at(slice.track)];
    if (slice.flow_out) flows_started.insert(slice.flow_out);
    if (slice.flow_in) {
      CHECK(flows_started.count(slice.flow_in) == 1);
      ++flows_ended;
    }
  }
  bool finish() override { return true; }

  int processes = 0;
  std::map<uint64_t, TrackKind> kinds;
  std::map<TrackKind, uint64_t> slices;
  std::set<uint64_t> flows_started;
  uint64_t flows_ended = 0;
};

TEST_CASE("the export stage holds a bounded number of launches, dropped work included") {
  CountingSink sink;
  TraceExportStage stage(sink, 0, "run.gwt");
  stage.begin({});
  std::size_t most_pending = 0;
  // 200,000 launches 50 us apart (10 s of recording), each kernel 10 us after its launch; every
  // tenth kernel was dropped.
  for (uint64_t i = 1; i <= 200'000; ++i) {
    const uint64_t t = us(50) * i;
    stage.onApiCall(launch(1, t, t + us(5), i));
    if (i % 10 != 0) stage.onActivity(work(v1::ACTIVITY_KIND_KERNEL, t + us(10), t + us(20), i));
    most_pending = std::max(most_pending, stage.pendingFlows());
  }
  stage.finish();
  CHECK(sink.processes == 1);
  CHECK(sink.slices[TrackKind::kHostThread] == 200'000);
  CHECK(sink.slices[TrackKind::kDeviceStream] == 180'000);
  CHECK(sink.flows_ended == 180'000);
  // At most the launches of the expiry window (5 s of recording time: 100,000) are held, not all.
  CHECK(most_pending <= 100'001);
  CHECK(stage.pendingFlows() < 200'000);
}

// Reads the writer's output back: (track uuid, type) per TrackEvent, in file order.
struct WrittenEvent {
  uint64_t track = 0;
  uint64_t type = 0;
  uint64_t time = 0;
};

uint64_t varint(const std::string& bytes, std::size_t& at) {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(bytes.at(at++));
    value |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return value;
  }
}

// Fields of one message: number -> varint value or bytes.
std::multimap<uint32_t, std::string> fields(const std::string& message, std::map<uint32_t, uint64_t>& varints) {
  std::multimap<uint32_t, std::string> nested;
  std::size_t at = 0;
  while (at < message.size()) {
    const uint64_t tag = varint(message, at);
    const uint32_t number = uint32_t(tag >> 3);
    switch (tag & 7) {
      case 0: varints[number] = varint(message, at); break;
      case 1: at += 8; break;
      case 2: {
        const uint64_t size = varint(message, at);
        nested.emplace(number, message.substr(at, size));
        at += size;
        break;
      }
      default: FAIL("unexpected wire type");
    }
  }
  return nested;
}

TEST_CASE("the Perfetto writer nests slices, and puts one that overlaps without nesting in a lane") {
  std::ostringstream out;
  PerfettoTraceWriter writer(out);
  writer.process(1ull << 32, 42, 0, "rank 0");
  TrackInfo stream;
  stream.uuid = (1ull << 32) | 1;
  stream.process_uuid = 1ull << 32;
  stream.kind = TrackKind::kDeviceStream;
  stream.pid = 42;
  stream.name = "GPU 0 stream 7";
  writer.track(stream);
  auto slice = [&](uint64_t start, uint64_t end) {
    Slice s;
    s.track = stream.uuid;
    s.start_ns = start;
    s.end_ns = end;
    s.name = "k";
    s.category = SliceCategory::kKernel;
    writer.slice(s);
  };
  slice(100, 400);  // outer
  slice(150, 200);  // nested in it
  slice(300, 500);  // overlaps the outer one without nesting: a lane
  slice(600, 700);  // after both: back on the first track
  REQUIRE(writer.finish());

  std::map<uint64_t, std::vector<WrittenEvent>> by_track;
  std::set<uint64_t> declared;
  std::map<uint32_t, uint64_t> ignored;
  for (const auto& [number, packet] : fields(out.str(), ignored)) {
    REQUIRE(number == 1);
    std::map<uint32_t, uint64_t> packet_varints;
    const auto inner = fields(packet, packet_varints);
    CHECK(packet_varints.count(10) == 1);  // trusted_packet_sequence_id
    for (const auto& [field, payload] : inner) {
      std::map<uint32_t, uint64_t> v;
      fields(payload, v);
      if (field == 60) declared.insert(v[1]);
      if (field == 11) {
        REQUIRE(declared.count(v[11]) == 1);  // the track was declared before its events
        by_track[v[11]].push_back({v[11], v[9], packet_varints[8]});
      }
    }
  }
  CHECK(declared.size() == 3);  // the process, the stream, one lane
  REQUIRE(by_track.size() == 2);
  for (const auto& [track, events] : by_track) {
    int depth = 0;
    uint64_t last = 0;
    for (const WrittenEvent& e : events) {
      CHECK(e.time >= last);
      last = e.time;
      depth += e.type == 1 ? 1 : -1;
      CHECK(depth >= 0);
    }
    CHECK(depth == 0);
  }
  CHECK(by_track[stream.uuid].size() == 6);  // three slices on the stream itself
}

}  // namespace
}  // namespace gapwatch::exporter
