// collector/basic_report.cpp: see basic_report.h.
#include "collector/basic_report.h"

#include <algorithm>
#include <utility>

namespace gapwatch {
namespace {

bool isDeviceWork(v1::ActivityKind kind) {
  return kind == v1::ACTIVITY_KIND_KERNEL || kind == v1::ACTIVITY_KIND_MEMCPY ||
         kind == v1::ACTIVITY_KIND_MEMSET;
}

bool hasProbe(const v1::Hello& hello, v1::Probe probe) {
  return std::find(hello.probes().begin(), hello.probes().end(), probe) != hello.probes().end();
}

}  // namespace

void BasicReportBuilder::onHello(const v1::Hello& hello, uint64_t /*offset*/) {
  report_.hello = hello;
}

void BasicReportBuilder::onBatch(const DecodedBatch& batch, const StringTable& /*strings*/) {
  for (const ApiCallEvent& e : batch.api_calls) addApiCall(e);
  for (const DeviceActivityEvent& e : batch.activities) addActivity(e);
  for (const NcclCallEvent& e : batch.nccl_calls) addNcclCall(e);
  for (const MarkerEvent& e : batch.markers) addMarker(e);
  for (const DropCount& d : batch.drops) addDrop(d);
}

void BasicReportBuilder::onGoodbye(const v1::Goodbye& goodbye, uint64_t /*offset*/) {
  report_.goodbye = goodbye;
  for (const v1::DropCounter& d : goodbye.drops()) addDrop({d.source(), d.id(), d.dropped()});
}

void BasicReportBuilder::noteTime(uint64_t start_ns, uint64_t end_ns) {
  first_event_ns_ = std::min(first_event_ns_, start_ns);
  last_event_ns_ = std::max(last_event_ns_, end_ns);
}

void BasicReportBuilder::addApiCall(const ApiCallEvent& call) {
  ++report_.api_calls;
  if (call.kind == v1::API_KIND_LAUNCH || call.kind == v1::API_KIND_GRAPH_LAUNCH) {
    ++report_.launches;
  }
  if (call.kind == v1::API_KIND_MEMCPY_ASYNC && !call.blocked && call.correlation_id != 0) joinAsyncCopy(call);
  else report_.sync_points.add(call);
  noteTime(call.start_ns, call.end_ns);
}

void BasicReportBuilder::joinAsyncCopy(const ApiCallEvent& call) {
  if (pageable_copies_waiting_.erase(call.correlation_id)) {
    ApiCallEvent blocked = call;
    blocked.blocked = true;
    report_.sync_points.add(blocked);
  } else {
    async_copies_waiting_.emplace(call.correlation_id, call);
  }
}

void BasicReportBuilder::joinCopyActivity(const DeviceActivityEvent& activity) {
  bool pageable = activity.src_memory == v1::MEMORY_KIND_PAGEABLE || activity.dst_memory == v1::MEMORY_KIND_PAGEABLE;
  auto it = async_copies_waiting_.find(activity.correlation_id);
  if (it != async_copies_waiting_.end()) {
    if (pageable) {
      ApiCallEvent blocked = it->second;
      blocked.blocked = true;
      report_.sync_points.add(blocked);
    }
    async_copies_waiting_.erase(it);  // pinned: an async copy that did not block
  } else if (pageable) {
    pageable_copies_waiting_.insert(activity.correlation_id);
  }
}

void BasicReportBuilder::addActivity(const DeviceActivityEvent& activity) {
  ++report_.activities;
  noteTime(activity.start_ns, activity.end_ns);
  if (activity.kind == v1::ACTIVITY_KIND_MEMCPY && activity.correlation_id != 0) joinCopyActivity(activity);
  if (!isDeviceWork(activity.kind)) return;
  DeviceState& state = devices_[activity.device];
  switch (activity.kind) {
    case v1::ACTIVITY_KIND_KERNEL:
      ++state.counts.kernels;
      break;
    case v1::ACTIVITY_KIND_MEMCPY:
      ++state.counts.memcpys;
      break;
    default:
      ++state.counts.memsets;
      break;
  }
  state.intervals.push_back({activity.start_ns, activity.end_ns});
}

void BasicReportBuilder::addNcclCall(const NcclCallEvent& call) {
  ++report_.nccl_calls;
  noteTime(call.start_ns, call.end_ns);
}

void BasicReportBuilder::addMarker(const MarkerEvent& marker) {
  ++report_.markers;
  if (marker.kind == v1::MARKER_KIND_STEP_BEGIN) ++report_.steps;
  noteTime(marker.time_ns, marker.time_ns);
}

void BasicReportBuilder::addDrop(const DropCount& drop) { drop_totals_.update(drop); }

BasicReport BasicReportBuilder::finish(const StreamHealth& health) {
  BasicReport report = std::move(report_);
  report.health = health;

  // Span: the Hello and Goodbye times when present, widened by events outside them.
  const bool any_event = first_event_ns_ <= last_event_ns_;
  uint64_t start = any_event ? first_event_ns_ : 0;
  uint64_t end = any_event ? last_event_ns_ : 0;
  if (report.hello && report.hello->start_time_ns() != 0) {
    start = any_event ? std::min(start, report.hello->start_time_ns())
                      : report.hello->start_time_ns();
    if (!any_event) end = start;
  }
  if (report.goodbye && report.goodbye->end_time_ns() != 0) {
    end = std::max(end, report.goodbye->end_time_ns());
  }
  report.span_start_ns = start;
  report.span_end_ns = std::max(start, end);

  // Leading time is measured from the process start when the recorder knew it.
  uint64_t reference = 0;
  if (report.hello && report.hello->process_start_ns() != 0) {
    report.leading_reference = LeadingReference::kProcessStart;
    reference = report.hello->process_start_ns();
  } else if (report.hello && report.hello->start_time_ns() != 0) {
    report.leading_reference = LeadingReference::kRecordingStart;
    reference = report.hello->start_time_ns();
  }
  auto leadingTo = [&](uint64_t first_activity_ns) -> std::optional<uint64_t> {
    if (report.leading_reference == LeadingReference::kUnknown) return std::nullopt;
    return first_activity_ns > reference ? first_activity_ns - reference : 0;
  };

  uint64_t first_activity_ns = UINT64_MAX;
  for (auto& [device, state] : devices_) {
    DeviceReport device_report = state.counts;
    device_report.device = device;
    device_report.busy = summarizeBusy(state.intervals);
    device_report.leading_ns = leadingTo(device_report.busy.window_start_ns);
    first_activity_ns = std::min(first_activity_ns, device_report.busy.window_start_ns);
    report.devices.push_back(std::move(device_report));
    std::vector<Interval>().swap(state.intervals);
  }
  if (!report.devices.empty()) {
    report.device_coverage = DeviceCoverage::kRecorded;
    report.leading_ns = leadingTo(first_activity_ns);
  } else if (report.hello && report.hello->probes_size() > 0 &&
             !hasProbe(*report.hello, v1::PROBE_CUPTI_ACTIVITY)) {
    report.device_coverage = DeviceCoverage::kProbeInactive;
  } else {
    report.device_coverage = DeviceCoverage::kNoneRecorded;
  }

  DropSummary& drops = report.drops;
  drops.events_dropped = drop_totals_.total(v1::DROP_SOURCE_THREAD_RING);
  drops.cupti_records_dropped = drop_totals_.total(v1::DROP_SOURCE_CUPTI);
  drops.transport_events_dropped = drop_totals_.total(v1::DROP_SOURCE_TRANSPORT);
  if (report.goodbye) {
    // Goodbye's totals are final; take the larger in case a counter's last update was lost.
    drops.events_dropped = std::max(drops.events_dropped, report.goodbye->events_dropped());
    drops.cupti_records_dropped =
        std::max(drops.cupti_records_dropped, report.goodbye->cupti_records_dropped());
  }
  drops.batches_missing = health.batches_missing;
  return report;
}

BasicReport computeBasicReport(const ProcessRecording& recording) {
  BasicReportBuilder builder;
  if (recording.hello) builder.onHello(*recording.hello, 0);
  for (const ApiCallEvent& e : recording.api_calls) builder.addApiCall(e);
  for (const DeviceActivityEvent& e : recording.activities) builder.addActivity(e);
  for (const NcclCallEvent& e : recording.nccl_calls) builder.addNcclCall(e);
  for (const MarkerEvent& e : recording.markers) builder.addMarker(e);
  for (const auto& [key, dropped] : recording.drops.all()) {
    builder.addDrop({key.first, key.second, dropped});
  }
  if (recording.goodbye) builder.onGoodbye(*recording.goodbye, 0);
  return builder.finish(recording.health);
}

}  // namespace gapwatch
