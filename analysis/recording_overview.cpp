// analysis/recording_overview.cpp: see recording_overview.h.
#include "analysis/recording_overview.h"

#include "reader/enum_labels.h"

#include <algorithm>

namespace gapwatch::analysis {

void RecordingOverviewBuilder::onHello(const v1::Hello& hello, uint64_t /*offset*/) {
  if (!overview_.hello) overview_.hello = hello;  // the first Hello describes the stream
}

void RecordingOverviewBuilder::noteTime(uint64_t start_ns, uint64_t end_ns) {
  first_event_ns_ = std::min(first_event_ns_, start_ns);
  last_event_ns_ = std::max(last_event_ns_, end_ns);
}

void RecordingOverviewBuilder::onBatch(const DecodedBatch& batch, const StringTable& /*strings*/) {
  overview_.api_calls += batch.api_calls.size();
  for (const ApiCallEvent& call : batch.api_calls) {
    // A launch made inside a stream capture runs nothing: not a launch (capture_tracker.h).
    const bool launch = call.kind == v1::API_KIND_LAUNCH || call.kind == v1::API_KIND_GRAPH_LAUNCH;
    if (!captures_.captured(call) && launch) ++overview_.launches;
    noteTime(call.start_ns, call.end_ns);
  }
  overview_.activities += batch.activities.size();
  for (const DeviceActivityEvent& activity : batch.activities) noteTime(activity.start_ns, activity.end_ns);
  overview_.nccl_calls += batch.nccl_calls.size();
  for (const NcclCallEvent& call : batch.nccl_calls) noteTime(call.start_ns, call.end_ns);
  overview_.markers += batch.markers.size();
  for (const MarkerEvent& marker : batch.markers) {
    if (marker.kind == v1::MARKER_KIND_STEP_BEGIN) ++overview_.step_markers;
    noteTime(marker.time_ns, marker.time_ns);
  }
  for (const DropCount& drop : batch.drops) drops_.update(drop);
}

void RecordingOverviewBuilder::onGoodbye(const v1::Goodbye& goodbye, uint64_t /*offset*/) {
  overview_.goodbye = goodbye;
  for (const v1::DropCounter& d : goodbye.drops()) drops_.update({d.source(), d.id(), d.dropped()});
}

void RecordingOverviewBuilder::onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t /*offset*/) {
  last_heartbeat_ns_ = std::max(last_heartbeat_ns_, heartbeat.time_ns());
}

RecordingOverview RecordingOverviewBuilder::finish(const ReadSummary& read, const StreamHealth& health) {
  RecordingOverview result = overview_;
  result.read = read;
  result.health = health;
  result.transport_events_dropped = drops_.total(v1::DROP_SOURCE_TRANSPORT);
  const bool any_event = first_event_ns_ != UINT64_MAX;
  result.span_start_ns = result.hello && result.hello->start_time_ns() != 0 ? result.hello->start_time_ns()
                         : any_event                                         ? first_event_ns_
                                                                             : 0;
  result.span_end_ns = result.goodbye && result.goodbye->end_time_ns() != 0 ? result.goodbye->end_time_ns()
                       : any_event ? std::max(last_event_ns_, last_heartbeat_ns_)
                                   : last_heartbeat_ns_;
  return result;
}

std::string endingText(const RecordingOverview& o) {
  if (o.read.truncated) return "truncated: no Goodbye, the file ends inside a frame";
  if (!o.goodbye) return "ended early: no Goodbye (the process was killed or the connection lost)";
  const v1::Goodbye& g = *o.goodbye;
  switch (g.exit_reason()) {
    case v1::EXIT_REASON_NORMAL:
      // Absent: the recorder could not learn it (older recorders never wrote it): never a made-up 0.
      return "ended normally (exit status " + (g.has_exit_status() ? std::to_string(g.exit_status()) : "unknown") + ")";
    case v1::EXIT_REASON_SIGNAL:
      return "ended by signal " + std::to_string(g.signal());
    case v1::EXIT_REASON_EXEC:
      return "ended when the process called exec";
    case v1::EXIT_REASON_STOPPED:
      return "stopped while the process ran on";
    case v1::EXIT_REASON_INTERNAL_ERROR:
      return "gapwatch stopped recording after an internal error";
    default:
      return "ended (reason " + enumLabel(g.exit_reason()) + ")";
  }
}

std::string partsText(const RecordingOverview& o, const std::function<std::string(const std::string&)>& name) {
  if (o.part_files.size() < 2 || o.health.parts.size() != o.part_files.size()) return "";
  std::string text = "one process in " + std::to_string(o.part_files.size()) + " files, read as one: ";
  for (std::size_t k = 0; k < o.part_files.size(); ++k) {
    const StreamHealth::Part& part = o.health.parts[k];
    text += (k == 0 ? "" : ", then ") + name(o.part_files[k]) + " (";
    if (part.batches == 0) {
      text += "no batches";
    } else if (part.first_sequence == part.last_sequence) {
      text += "batch " + std::to_string(part.first_sequence);
    } else {
      text += "batches " + std::to_string(part.first_sequence) + " to " + std::to_string(part.last_sequence);
    }
    if (part.goodbye) text += ", Goodbye";
    if (part.duplicate_batches > 0) {
      text += "; " + std::to_string(part.duplicate_batches) + (part.duplicate_batches == 1 ? " batch" : " batches") +
              " also in the parts before, read once";
    }
    if (part.missing_before > 0) {
      text += "; " + std::to_string(part.missing_before) + (part.missing_before == 1 ? " batch" : " batches") +
              " missing before it";
    }
    text += ")";
  }
  return text;
}

std::string endingLabel(const RecordingOverview& o) {
  if (o.read.truncated) return "truncated";
  if (!o.goodbye) return "no_goodbye";
  return enumLabel(o.goodbye->exit_reason());
}

}  // namespace gapwatch::analysis
