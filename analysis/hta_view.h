// analysis/hta_view.h: HTA's numbers for one process, computed with HTA's conventions.
//
// Users who read their traces with Holistic Trace Analysis compare gapwatch with it number for
// number, so `report --hta` gives HTA's own temporal breakdown, idle time per stream and kernel
// launch summary (HTA 0.6.1, hta/analyzers/breakdown_analysis.py, cuda_kernel_analysis.py,
// hta/common/trace.py), beside gapwatch's view, which differs on purpose (docs/hta-parity.md):
//   - GPU work: every kernel, copy, memset and sync record (HTA: stream != -1). With two or more
//     ProfilerSteps only work whose call began before the last step's start, with one up to that
//     step's end; either way only work whose CPU call is in the recording (HTA joins them). With
//     no step HTA filters nothing: all of it.
//   - times: starts rounded up and ends down to whole microseconds, in integer arithmetic.
//   - temporal: kernel time = last end - first start; idle = that - the union of all work;
//     compute = the union of COMPUTATION work (hta_kernel_class.h); non-compute = the rest.
//   - idle per stream (sync records left out): each piece of work's gap to the previous one's
//     end on its stream (not the latest end), as host_wait when its call began after that end,
//     kernel_wait when shorter than the threshold, else other; the first gap is other.
//   - launch stats: calls named cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync and
//     cudaMemsetAsync joined to their work; rounded CPU and GPU durations; the delay is clipped at 0.
// Memory: the cut is known only once the next step begins (or at the end), so the stage holds
// the work whose call began since the latest step start, in arrival order, and folds each piece
// into running totals as soon as its fate is known. With no step or one step the rule is decided
// at the end, so the work since that step's start (or all of it) is held: HTA's rule needs it.
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/flat_u64_map.h"
#include "analysis/hta_kernel_class.h"
#include "analysis/ring_queue.h"

#include <cstdint>
#include <map>
#include <vector>

namespace gapwatch::analysis {

class HtaViewStage final : public AnalysisStage {
 public:
  explicit HtaViewStage(const AnalysisOptions& options);

  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void onMarker(const MarkerEvent& marker) override;
  void finish() override;
  // Writes `hta`.
  void contribute(ProcessAnalysis& result) override;

 private:
  enum class Fate : uint8_t { kPending, kKept, kDropped };
  static constexpr uint64_t kNoNext = UINT64_MAX;
  struct CallTimes {
    int64_t start_us = 0;  // rounded up
    int64_t end_us = 0;    // rounded down
    bool launch_stat = false;  // named as one of the calls HTA's launch stats take
    bool graph_launch = false;  // its id is on every kernel of the graph: kept until it expires
  };
  struct Work {
    int64_t start_us = 0, end_us = 0;
    int64_t stream = 0;
    CallTimes call;
    HtaKernelClass cls = HtaKernelClass::kOther;
    bool sync_record = false;
    bool has_call = true;        // false: HTA 0.5.0 keeps it when the trace has under two steps
    bool awaiting_call = false;  // started before any call with its id: the call may come later
    uint64_t correlation_id = 0;
    // While awaiting: the number in held_ of the next record with the same id that awaits the
    // same call (a graph's kernels, a copy's records), or kNoNext.
    uint64_t next_awaiting = kNoNext;
    Fate fate = Fate::kPending;
  };
  struct StreamGaps {
    bool has_prev = false;
    int64_t prev_end_us = 0;
    HtaStreamIdle idle;
  };
  // The merged union of a set of intervals that arrive in order of start.
  struct Union {
    bool open = false;
    int64_t start = 0, end = 0;
    int64_t total = 0;
    // Closed intervals, kept only for the overlap of communication with computation.
    void add(int64_t s, int64_t e, RingQueue<std::pair<int64_t, int64_t>>* closed);
    void close(RingQueue<std::pair<int64_t, int64_t>>* closed);
  };

  bool launchStatName(uint32_t api_name_id);
  void settleWithoutCall(Work& work) const;
  void stopAwaiting(uint64_t now_ns, bool all);
  HtaKernelClass kernelClass(uint32_t name_id);
  void decide(Work& work, int64_t cut_start_us) const;
  void release();
  void fold(const Work& work);
  void overlapClosed(bool final);

  AnalysisOptions options_;
  const StringTable* strings_ = nullptr;
  uint64_t call_max_age_ns_;
  FlatU64Map<CallTimes> calls_;                       // correlation id -> its call
  RingQueue<std::pair<uint64_t, uint64_t>> call_ages_;  // (entry ns, correlation id), for expiry
  std::vector<int8_t> api_name_launch_;   // api name id -> -1 unknown, 0 no, 1 a launch-stats name
  std::vector<int8_t> kernel_class_;      // kernel name id -> -1 unknown, else HtaKernelClass

  // Steps (STEP_BEGIN markers), HTA's ProfilerStep events.
  uint32_t steps_ = 0;
  bool any_step_ = false;
  uint64_t first_step_ = 0;
  bool distinct_steps_ = false;  // a second, different step number was seen
  int64_t last_step_start_us_ = 0;

  RingQueue<Work> held_;  // arrival order; the head is folded once decided
  uint64_t held_popped_ = 0;  // how many have left held_: held_[seq - held_popped_] is number seq
  // Work that started before any call with its id (the CPU and GPU clocks of a trace can disagree
  // by a little, and HTA joins regardless of time): correlation id -> the numbers in held_ of the
  // first and last records awaiting it (chained by Work::next_awaiting: HTA joins every record
  // of an id), and the first's (start, number) in arrival order, to stop waiting after
  // kAwaitCallNs.
  struct AwaitingChain {
    uint64_t first = 0, last = 0;
  };
  FlatU64Map<AwaitingChain> awaiting_;
  RingQueue<std::pair<uint64_t, uint64_t>> awaiting_order_;
  uint64_t dropped_ = 0;
  uint64_t kept_ = 0;

  // Running totals over the kept work, in arrival (start) order.
  bool any_kept_ = false;
  int64_t first_start_us_ = 0, last_end_us_ = 0, last_start_us_ = 0;
  Union all_, compute_, comm_;
  RingQueue<std::pair<int64_t, int64_t>> comm_closed_, compute_closed_;
  int64_t overlap_us_ = 0;
  std::map<int64_t, StreamGaps> streams_;
  uint64_t launches_ = 0, short_ = 0, runtime_outliers_ = 0, delay_outliers_ = 0;
  int64_t delay_total_us_ = 0;
};

}  // namespace gapwatch::analysis
