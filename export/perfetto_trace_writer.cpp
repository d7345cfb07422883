// export/perfetto_trace_writer.cpp: see perfetto_trace_writer.h.
#include "export/perfetto_trace_writer.h"

#include "export/perfetto_encoder.h"

#include <string>

namespace gapwatch::exporter {

namespace pf = perfetto;
namespace fd = perfetto::field;

PerfettoTraceWriter::PerfettoTraceWriter(std::ostream& out) : out_(out) {}

void PerfettoTraceWriter::writePacket(uint64_t time_ns, uint32_t payload_field, const std::string& payload,
                                      bool timed) {
  packet_.clear();
  if (timed) pf::putVarint(packet_, fd::kTimestamp, time_ns);
  if (timed && clock_id_ != 0) pf::putVarint(packet_, fd::kTimestampClockId, clock_id_);
  pf::putVarint(packet_, fd::kTrustedPacketSequenceId, 1);
  pf::putVarint(packet_, fd::kSequenceFlags,
                first_packet_ ? pf::kSequenceIncrementalStateCleared : pf::kSequenceNeedsIncrementalState);
  first_packet_ = false;
  pf::putBytes(packet_, payload_field, payload);
  nested_.clear();
  pf::putBytes(nested_, fd::kTracePacket, packet_);
  out_.write(nested_.data(), std::streamsize(nested_.size()));
}

void PerfettoTraceWriter::clock(v1::ClockDomain domain) {
  // The recording's clock by Perfetto's name for it, so that the export lines up with a system
  // trace taken at the same time (Perfetto converts between its builtin clocks; unnamed, it would
  // read CLOCK_MONOTONIC times as BOOTTIME ones, off by the time the machine slept). A trace's own
  // clock (CLOCK_DOMAIN_KINETO_US) is none of Perfetto's: left unnamed. One clock per file: the
  // first process's (inputs of one export come from one machine's recordings).
  if (clock_set_) return;
  clock_set_ = true;
  switch (domain) {
    case v1::CLOCK_DOMAIN_MONOTONIC: clock_id_ = pf::kBuiltinClockMonotonic; break;
    case v1::CLOCK_DOMAIN_MONOTONIC_RAW: clock_id_ = pf::kBuiltinClockMonotonicRaw; break;
    case v1::CLOCK_DOMAIN_REALTIME: clock_id_ = pf::kBuiltinClockRealtime; break;
    case v1::CLOCK_DOMAIN_BOOTTIME: clock_id_ = pf::kBuiltinClockBoottime; break;
    default: clock_id_ = 0; break;
  }
}

void PerfettoTraceWriter::process(uint64_t uuid, uint32_t pid, int32_t /*rank*/, const std::string& name) {
  std::string process;
  pf::putVarint(process, fd::kProcessPid, pid);
  pf::putString(process, fd::kProcessName, name);
  payload_.clear();
  pf::putVarint(payload_, fd::kTrackUuid, uuid);
  pf::putBytes(payload_, fd::kTrackProcess, process);
  writePacket(0, fd::kTrackDescriptor, payload_, false);
}

void PerfettoTraceWriter::writeTrackDescriptor(const TrackInfo& info, uint64_t uuid, const std::string& name) {
  payload_.clear();
  pf::putVarint(payload_, fd::kTrackUuid, uuid);
  // The first lane of a host thread is the thread itself (Perfetto groups it under its process by
  // pid); other tracks and lanes hang under the process track and carry their own name.
  if (info.kind == TrackKind::kHostThread && uuid == info.uuid) {
    std::string thread;
    pf::putVarint(thread, fd::kThreadPid, info.pid);
    pf::putVarint(thread, fd::kThreadTid, info.id);
    pf::putString(thread, fd::kThreadName, name);
    pf::putBytes(payload_, fd::kTrackThread, thread);
  } else {
    pf::putVarint(payload_, fd::kTrackParentUuid, info.process_uuid);
    pf::putString(payload_, fd::kTrackName, name);
  }
  writePacket(0, fd::kTrackDescriptor, payload_, false);
}

void PerfettoTraceWriter::track(const TrackInfo& track) {
  TrackLanes& lanes = tracks_[track.uuid];
  lanes.info = track;
  lanes.lanes.push_back(Lane{track.uuid, {}});
  writeTrackDescriptor(track, track.uuid, track.name);
}

void PerfettoTraceWriter::writeEnd(uint64_t track_uuid, uint64_t time_ns) {
  payload_.clear();
  pf::putVarint(payload_, fd::kEventType, uint64_t(pf::EventType::kSliceEnd));
  pf::putVarint(payload_, fd::kEventTrackUuid, track_uuid);
  writePacket(time_ns, fd::kTrackEvent, payload_, true);
}

void PerfettoTraceWriter::closeUntil(Lane& lane, uint64_t until_ns) {
  while (!lane.open_ends.empty() && lane.open_ends.back() <= until_ns) {
    writeEnd(lane.uuid, lane.open_ends.back());
    lane.open_ends.pop_back();
  }
}

void PerfettoTraceWriter::slice(const Slice& slice) {
  auto found = tracks_.find(slice.track);
  if (found == tracks_.end()) return;  // the stage declares every track first
  TrackLanes& track = found->second;
  Lane* chosen = nullptr;
  for (Lane& lane : track.lanes) {
    closeUntil(lane, slice.start_ns);
    if (!chosen && (lane.open_ends.empty() || slice.end_ns <= lane.open_ends.back())) chosen = &lane;
  }
  if (!chosen) {
    const uint64_t uuid = next_lane_uuid_++;
    writeTrackDescriptor(track.info, uuid,
                         track.info.name + " (overlap " + std::to_string(track.lanes.size()) + ")");
    track.lanes.push_back(Lane{uuid, {}});
    chosen = &track.lanes.back();
  }
  payload_.clear();
  pf::putVarint(payload_, fd::kEventType, uint64_t(pf::EventType::kSliceBegin));
  pf::putVarint(payload_, fd::kEventTrackUuid, chosen->uuid);
  pf::putBytes(payload_, fd::kEventCategories, sliceCategoryName(slice.category));
  pf::putString(payload_, fd::kEventName, slice.name);
  if (slice.flow_out) pf::putFixed64(payload_, fd::kEventFlowIds, slice.flow_out);
  if (slice.flow_in) pf::putFixed64(payload_, fd::kEventTerminatingFlowIds, slice.flow_in);
  for (const SliceArg& arg : slice.args) {
    std::string annotation;
    pf::putString(annotation, fd::kAnnotationName, arg.name);
    if (arg.is_text) {
      pf::putString(annotation, fd::kAnnotationStringValue, arg.text);
    } else {
      pf::putVarint(annotation, fd::kAnnotationUintValue, arg.number);
    }
    pf::putBytes(payload_, fd::kEventDebugAnnotations, annotation);
  }
  writePacket(slice.start_ns, fd::kTrackEvent, payload_, true);
  chosen->open_ends.push_back(slice.end_ns);
}

bool PerfettoTraceWriter::finish() {
  for (auto& [uuid, track] : tracks_) {
    for (Lane& lane : track.lanes) closeUntil(lane, UINT64_MAX);
  }
  out_.flush();
  return bool(out_);
}

}  // namespace gapwatch::exporter
