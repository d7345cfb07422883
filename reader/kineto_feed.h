// reader/kineto_feed.h: the feed from the Kineto reader to a RecordingVisitor: the Hello once the
// first time is known, device-block events in batches bounded in count and time span, CPU-side
// events (steps, host ranges, c10d NCCL ranges) held and merged in by time, the string table, and
// the Goodbye. For the reader (kineto_trace.cpp) only.
#pragma once

#include "reader/events.h"
#include "reader/kineto_top_level.h"
#include "reader/kineto_trace.h"
#include "reader/stream_decoder.h"
#include "reader/string_table.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::kineto {

// Times below this (µs since the Unix epoch: September 2001) are relative to baseTimeNanoseconds.
inline constexpr uint64_t kEpochTimesFromNs = uint64_t{1'000'000'000'000'000'000};

// Hands events to the visitor as the reader gives them, in time order (kineto_event_sorter.h):
// device-block events in batches, held CPU-side events (steps, host ranges) merged by time in front
// of the first batch that reaches them.
class Feed {
 public:
  // `meta` is complete before the first event is handed over: the reader reads the whole trace
  // (and so every top-level key) before it hands over any (kineto_event_sorter.h).
  Feed(RecordingVisitor& visitor, KinetoReadResult& result, const TraceMetadata& meta);

  std::optional<std::string> call(const ApiCallEvent& c);
  std::optional<std::string> activity(const DeviceActivityEvent& a);
  // A CPU-side event: held until the feed reaches its time.
  void hold(const MarkerEvent& m);
  // Host ranges (ops, data loading, annotations): CPU-side, held like markers.
  void hold(const HostRangeEvent& r);
  // A c10d NCCL range: CPU-side too, held like a marker.
  void hold(const NcclCallEvent& n);
  void define(v1::StringKind kind, uint32_t id, std::string text) { strings_.push_back({kind, id, std::move(text)}); }
  void setCpuPid(uint32_t pid) { cpu_pid_ = pid; }
  bool helloSent() const { return hello_sent_; }

  // The end of traceEvents: everything still held goes out.
  std::optional<std::string> finish();
  // After the whole trace was read and checked.
  void goodbye();

 private:
  // Flushes the batch first when this event would make it too long or span too much time.
  std::optional<std::string> room(uint64_t time_ns);
  void added(uint64_t start_ns, uint64_t end_ns);
  void noteHeld();
  static bool markerBefore(const MarkerEvent& a, const MarkerEvent& b) { return a.time_ns < b.time_ns; }
  static bool ncclCallBefore(const NcclCallEvent& a, const NcclCallEvent& b) { return a.start_ns < b.start_ns; }
  static bool hostRangeBefore(const HostRangeEvent& a, const HostRangeEvent& b) { return a.start_ns < b.start_ns; }
  // Each held list by time, file order kept among equal times; what was in order is not sorted
  // again (this runs at every batch).
  void sortHeld();
  bool anyHeld() const { return !held_.empty() || !held_nccl_.empty() || !held_host_.empty(); }
  uint64_t earliestHeld();
  std::optional<std::string> flush();
  // Hands over the first `markers`, `nccl_calls` and `host_ranges` held events, merged by time in
  // batches of at most kBatchEvents, earliest first (a batch delivered after a later one could
  // come later than the reorder window allows).
  void deliverHeld(std::size_t markers, std::size_t nccl_calls, std::size_t host_ranges);
  void deliver(DecodedBatch& batch);
  std::optional<std::string> sendHello(uint64_t first_ns);

  RecordingVisitor& visitor_;
  KinetoReadResult& result_;
  const TraceMetadata& meta_;
  DecodedBatch batch_;
  std::size_t in_batch_ = 0;
  uint64_t batch_min_ = 0, batch_max_ = 0, last_ns_ = 0;
  std::vector<MarkerEvent> held_;
  std::vector<NcclCallEvent> held_nccl_;
  // A deque: a trace's CPU block can hold a million of them, handed over from the front a batch
  // at a time, which a vector would pay for by moving the rest each time.
  std::deque<HostRangeEvent> held_host_;
  // How many at the front of each held list are in order (reader/ordered_appends.h).
  std::size_t held_in_order_ = 0, held_nccl_in_order_ = 0, held_host_in_order_ = 0;
  std::vector<StringDefinition> strings_;
  std::shared_ptr<StringTable> table_;
  uint64_t sequence_ = 0;
  uint64_t api_calls_ = 0, activities_ = 0, markers_ = 0, nccl_calls_ = 0;
  uint32_t cpu_pid_ = 0;
  bool hello_sent_ = false;
};

}  // namespace gapwatch::kineto
