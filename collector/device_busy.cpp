// collector/device_busy.cpp: see device_busy.h.
#include "collector/device_busy.h"

#include <algorithm>

namespace gapwatch {

double BusySummary::idleFraction() const {
  const uint64_t window = windowNs();
  return window == 0 ? 0.0 : static_cast<double>(idle_ns) / static_cast<double>(window);
}

void BusySweep::add(const Interval& interval) {
  const uint64_t end = std::max(interval.start_ns, interval.end_ns);
  if (closed_.intervals++ == 0) {
    closed_.window_start_ns = interval.start_ns;
    run_start_ = interval.start_ns;
    run_end_ = end;
    return;
  }
  if (interval.start_ns < run_end_) {
    run_end_ = std::max(run_end_, end);  // overlaps the current run
    return;
  }
  // The current run is over; the time up to this interval is a gap (none when they touch).
  closed_.busy_ns += run_end_ - run_start_;
  const uint64_t gap = interval.start_ns - run_end_;
  closed_.gaps.add(gap);
  closed_.idle_ns += gap;
  run_start_ = interval.start_ns;
  run_end_ = end;
}

BusySummary BusySweep::summary() const {
  BusySummary s = closed_;
  if (s.intervals > 0) {
    s.busy_ns += run_end_ - run_start_;
    s.window_end_ns = run_end_;
  }
  return s;
}

BusySummary summarizeBusy(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
  BusySweep sweep;
  for (const Interval& interval : intervals) sweep.add(interval);
  return sweep.summary();
}

}  // namespace gapwatch
