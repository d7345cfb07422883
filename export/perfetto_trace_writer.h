// export/perfetto_trace_writer.h: a TraceSink that writes Perfetto's protobuf trace (a Trace
// message: one TracePacket after another), which ui.perfetto.dev and trace processor open.
//
// Each process is a process track, each host thread a thread track, and each device stream, each
// device's idle gaps, the sync points and the steps a track under the process. Slices are
// TrackEvent SLICE_BEGIN / SLICE_END pairs; a launch and its kernel share a flow id.
//
// TrackEvent slices on one track must nest. Events that overlap without nesting (two kernels of
// one stream that the device ran concurrently, a thread's NCCL call that outlives the op around
// it) go to a lane: another track beside the first, named "... (overlap N)", so every slice keeps
// its true start and end (busy time counted from the trace stays the report's). Memory: per
// track, the ends of its open slices (the depth of nesting), and the lanes a track ever needed.
#pragma once

#include "export/trace_sink.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace gapwatch::exporter {

class PerfettoTraceWriter final : public TraceSink {
 public:
  explicit PerfettoTraceWriter(std::ostream& out);

  void process(uint64_t uuid, uint32_t pid, int32_t rank, const std::string& name) override;
  void clock(v1::ClockDomain domain) override;
  void track(const TrackInfo& track) override;
  void slice(const Slice& slice) override;
  bool finish() override;

 private:
  struct Lane {
    uint64_t uuid = 0;
    std::vector<uint64_t> open_ends;  // innermost last; each no later than the one below it
  };
  struct TrackLanes {
    TrackInfo info;
    std::vector<Lane> lanes;
  };

  // Writes SLICE_END for every open slice of `lane` that ends at or before `until_ns`.
  void closeUntil(Lane& lane, uint64_t until_ns);
  void writeTrackDescriptor(const TrackInfo& info, uint64_t uuid, const std::string& name);
  void writeEnd(uint64_t track_uuid, uint64_t time_ns);
  void writePacket(uint64_t time_ns, uint32_t payload_field, const std::string& payload, bool timed);

  std::ostream& out_;
  bool first_packet_ = true;
  // Perfetto's BuiltinClock for every timed packet (TracePacket.timestamp_clock_id): the first
  // process's clock; 0 writes none (Perfetto then assumes its trace clock, BOOTTIME).
  uint32_t clock_id_ = 0;
  bool clock_set_ = false;
  std::unordered_map<uint64_t, TrackLanes> tracks_;
  uint64_t next_lane_uuid_ = 1ull << 62;  // above every uuid the export stage gives
  std::string packet_;   // scratch, kept to avoid an allocation per packet
  std::string payload_;  // scratch
  std::string nested_;   // scratch
};

}  // namespace gapwatch::exporter
