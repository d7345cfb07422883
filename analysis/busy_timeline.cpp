// analysis/busy_timeline.cpp: see busy_timeline.h.
#include "analysis/busy_timeline.h"

#include <algorithm>

namespace gapwatch::analysis {

void BusyTimeline::add(uint64_t start_ns, uint64_t end_ns) {
  end_ns = std::max(end_ns, start_ns);
  if (!started_) {
    started_ = true;
    first_start_ns_ = start_ns;
    run_start_ns_ = start_ns;
    run_end_ns_ = end_ns;
    if (logging_) log_.push_back({run_start_ns_, run_end_ns_, closed_ns_});
    return;
  }
  if (start_ns > run_end_ns_) {
    closed_ns_ += run_end_ns_ - run_start_ns_;
    run_start_ns_ = start_ns;
    run_end_ns_ = end_ns;
    if (logging_) log_.push_back({run_start_ns_, run_end_ns_, closed_ns_});
    return;
  }
  run_end_ns_ = std::max(run_end_ns_, end_ns);
  if (logging_ && !log_.empty()) log_.back().end_ns = run_end_ns_;
}

uint64_t BusyTimeline::busyBefore(uint64_t time_ns) const {
  if (!started_ || time_ns <= run_start_ns_) return closed_ns_;
  return closed_ns_ + std::min(time_ns, run_end_ns_) - run_start_ns_;
}

uint64_t BusyTimeline::idleBefore(uint64_t start_ns) const {
  if (!started_ || start_ns <= run_end_ns_) return 0;
  return start_ns - run_end_ns_;
}

void BusyTimeline::startLog() {
  log_.clear();
  logging_ = true;
  if (started_) log_.push_back({run_start_ns_, run_end_ns_, closed_ns_});
}

void BusyTimeline::stopLog() {
  logging_ = false;
  std::vector<Run>().swap(log_);
}

uint64_t BusyTimeline::loggedBusyBefore(uint64_t time_ns) const {
  // The last run that started before `time_ns`.
  auto after = std::upper_bound(log_.begin(), log_.end(), time_ns,
                                [](uint64_t t, const Run& run) { return t <= run.start_ns; });
  if (after == log_.begin()) return log_.empty() ? busyBefore(time_ns) : log_.front().busy_before_ns;
  const Run& run = *(after - 1);
  return run.busy_before_ns + std::min(time_ns, run.end_ns) - run.start_ns;
}

void BusyTimeline::pruneOlderHalf() {
  log_.erase(log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(log_.size() / 2));
}

void BusyTimeline::pruneLogBefore(uint64_t time_ns) {
  const auto keep = std::find_if(log_.begin(), log_.end(), [&](const Run& run) { return run.end_ns >= time_ns; });
  log_.erase(log_.begin(), keep);
}

}  // namespace gapwatch::analysis
