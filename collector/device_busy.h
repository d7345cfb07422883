// collector/device_busy.h: busy time, idle time and idle gaps of one device from its activities.
//
// Definitions (ARCHITECTURE.md section 6): the window runs from the first activity's start to the
// last activity's end; busy is the union of the activity intervals (overlapping streams count
// once); idle = window - busy, made of maximal gaps with no activity. An activity of zero length
// adds no busy time but still ends the gap it falls in: the device started work there.
//
// BusySweep takes intervals in order of start time and keeps O(1) state, so a future one-pass
// analysis can feed it as events arrive; summarizeBusy() sorts a vector first for callers that
// have everything in memory.
#pragma once

#include "collector/gap_histogram.h"

#include <cstdint>
#include <vector>

namespace gapwatch {

struct Interval {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;  // >= start_ns
};

struct BusySummary {
  uint64_t intervals = 0;
  uint64_t window_start_ns = 0;  // valid when intervals > 0
  uint64_t window_end_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t idle_ns = 0;  // == gaps.totalNs()
  GapHistogram gaps;

  uint64_t windowNs() const { return window_end_ns - window_start_ns; }
  // idle / window; 0 for an empty or zero-length window.
  double idleFraction() const;
};

class BusySweep {
 public:
  // Intervals must come in non-decreasing start order.
  void add(const Interval& interval);
  // The numbers so far, the current run of overlapping intervals included.
  BusySummary summary() const;

 private:
  BusySummary closed_;        // every run before the current one
  uint64_t run_start_ = 0;  // the current run of overlapping intervals
  uint64_t run_end_ = 0;
};

// Sorts `intervals` by start and sweeps them.
BusySummary summarizeBusy(std::vector<Interval>& intervals);

}  // namespace gapwatch
