// analysis/correlation_index.h: which recorded call queued a device activity.
//
// CUPTI gives a call and the work it queued the same correlation id. Stages that need the call
// behind an activity (the idle attribution: whose thread, did it return before the gap; the launch
// statistics: API time, launch delay) keep one of these. It holds the calls that can queue device
// work (launches, graph launches, copies, memsets) until their activity has been seen; a graph
// launch stays until it expires, because all the kernels of the graph carry its id. Calls whose
// work never shows up (CUPTI dropped the record, a copy of 0 bytes) expire `max_age_ns` after they
// entered, so memory is bounded by the calls of that much time, not by the recording's length.
#pragma once

#include "analysis/flat_u64_map.h"
#include "analysis/ring_queue.h"
#include "reader/events.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace gapwatch::analysis {

struct QueuingCall {
  v1::ApiKind kind = v1::API_KIND_UNSPECIFIED;
  uint32_t thread_id = 0;
  uint64_t enter_ns = 0;
  uint64_t exit_ns = 0;
  uint64_t stream = 0;
  bool kernel_seen = false;  // a graph launch: its first kernel has been seen
  uint32_t api_name_id = 0;  // for reports that name the call (the longest gaps)
  uint32_t python_stack_id = 0;  // where in Python it was made, when recorded (ApiCallEvent's)
};

class CorrelationIndex {
 public:
  explicit CorrelationIndex(uint64_t max_age_ns) : max_age_ns_(max_age_ns) {}

  // True for the kinds of call that put work on the device.
  static bool queuesDeviceWork(v1::ApiKind kind);

  // Remembers the call if it queues device work and carries a correlation id. Calls come in order
  // of entry (the reordering window's order). Of two calls with one id, the one that exits last
  // is kept: the outermost, as the ground truth picks it.
  void add(const ApiCallEvent& call);

  // The call with this id, or nullptr. (Inline, as this and matched() run for every activity.)
  const QueuingCall* find(uint64_t correlation_id) const {
    return correlation_id == 0 ? nullptr : calls_.find(correlation_id);
  }

  // The activity of this id has been seen by everyone who needed the call: forget it, unless it
  // is a graph launch (more kernels to come).
  void matched(uint64_t correlation_id) {
    calls_.eraseIf(correlation_id, [](const QueuingCall& call) { return call.kind != v1::API_KIND_GRAPH_LAUNCH; });
  }

  // True for the first kernel of a graph launch with this id (the one its launch delay is to),
  // false for its later kernels and for ids of other calls.
  bool firstKernelOfGraph(uint64_t correlation_id) {
    QueuingCall* call = correlation_id == 0 ? nullptr : calls_.find(correlation_id);
    if (!call || call->kind != v1::API_KIND_GRAPH_LAUNCH || call->kernel_seen) return false;
    call->kernel_seen = true;
    return true;
  }

  // Forgets calls that entered more than max_age_ns before `now_ns`.
  void expire(uint64_t now_ns);

  // True when no call has the id but one with an id at least as high was forgotten by expire():
  // ids grow with time, so the call this activity came from most likely expired (it entered long
  // ago) rather than never having been recorded.
  bool probablyExpired(uint64_t correlation_id) const {
    return correlation_id != 0 && correlation_id <= max_expired_id_;
  }

  std::size_t size() const { return calls_.size(); }

 private:
  uint64_t max_age_ns_;
  // Forgets young_'s entries whose call is gone (matched, or replaced), moves the rest to old_.
  void promoteYoung();

  // Every launch goes through add, find and matched: flat containers, no allocation per call.
  FlatU64Map<QueuingCall> calls_;
  // (enter_ns, correlation id) of every call added, in entry order: old_, then young_. Nearly
  // every call is matched within microseconds, so its entry is dropped while still young (and in
  // the cache) instead of being kept max_age_ns to be dropped then. Calls come in entry order, so
  // an entry whose call is gone stays useless: a call added again with that id and time has an
  // entry of its own, at most as late (they expire in the same expire()).
  RingQueue<std::pair<uint64_t, uint64_t>> old_;
  RingQueue<std::pair<uint64_t, uint64_t>> young_;
  uint64_t max_expired_id_ = 0;
};

}  // namespace gapwatch::analysis
