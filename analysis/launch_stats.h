// analysis/launch_stats.h: how fast the host feeds the device with kernels.
//
// HTA's get_cuda_kernel_launch_stats definitions (research/profiler-anchors.md), on launch calls
// (API_KIND_LAUNCH: runtime launches and driver launches made outside the runtime, NCCL's) joined
// by correlation id to their kernel:
//   - API time = call exit - entry; launch delay = kernel start - call exit, clipped at 0;
//   - short kernel: API time <= the runtime cutoff and kernel time < API time;
//   - runtime outlier: API time > the runtime cutoff; delay outlier: delay > the delay cutoff.
// Also: kernels under 20 us (every kernel record of positive length); launches per second over
// the device window (first activity start to last end, all devices); queue depth as HTA's queue
// length, per stream: +1 when the call of a piece of device work (launch, copy, memset) enters, -1
// when that work ends; max over streams, and the largest per-stream 99th percentile, time-weighted
// over the stream's span (its first call to its last end). And gapwatch's own host-side launch
// gap: per thread, from one launch (or graph launch) call's return to the next one's entry.
// A graph launch is joined to the first kernel of its graph (every kernel of a graph carries the
// graph launch's correlation id) and counts as one launch. Calls made inside a stream capture (on
// the capturing thread, from the begin's return to the end's entry) launch nothing: they are
// counted as captured and left out of everything else.
// Without a device timeline (symbol hooks only) nothing can be joined: API times are taken over
// every launch call and the host-side gaps still count; the rest stays 0.
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/capture_tracker.h"
#include "analysis/correlation_index.h"
#include "analysis/duration_percentiles.h"
#include "analysis/flat_u64_map.h"
#include "analysis/ring_queue.h"

#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <utility>
#include <vector>

namespace gapwatch::analysis {

// HTA's queue length of one stream as a step function of time, with its time-weighted
// distribution. Memory: the work in flight, and one counter per depth reached.
class StreamQueueDepth {
 public:
  // One piece of work: its call entered at enter_ns and the work ended at end_ns. Entries come in
  // non-decreasing order (the work of one stream runs in the order it was queued); an earlier one
  // is counted from the latest time seen.
  void add(uint64_t enter_ns, uint64_t end_ns);
  // Lets the work in flight finish.
  void finish();

  uint64_t max() const { return max_; }
  // The smallest depth d such that the stream spent at least `percent` % of its span at depth <= d.
  uint64_t percentile(double percent) const;
  uint64_t spanNs() const;

 private:
  static constexpr std::size_t kMaxTrackedDepth = 1 << 16;
  void advanceTo(uint64_t t);
  // The work in flight is the multiset of ends in both containers; the earliest ends first.
  std::size_t inFlight() const { return in_order_.size() + out_of_order_.size(); }
  bool earliestEnd(uint64_t& end) const;
  void popEarliestEnd();

  bool started_ = false;
  uint64_t first_ns_ = 0;
  uint64_t last_ns_ = 0;
  // Work on one stream mostly ends in the order it was queued: such ends go to a FIFO (O(1)),
  // only an end earlier than the last one queued needs the heap.
  RingQueue<uint64_t> in_order_;
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> out_of_order_;
  std::vector<uint64_t> time_at_depth_;
  uint64_t max_ = 0;
};

class LaunchStatsStage final : public AnalysisStage {
 public:
  static constexpr uint64_t kSmallKernelNs = 20'000;

  explicit LaunchStatsStage(const AnalysisOptions& options);

  void begin(const RecordingFacts& facts) override { facts_ = facts; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void finish() override;
  // Writes `launches`.
  void contribute(ProcessAnalysis& result) override { write(result); }
  void snapshot(ProcessAnalysis& result) const override { write(result); }

 private:
  void write(ProcessAnalysis& result) const;
  void noteJoinedLaunch(const QueuingCall& call, const DeviceActivityEvent& kernel);

  AnalysisOptions options_;
  RecordingFacts facts_;
  CorrelationIndex queued_by_;
  LaunchStats stats_;
  DurationPercentiles api_;
  DurationPercentiles delay_;
  uint64_t delay_total_ns_ = 0;
  bool any_activity_ = false;
  uint64_t window_start_ns_ = 0;
  uint64_t window_end_ns_ = 0;
  FlatU64Map<uint64_t> last_launch_exit_;  // thread -> exit of its last launch
  CaptureTracker captures_;                // calls made inside a stream capture queue nothing
  std::map<std::pair<uint32_t, uint64_t>, StreamQueueDepth> queues_;  // (device, stream)
  // The queue of the last activity's stream: consecutive activities are mostly on one stream.
  std::pair<uint32_t, uint64_t> last_queue_key_{};
  StreamQueueDepth* last_queue_ = nullptr;
};

}  // namespace gapwatch::analysis
