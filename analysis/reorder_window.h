// analysis/reorder_window.h: puts one process's events back into time order.
//
// A recording is not in time order: each thread's ring is drained on its own, and CUPTI hands
// device records over in buffers, up to about half a second after the calls of the same time. The
// window holds every event until no earlier one can still come (the newest time seen has moved
// `window_ns` past it), then releases them merged in time order to a TimeOrderedConsumer:
//   - by time: a call, a host range or an activity by its start, a marker or a Python sample by
//     its time;
//   - at the same nanosecond: markers, then host ranges (the longer first), then Python samples
//     (read before the call that ended the stretch they sampled), then NCCL calls, then API calls
//     (the longer first, so an outer call comes before a call nested in it), then device
//     activities (lowest correlation id first: on a tie the work queued first ends the gap);
//   - otherwise in arrival order.
// An event that arrives after the window has released something later than it cannot be put in
// its place any more: it is counted as late and not delivered, so every consumer sees one
// consistent order. Memory is the events of `window_ns` of recording, whatever its length.
//
// How (the engine's hot path: every event goes in and out once). A recording is almost sorted:
// each thread's calls and each stream's records arrive in order, only the sources interleave. So
// the window keeps sorted runs instead of one heap over all events: an arriving event is appended
// to the run whose last event is the latest one not after it (patience sorting, which keeps the
// number of runs at the fewest possible: about one per source), and releasing merges the runs by
// taking the earliest of their first events. With a handful of runs both choices are linear scans
// without branches on the data (a heap's comparisons are coin flips to the branch predictor when
// calls and device records alternate). Events are stored once, in fixed-size chunks taken from a
// pool, and never move until they are delivered. An input too disordered to fit in kMaxRuns runs
// spills into a plain heap, merged like one more run. The order delivered is exactly the total
// order above (time, then type and tie, then arrival), however the events are split into runs.
#pragma once

#include "analysis/time_ordered_consumer.h"
#include "reader/events.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace gapwatch::analysis {

class ReorderWindow {
 public:
  ReorderWindow(uint64_t window_ns, TimeOrderedConsumer& out) : window_ns_(window_ns), out_(out) {}
  ~ReorderWindow();
  ReorderWindow(const ReorderWindow&) = delete;
  ReorderWindow& operator=(const ReorderWindow&) = delete;

  // Each returns false when the event came too late to be placed (and was counted, not held).
  bool push(const ApiCallEvent& call);
  bool push(const DeviceActivityEvent& activity);
  bool push(const NcclCallEvent& call);
  bool push(const MarkerEvent& marker);
  bool push(const HostRangeEvent& range);
  bool push(const PythonSampleEvent& sample);

  // End of the stream: releases everything still held.
  void flush();

  uint64_t lateEvents() const { return late_events_; }
  // Every event pushed, placed or late.
  uint64_t events() const { return sequence_ + late_events_; }
  std::size_t held() const { return held_; }
  std::size_t maxHeld() const { return max_held_; }

 private:
  // Where an event goes in the merged order; `sequence` keeps arrival order among equals.
  struct OrderKey {
    uint64_t time_ns = 0;
    uint8_t rank = 0;  // marker, host range, Python sample, NCCL call, API call, activity
    uint64_t tie = 0;  // calls, host ranges: UINT64_MAX - end (longer first); activities: correlation id
    bool operator<(const OrderKey& other) const {
      if (time_ns != other.time_ns) return time_ns < other.time_ns;
      if (rank != other.rank) return rank < other.rank;
      return tie < other.tie;
    }
  };
  enum class Type : uint8_t { kApiCall, kActivity, kNcclCall, kMarker, kHostRange, kPythonSample };
  // One held event, 112 bytes: memory traffic is most of the window's cost, as an event is read
  // back a whole window after it was written. The event types are plain values, so a tagged union
  // holds any of them without a std::variant's per-copy dispatch. The order key is kept (working
  // it out again from the event costs a mispredicted branch per event), with its rank and the
  // event's type in the low bits of the arrival sequence.
  struct Slot {
    uint64_t time_ns = 0;
    uint64_t tie = 0;
    uint64_t tagged = 0;  // sequence << 6 | rank << 3 | type
    union Payload {
      Payload() : marker() {}
      ApiCallEvent api;
      DeviceActivityEvent activity;
      NcclCallEvent nccl;
      MarkerEvent marker;
      HostRangeEvent host;
      PythonSampleEvent sample;
    } event;
    uint64_t sequence() const { return tagged >> 6; }
    Type type() const { return static_cast<Type>(tagged & 7); }
    OrderKey key() const { return {time_ns, static_cast<uint8_t>((tagged >> 3) & 7), tie}; }
    void setKey(const OrderKey& key, uint64_t sequence, Type type) {
      time_ns = key.time_ns;
      tie = key.tie;
      tagged = sequence << 6 | static_cast<uint64_t>(key.rank) << 3 | static_cast<uint64_t>(type);
    }
  };
  static constexpr std::size_t kChunkSlots = 64;
  struct Chunk {
    Chunk* next = nullptr;
    Slot slots[kChunkSlots];
  };
  // A sorted run: a FIFO of slots over a linked list of chunks.
  struct Run {
    Chunk* head_chunk = nullptr;
    Chunk* tail_chunk = nullptr;
    uint32_t head = 0;  // first held slot in head_chunk
    uint32_t tail = 0;  // one past the last slot in tail_chunk
    bool empty() const { return head_chunk == tail_chunk && head == tail; }
  };
  // What the merge and the placement scan, for each run that holds events.
  struct OpenRun {
    OrderKey head;           // its first event's key
    uint64_t head_sequence;  // and arrival
    OrderKey tail;           // its last event's key
    uint32_t run;            // index in runs_
  };

  static constexpr std::size_t kMaxRuns = 32;

  // The order, without branches: both are evaluated on every event with unpredictable outcomes.
  static bool keyBefore(const OrderKey& a, const OrderKey& b) {
    return (a.time_ns < b.time_ns) |
           ((a.time_ns == b.time_ns) & ((a.rank < b.rank) | ((a.rank == b.rank) & (a.tie < b.tie))));
  }
  static bool keyEqual(const OrderKey& a, const OrderKey& b) {
    return (a.time_ns == b.time_ns) & (a.rank == b.rank) & (a.tie == b.tie);
  }
  static bool headBefore(const OrderKey& a, uint64_t a_sequence, const OrderKey& b, uint64_t b_sequence) {
    // As ints: clang warns of | and & on bools, meant here (no branches).
    return (int(keyBefore(a, b)) | (int(keyEqual(a, b)) & int(a_sequence < b_sequence))) != 0;
  }
  static OrderKey keyOf(const ApiCallEvent& call);
  static OrderKey keyOf(const DeviceActivityEvent& activity);
  static OrderKey keyOf(const NcclCallEvent& call);
  static OrderKey keyOf(const MarkerEvent& marker);
  static OrderKey keyOf(const HostRangeEvent& range);
  static OrderKey keyOf(const PythonSampleEvent& sample);
  static bool spilledLater(const Slot& a, const Slot& b) {  // std heap order: earliest on top
    if (b.key() < a.key()) return true;
    if (a.key() < b.key()) return false;
    return a.sequence() > b.sequence();
  }

  template <typename Event>
  bool hold(const Event& event, Type type);
  void release(uint64_t up_to_ns);
  void deliver(const Slot& slot);
  Chunk* takeChunk();
  void giveChunk(Chunk* chunk);

  uint64_t window_ns_;
  TimeOrderedConsumer& out_;
  std::vector<Run> runs_;
  std::vector<uint32_t> free_runs_;
  std::vector<OpenRun> open_;   // the runs that hold events, in no order
  std::vector<Slot> overflow_;  // a min-heap on (key, sequence), rarely used
  std::vector<std::unique_ptr<Chunk>> chunks_;  // every chunk, for freeing
  Chunk* free_chunks_ = nullptr;
  std::size_t held_ = 0;
  // No held event is earlier than this: exact after release() returns, lowered by new runs.
  uint64_t earliest_ns_ = UINT64_MAX;
  uint64_t sequence_ = 0;
  uint64_t newest_ns_ = 0;       // the latest time any event carried
  bool released_any_ = false;
  OrderKey last_released_;
  uint64_t late_events_ = 0;
  std::size_t max_held_ = 0;
};

}  // namespace gapwatch::analysis
