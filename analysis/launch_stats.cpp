// analysis/launch_stats.cpp: see launch_stats.h.
#include "analysis/launch_stats.h"

#include <algorithm>

namespace gapwatch::analysis {
namespace {

constexpr uint64_t kQueueAgeNs = 10'000'000'000ull;

bool isDeviceWork(v1::ActivityKind kind) {
  return kind == v1::ACTIVITY_KIND_KERNEL || kind == v1::ACTIVITY_KIND_MEMCPY || kind == v1::ACTIVITY_KIND_MEMSET;
}

}  // namespace

// ---- StreamQueueDepth -------------------------------------------------------------------------

bool StreamQueueDepth::earliestEnd(uint64_t& end) const {
  if (in_order_.empty() && out_of_order_.empty()) return false;
  if (out_of_order_.empty()) end = in_order_.front();
  else if (in_order_.empty()) end = out_of_order_.top();
  else end = std::min(in_order_.front(), out_of_order_.top());
  return true;
}

void StreamQueueDepth::popEarliestEnd() {
  // Either container's first is the minimum when equal: the multiset loses one copy either way.
  if (out_of_order_.empty() || (!in_order_.empty() && in_order_.front() <= out_of_order_.top())) {
    in_order_.pop_front();
  } else {
    out_of_order_.pop();
  }
}

void StreamQueueDepth::advanceTo(uint64_t t) {
  // Walk the step function up to t: each finished piece of work lowers the depth where it ends.
  // time_at_depth_ already reaches the depth in flight (add() sees to it): no bounds checks here.
  if (out_of_order_.empty()) {
    // Every end in flight is in the FIFO: the common case, a stream that ran its work in order.
    for (std::size_t n = in_order_.size(); n > 0 && in_order_.front() <= t; --n) {
      const uint64_t end = in_order_.front();
      time_at_depth_[std::min(n, kMaxTrackedDepth - 1)] += end - last_ns_;
      last_ns_ = end;
      in_order_.pop_front();
    }
  } else {
    uint64_t end;
    while (earliestEnd(end) && end <= t) {
      time_at_depth_[std::min(inFlight(), kMaxTrackedDepth - 1)] += end - last_ns_;
      last_ns_ = end;
      popEarliestEnd();
    }
  }
  if (t > last_ns_) {
    const std::size_t depth = std::min(inFlight(), kMaxTrackedDepth - 1);
    if (time_at_depth_.size() <= depth) time_at_depth_.resize(depth + 1, 0);
    time_at_depth_[depth] += t - last_ns_;
    last_ns_ = t;
  }
}

void StreamQueueDepth::add(uint64_t enter_ns, uint64_t end_ns) {
  if (!started_) {
    started_ = true;
    first_ns_ = last_ns_ = enter_ns;
  }
  const uint64_t at = std::max(enter_ns, last_ns_);
  advanceTo(at);
  const uint64_t end = std::max(end_ns, at);
  if (in_order_.empty() || end >= in_order_.back()) {
    in_order_.push_back(end);
  } else {
    out_of_order_.push(end);
  }
  max_ = std::max<uint64_t>(max_, inFlight());
  // Room for the time spent at every depth up to the one now in flight (trailing zeros do not
  // change a percentile).
  const std::size_t depth = std::min(inFlight(), kMaxTrackedDepth - 1);
  if (time_at_depth_.size() <= depth) time_at_depth_.resize(depth + 1, 0);
}

void StreamQueueDepth::finish() {
  uint64_t end;
  while (earliestEnd(end)) advanceTo(end);
}

uint64_t StreamQueueDepth::spanNs() const { return started_ ? last_ns_ - first_ns_ : 0; }

uint64_t StreamQueueDepth::percentile(double percent) const {
  uint64_t total = 0;
  for (uint64_t t : time_at_depth_) total += t;
  if (total == 0) return max_;
  const double wanted = percent / 100.0 * static_cast<double>(total);
  uint64_t seen = 0;
  for (std::size_t d = 0; d < time_at_depth_.size(); ++d) {
    seen += time_at_depth_[d];
    if (static_cast<double>(seen) >= wanted - 1e-6) return d;
  }
  return time_at_depth_.size() - 1;
}

// ---- LaunchStatsStage -------------------------------------------------------------------------

LaunchStatsStage::LaunchStatsStage(const AnalysisOptions& options)
    : options_(options), queued_by_(std::max(options.reorder_window_ns, kQueueAgeNs)) {}

void LaunchStatsStage::onApiCall(const ApiCallEvent& call) {
  if (captures_.captured(call)) {
    ++stats_.captured_calls;  // put into a graph, not run: it never gets device activity
    return;
  }
  const bool launch = call.kind == v1::API_KIND_LAUNCH;
  if (launch || call.kind == v1::API_KIND_GRAPH_LAUNCH) {
    auto [last_exit, first] = last_launch_exit_.tryEmplace(call.thread_id, call.end_ns);
    if (!first) {
      if (call.start_ns > *last_exit) stats_.host_launch_gaps.add(call.start_ns - *last_exit);
      *last_exit = std::max(*last_exit, call.end_ns);
    }
  }
  if (!facts_.device_timeline) {
    if (launch) {
      const uint64_t api_ns = call.end_ns - std::min(call.start_ns, call.end_ns);
      api_.add(api_ns);
      stats_.api_total_ns += api_ns;
    }
    return;
  }
  queued_by_.add(call);
  queued_by_.expire(call.start_ns);
}

void LaunchStatsStage::onActivity(const DeviceActivityEvent& activity) {
  if (!facts_.device_timeline || !isDeviceWork(activity.kind) || activity.end_ns <= activity.start_ns) return;
  if (!any_activity_) {
    any_activity_ = true;
    window_start_ns_ = activity.start_ns;
  }
  window_end_ns_ = std::max(window_end_ns_, activity.end_ns);
  const bool kernel = activity.kind == v1::ACTIVITY_KIND_KERNEL;
  if (kernel && activity.end_ns - activity.start_ns < kSmallKernelNs) ++stats_.kernels_under_20us;
  if (const QueuingCall* call = queued_by_.find(activity.correlation_id)) {
    const std::pair<uint32_t, uint64_t> key{activity.device, activity.stream};
    if (!last_queue_ || key != last_queue_key_) {
      last_queue_ = &queues_[key];  // map nodes do not move
      last_queue_key_ = key;
    }
    last_queue_->add(call->enter_ns, activity.end_ns);
    if (kernel && call->kind == v1::API_KIND_LAUNCH) noteJoinedLaunch(*call, activity);
    if (kernel && call->kind == v1::API_KIND_GRAPH_LAUNCH) {
      ++stats_.graph_kernels;
      // A graph launch is joined to its first kernel: what it waited for to start running.
      if (queued_by_.firstKernelOfGraph(activity.correlation_id)) {
        ++stats_.graph_launches;
        noteJoinedLaunch(*call, activity);
      }
    }
  }
  queued_by_.matched(activity.correlation_id);
}

void LaunchStatsStage::noteJoinedLaunch(const QueuingCall& call, const DeviceActivityEvent& kernel) {
  const uint64_t api_ns = call.exit_ns - std::min(call.enter_ns, call.exit_ns);
  const uint64_t kernel_ns = kernel.end_ns - kernel.start_ns;
  const uint64_t delay_ns = kernel.start_ns > call.exit_ns ? kernel.start_ns - call.exit_ns : 0;
  ++stats_.launches;
  stats_.api_total_ns += api_ns;
  api_.add(api_ns);
  delay_.add(delay_ns);
  delay_total_ns_ += delay_ns;
  // HTA's short kernel compares one kernel with the call that launched it alone: not a graph's.
  if (call.kind == v1::API_KIND_LAUNCH && api_ns <= options_.hta_runtime_cutoff_ns && kernel_ns < api_ns) {
    ++stats_.short_kernels;
  }
  if (api_ns > options_.hta_runtime_cutoff_ns) ++stats_.runtime_outliers;
  if (delay_ns > options_.hta_launch_delay_cutoff_ns) ++stats_.launch_delay_outliers;
}

void LaunchStatsStage::finish() {
  for (auto& [key, queue] : queues_) queue.finish();
}

void LaunchStatsStage::write(ProcessAnalysis& result) const {
  LaunchStats s = stats_;
  s.api_p50_ns = api_.percentile(50);
  s.api_p99_ns = api_.percentile(99);
  if (s.launches > 0) {
    s.launch_delay_mean_ns = delay_total_ns_ / s.launches;
    s.launch_delay_p50_ns = delay_.percentile(50);
    s.launch_delay_p99_ns = delay_.percentile(99);
  }
  const uint64_t window_ns = any_activity_ ? window_end_ns_ - window_start_ns_ : 0;
  s.launches_per_second = window_ns ? static_cast<double>(s.launches) * 1e9 / static_cast<double>(window_ns) : 0.0;
  for (const auto& [key, queue] : queues_) {
    s.queue_depth_max = std::max(s.queue_depth_max, queue.max());
    s.queue_depth_p99 = std::max(s.queue_depth_p99, queue.percentile(99));
  }
  result.launches = std::move(s);
}

}  // namespace gapwatch::analysis
