// reader/kineto_feed.cpp: see kineto_feed.h.
#include "reader/kineto_feed.h"

#include "reader/kineto_text.h"
#include "reader/ordered_appends.h"

#include <algorithm>
#include <utility>

namespace gapwatch::kineto {
namespace {

constexpr std::size_t kBatchEvents = 4096;
// A batch handed over never spans more than this, so that the pipeline's 2 s reorder window takes
// a batch's lists (api calls, then activities, ...) in any order.
constexpr uint64_t kBatchSpanNs = 1'000'000'000;

}  // namespace

Feed::Feed(RecordingVisitor& visitor, KinetoReadResult& result, const TraceMetadata& meta)
    : visitor_(visitor), result_(result), meta_(meta),
      table_(std::make_shared<StringTable>()) {
  result_.strings = table_;
}

std::optional<std::string> Feed::call(const ApiCallEvent& c) {
  GW_TRY(room(c.start_ns));
  batch_.api_calls.push_back(c);
  added(c.start_ns, c.end_ns);
  ++api_calls_;
  return std::nullopt;
}

std::optional<std::string> Feed::activity(const DeviceActivityEvent& a) {
  GW_TRY(room(a.start_ns));
  batch_.activities.push_back(a);
  added(a.start_ns, a.end_ns);
  ++activities_;
  return std::nullopt;
}

void Feed::hold(const MarkerEvent& m) {
  held_.push_back(m);
  noteAppended(held_, held_in_order_, markerBefore);
  last_ns_ = std::max(last_ns_, m.time_ns);
  ++markers_;
  noteHeld();
}

void Feed::hold(const HostRangeEvent& r) {
  held_host_.push_back(r);
  noteAppended(held_host_, held_host_in_order_, hostRangeBefore);
  last_ns_ = std::max(last_ns_, r.end_ns);
  noteHeld();
}

void Feed::hold(const NcclCallEvent& n) {
  held_nccl_.push_back(n);
  noteAppended(held_nccl_, held_nccl_in_order_, ncclCallBefore);
  last_ns_ = std::max(last_ns_, n.end_ns);
  ++nccl_calls_;
  noteHeld();
}

std::optional<std::string> Feed::finish() {
  GW_TRY(flush());
  if (!hello_sent_) GW_TRY(sendHello(anyHeld() ? earliestHeld() : 0));
  sortHeld();
  deliverHeld(held_.size(), held_nccl_.size(), held_host_.size());
  if (!strings_.empty()) deliver(batch_);
  return std::nullopt;
}

void Feed::goodbye() {
  v1::Goodbye goodbye;
  goodbye.set_end_time_ns(last_ns_);
  // The trace ends with the profiler's window: how and when the process ended is not in it.
  goodbye.set_exit_reason(v1::EXIT_REASON_UNSPECIFIED);
  goodbye.set_batches(result_.health.batches);
  goodbye.set_api_calls(api_calls_);
  goodbye.set_activities(activities_);
  goodbye.set_markers(markers_);
  goodbye.set_nccl_calls(nccl_calls_);
  visitor_.onGoodbye(goodbye, 0);
  result_.read.summary.frames += 1;
  result_.health.has_goodbye = true;
}

std::optional<std::string> Feed::room(uint64_t time_ns) {
  if (in_batch_ == 0) return std::nullopt;
  if (in_batch_ >= kBatchEvents || std::max(batch_max_, time_ns) - std::min(batch_min_, time_ns) > kBatchSpanNs) {
    return flush();
  }
  return std::nullopt;
}

void Feed::added(uint64_t start_ns, uint64_t end_ns) {
  if (in_batch_ == 0) batch_min_ = batch_max_ = start_ns;
  batch_min_ = std::min(batch_min_, start_ns);
  batch_max_ = std::max(batch_max_, start_ns);
  last_ns_ = std::max(last_ns_, end_ns);
  ++in_batch_;
  noteHeld();
}

void Feed::noteHeld() {
  result_.counts.max_held_events =
      std::max<uint64_t>(result_.counts.max_held_events, held_.size() + held_nccl_.size() + in_batch_);
  result_.counts.max_held_host_ranges = std::max<uint64_t>(result_.counts.max_held_host_ranges, held_host_.size());
}

void Feed::sortHeld() {
  result_.counts.held_reordered += putInOrder(held_, held_in_order_, markerBefore);
  result_.counts.held_reordered += putInOrder(held_nccl_, held_nccl_in_order_, ncclCallBefore);
  result_.counts.held_reordered += putInOrder(held_host_, held_host_in_order_, hostRangeBefore);
}

uint64_t Feed::earliestHeld() {
  sortHeld();
  uint64_t t = UINT64_MAX;
  if (!held_.empty()) t = held_.front().time_ns;
  if (!held_nccl_.empty()) t = std::min(t, held_nccl_.front().start_ns);
  if (!held_host_.empty()) t = std::min(t, held_host_.front().start_ns);
  return t;
}

std::optional<std::string> Feed::flush() {
  if (in_batch_ == 0) return std::nullopt;
  if (!hello_sent_) GW_TRY(sendHello(anyHeld() ? std::min(batch_min_, earliestHeld()) : batch_min_));
  // Held events up to this batch's latest time go first, in a batch of their own, so that they
  // come after nothing later than the window allows.
  sortHeld();
  const auto due = std::upper_bound(held_.begin(), held_.end(), batch_max_,
                                    [](uint64_t t, const MarkerEvent& m) { return t < m.time_ns; });
  const auto due_nccl = std::upper_bound(held_nccl_.begin(), held_nccl_.end(), batch_max_,
                                         [](uint64_t t, const NcclCallEvent& n) { return t < n.start_ns; });
  const auto due_host = std::upper_bound(held_host_.begin(), held_host_.end(), batch_max_,
                                         [](uint64_t t, const HostRangeEvent& r) { return t < r.start_ns; });
  deliverHeld(static_cast<std::size_t>(due - held_.begin()), static_cast<std::size_t>(due_nccl - held_nccl_.begin()),
              static_cast<std::size_t>(due_host - held_host_.begin()));
  batch_.base_time_ns = batch_min_;
  deliver(batch_);
  in_batch_ = 0;
  return std::nullopt;
}

void Feed::deliverHeld(std::size_t markers, std::size_t nccl_calls, std::size_t host_ranges) {
  std::size_t m = 0, n = 0, h = 0;
  while (m < markers || n < nccl_calls || h < host_ranges) {
    DecodedBatch held;
    held.base_time_ns = UINT64_MAX;
    for (std::size_t count = 0; count < kBatchEvents && (m < markers || n < nccl_calls || h < host_ranges); ++count) {
      const uint64_t tm = m < markers ? held_[m].time_ns : UINT64_MAX;
      const uint64_t tn = n < nccl_calls ? held_nccl_[n].start_ns : UINT64_MAX;
      const uint64_t th = h < host_ranges ? held_host_[h].start_ns : UINT64_MAX;
      if (tm <= tn && tm <= th) {
        held.markers.push_back(held_[m++]);
      } else if (tn <= th) {
        held.nccl_calls.push_back(held_nccl_[n++]);
      } else {
        held.host_ranges.push_back(held_host_[h++]);
      }
      held.base_time_ns = std::min(held.base_time_ns, std::min(tm, std::min(tn, th)));
    }
    deliver(held);
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(markers));
  held_nccl_.erase(held_nccl_.begin(), held_nccl_.begin() + static_cast<std::ptrdiff_t>(nccl_calls));
  held_host_.erase(held_host_.begin(), held_host_.begin() + static_cast<std::ptrdiff_t>(host_ranges));
  notePoppedFront(held_in_order_, markers);
  notePoppedFront(held_nccl_in_order_, nccl_calls);
  notePoppedFront(held_host_in_order_, host_ranges);
}

void Feed::deliver(DecodedBatch& batch) {
  batch.sequence = sequence_++;
  batch.strings.swap(strings_);
  for (const StringDefinition& s : batch.strings) table_->define(s.kind, s.id, s.text);
  visitor_.onBatch(batch, *table_);
  result_.read.summary.frames += 1;
  result_.health.batches += 1;
  batch.strings.clear();
  batch.api_calls.clear();
  batch.activities.clear();
  batch.markers.clear();
  batch.nccl_calls.clear();
  batch.host_ranges.clear();
}

std::optional<std::string> Feed::sendHello(uint64_t first_ns) {
  v1::Hello hello;
  hello.set_wire_version(1);
  hello.set_pid(cpu_pid_);
  hello.set_host("");
  if (meta_.rank) hello.set_rank(*meta_.rank);
  if (meta_.world_size) hello.set_world_size(*meta_.world_size);
  hello.add_probes(v1::PROBE_CUPTI_ACTIVITY);
  hello.set_clock(v1::CLOCK_DOMAIN_KINETO_US);
  hello.set_source(v1::STREAM_SOURCE_KINETO_TRACE);
  hello.set_trace_schema_version(meta_.schema_version);
  hello.set_trace_name(meta_.trace_name);
  hello.set_trace_python_events(meta_.python_events);
  hello.set_trace_cpu_ops(meta_.cpu_ops);
  if (meta_.host_last_ns > meta_.host_first_ns) hello.set_trace_host_span_ns(meta_.host_last_ns - meta_.host_first_ns);
  hello.set_start_time_ns(first_ns);
  // Relative times without their base (the trace has no baseTimeNanoseconds) leave
  // the wall clock unknown (0) rather than a date in 1970.
  hello.set_start_unix_ns(meta_.has_base_time            ? meta_.base_time_ns + first_ns
                          : first_ns >= kEpochTimesFromNs ? first_ns
                                                          : 0);
  visitor_.onHello(hello, 0);
  hello_sent_ = true;
  result_.read.summary.frames += 1;
  result_.health.has_hello = true;
  return std::nullopt;
}

}  // namespace gapwatch::kineto
