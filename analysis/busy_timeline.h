// analysis/busy_timeline.h: how much of a span the device was busy, asked of a timeline fed in start
// order. Step detection measures each step's idle share with it without keeping the activities.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gapwatch::analysis {

// Busy time of a device timeline fed in start order, with "busy before t" for any t not before
// the last start added; with the log on, also for any t since the log began.
class BusyTimeline {
 public:
  void add(uint64_t start_ns, uint64_t end_ns);
  // Busy time in [first activity, t); t must not precede the last start added (else approximate).
  uint64_t busyBefore(uint64_t time_ns) const;
  // Idle time between the end of the work so far and `start_ns` (0 while busy, or before any).
  uint64_t idleBefore(uint64_t start_ns) const;
  bool empty() const { return !started_; }
  uint64_t firstStart() const { return first_start_ns_; }

  // The log keeps every run of overlapping work from now on, for loggedBusyBefore().
  void startLog();
  void stopLog();
  // busyBefore for any t since the log began (binary search).
  uint64_t loggedBusyBefore(uint64_t time_ns) const;
  // Forgets logged runs that ended before `time_ns`.
  void pruneLogBefore(uint64_t time_ns);
  // Forgets the older half of the logged runs (busy time before them is then approximate).
  void pruneOlderHalf();
  std::size_t loggedRuns() const { return log_.size(); }

 private:
  struct Run {
    uint64_t start_ns, end_ns, busy_before_ns;
  };
  bool started_ = false;
  uint64_t first_start_ns_ = 0;
  uint64_t closed_ns_ = 0;  // busy time of the runs before the current one
  uint64_t run_start_ns_ = 0, run_end_ns_ = 0;
  bool logging_ = false;
  std::vector<Run> log_;         // the current run is the last one, kept up to date
};

}  // namespace gapwatch::analysis
