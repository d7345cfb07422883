// analysis/reorder_window.cpp: see reorder_window.h.
#include "analysis/reorder_window.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gapwatch::analysis {
namespace {

constexpr uint8_t kRankMarker = 0;
constexpr uint8_t kRankHostRange = 1;
constexpr uint8_t kRankPythonSample = 2;
constexpr uint8_t kRankNccl = 3;
constexpr uint8_t kRankApi = 4;
constexpr uint8_t kRankActivity = 5;

// How far ahead of a run's head its slots are prefetched: a few events' processing time.
constexpr uint32_t kPrefetchSlots = 8;

template <typename Slot>
inline void prefetchSlot(const Slot* slot) {
  const char* bytes = reinterpret_cast<const char*>(slot);
  for (std::size_t line = 0; line < sizeof(Slot); line += 64) __builtin_prefetch(bytes + line);
}

}  // namespace

ReorderWindow::~ReorderWindow() = default;

ReorderWindow::OrderKey ReorderWindow::keyOf(const ApiCallEvent& call) {
  return {call.start_ns, kRankApi, UINT64_MAX - call.end_ns};
}

ReorderWindow::OrderKey ReorderWindow::keyOf(const DeviceActivityEvent& activity) {
  return {activity.start_ns, kRankActivity, activity.correlation_id};
}

ReorderWindow::OrderKey ReorderWindow::keyOf(const NcclCallEvent& call) {
  return {call.start_ns, kRankNccl, UINT64_MAX - call.end_ns};
}

ReorderWindow::OrderKey ReorderWindow::keyOf(const MarkerEvent& marker) { return {marker.time_ns, kRankMarker, 0}; }

ReorderWindow::OrderKey ReorderWindow::keyOf(const HostRangeEvent& range) {
  return {range.start_ns, kRankHostRange, UINT64_MAX - range.end_ns};
}

ReorderWindow::OrderKey ReorderWindow::keyOf(const PythonSampleEvent& sample) {
  return {sample.time_ns, kRankPythonSample, 0};
}

namespace {

// Writes an event into a slot (the union member matching its type).
template <typename Slot>
void store(Slot& slot, const ApiCallEvent& call) { slot.event.api = call; }
template <typename Slot>
void store(Slot& slot, const DeviceActivityEvent& activity) { slot.event.activity = activity; }
template <typename Slot>
void store(Slot& slot, const NcclCallEvent& call) { slot.event.nccl = call; }
template <typename Slot>
void store(Slot& slot, const MarkerEvent& marker) { slot.event.marker = marker; }
template <typename Slot>
void store(Slot& slot, const HostRangeEvent& range) { slot.event.host = range; }
template <typename Slot>
void store(Slot& slot, const PythonSampleEvent& sample) { slot.event.sample = sample; }

}  // namespace

template <typename Event>
bool ReorderWindow::hold(const Event& event, Type type) {
  const OrderKey key = keyOf(event);
  if (released_any_ && key < last_released_) {
    ++late_events_;  // its place in the order has been passed
    return false;
  }
  const uint64_t sequence = sequence_++;
  // The run whose last key is the latest one not after this key (best fit keeps runs few); its
  // sequence is older, so appending keeps the run sorted on (key, sequence).
  // Fitting is exact; "latest" goes by time alone (which run of equal tail times takes the event
  // changes how many runs there are, never the order).
  const std::size_t open = open_.size();
  std::size_t fit = open;  // none
  uint64_t fit_time = 0;
  for (std::size_t i = 0; i < open; ++i) {
    const OrderKey& tail = open_[i].tail;
    bool fits = tail.time_ns < key.time_ns;
    if (tail.time_ns == key.time_ns) [[unlikely]] fits = !(key < tail);
    const bool take = fits & ((fit == open) | (fit_time <= tail.time_ns));
    fit = take ? i : fit;
    fit_time = take ? tail.time_ns : fit_time;
  }
  Slot* slot = nullptr;
  if (fit != open) {
    open_[fit].tail = key;
    Run& run = runs_[open_[fit].run];
    if (run.tail == kChunkSlots) {  // chunk full: link a new one
      Chunk* chunk = takeChunk();
      run.tail_chunk->next = chunk;
      run.tail_chunk = chunk;
      run.tail = 0;
    }
    slot = &run.tail_chunk->slots[run.tail++];
  } else if (open < kMaxRuns) {
    // Before the end of every run: a new one.
    uint32_t id;
    if (!free_runs_.empty()) {
      id = free_runs_.back();
      free_runs_.pop_back();
    } else {
      id = static_cast<uint32_t>(runs_.size());
      runs_.emplace_back();
    }
    Run& run = runs_[id];
    run.head_chunk = run.tail_chunk = takeChunk();
    run.head = 0;
    run.tail = 1;
    slot = &run.head_chunk->slots[0];
    open_.push_back(OpenRun{key, sequence, key, id});
    earliest_ns_ = std::min(earliest_ns_, key.time_ns);
  } else {
    // Too disordered for the runs: the overflow heap, one more source for the merge.
    overflow_.emplace_back();
    overflow_.back().setKey(key, sequence, type);
    store(overflow_.back(), event);
    std::push_heap(overflow_.begin(), overflow_.end(), spilledLater);
    earliest_ns_ = std::min(earliest_ns_, key.time_ns);
  }
  if (slot) {
    slot->setKey(key, sequence, type);
    store(*slot, event);
  }
  max_held_ = std::max(max_held_, ++held_);
  if (key.time_ns > newest_ns_) {
    newest_ns_ = key.time_ns;
    // Everything at least window_ns older than the newest event can no longer be preceded.
    if (newest_ns_ > window_ns_) release(newest_ns_ - window_ns_);
  }
  return true;
}

bool ReorderWindow::push(const ApiCallEvent& call) { return hold(call, Type::kApiCall); }
bool ReorderWindow::push(const DeviceActivityEvent& activity) { return hold(activity, Type::kActivity); }
bool ReorderWindow::push(const NcclCallEvent& call) { return hold(call, Type::kNcclCall); }
bool ReorderWindow::push(const MarkerEvent& marker) { return hold(marker, Type::kMarker); }
bool ReorderWindow::push(const HostRangeEvent& range) { return hold(range, Type::kHostRange); }
bool ReorderWindow::push(const PythonSampleEvent& sample) { return hold(sample, Type::kPythonSample); }

ReorderWindow::Chunk* ReorderWindow::takeChunk() {
  if (Chunk* chunk = free_chunks_) {
    free_chunks_ = chunk->next;
    chunk->next = nullptr;
    return chunk;
  }
  chunks_.push_back(std::make_unique<Chunk>());
  return chunks_.back().get();
}

void ReorderWindow::giveChunk(Chunk* chunk) {
  chunk->next = free_chunks_;
  free_chunks_ = chunk;
}

void ReorderWindow::release(uint64_t up_to_ns) {
  // Most calls release nothing: the earliest first time of the runs, kept, says so at once.
  if (earliest_ns_ > up_to_ns) return;
  for (;;) {
    // The earliest first event of all runs: a scan on times whose choice is a conditional move,
    // and the full order only among runs whose first events share that time (rare).
    const std::size_t open = open_.size();
    std::size_t best = 0;
    uint64_t best_time = open ? open_[0].head.time_ns : UINT64_MAX;
    bool tie = false;
    for (std::size_t i = 1; i < open; ++i) {
      const uint64_t time = open_[i].head.time_ns;
      tie |= time == best_time;
      const bool earlier = time < best_time;
      best = earlier ? i : best;
      best_time = earlier ? time : best_time;
    }
    if (tie) [[unlikely]] {
      for (std::size_t i = 0; i < open; ++i) {
        if (headBefore(open_[i].head, open_[i].head_sequence, open_[best].head, open_[best].head_sequence)) best = i;
      }
    }
    const bool spill = !overflow_.empty() &&
                       (open == 0 || headBefore(overflow_.front().key(), overflow_.front().sequence(),
                                                open_[best].head, open_[best].head_sequence));
    if (spill) {
      if (overflow_.front().time_ns > up_to_ns) {
        earliest_ns_ = overflow_.front().time_ns;
        return;
      }
      std::pop_heap(overflow_.begin(), overflow_.end(), spilledLater);
      const Slot spilled = overflow_.back();
      overflow_.pop_back();
      --held_;
      deliver(spilled);
      continue;
    }
    if (open == 0 || open_[best].head.time_ns > up_to_ns) {
      earliest_ns_ = open == 0 ? UINT64_MAX : open_[best].head.time_ns;
      return;
    }
    OpenRun& source = open_[best];
    Run& run = runs_[source.run];
    --held_;
    deliver(run.head_chunk->slots[run.head]);
    ++run.head;
    if (run.empty()) {  // the run is done: its chunk and its place go back
      giveChunk(run.head_chunk);
      run = Run{};
      free_runs_.push_back(source.run);
      source = open_.back();
      open_.pop_back();
      continue;
    }
    if (run.head == kChunkSlots) {  // the head chunk is used up; the run goes on in the next
      Chunk* used = run.head_chunk;
      run.head_chunk = used->next;
      run.head = 0;
      giveChunk(used);
    }
    // Slots come up about a window after they were written, long out of the caches: fetch the
    // run's slot kPrefetchSlots ahead now, so that it is there when its turn comes.
    if (run.head + kPrefetchSlots < kChunkSlots) {
      prefetchSlot(&run.head_chunk->slots[run.head + kPrefetchSlots]);
    } else if (run.head_chunk->next) {
      prefetchSlot(&run.head_chunk->next->slots[run.head + kPrefetchSlots - kChunkSlots]);
    }
    const Slot& next = run.head_chunk->slots[run.head];
    source.head = next.key();
    source.head_sequence = next.sequence();
  }
}

void ReorderWindow::flush() { release(UINT64_MAX); }

void ReorderWindow::deliver(const Slot& slot) {
  released_any_ = true;
  last_released_ = slot.key();
  switch (slot.type()) {
    case Type::kApiCall: return out_.onApiCall(slot.event.api);
    case Type::kActivity: return out_.onActivity(slot.event.activity);
    case Type::kNcclCall: return out_.onNcclCall(slot.event.nccl);
    case Type::kMarker: return out_.onMarker(slot.event.marker);
    case Type::kHostRange: return out_.onHostRange(slot.event.host);
    case Type::kPythonSample: return out_.onPythonSample(slot.event.sample);
  }
}

}  // namespace gapwatch::analysis
