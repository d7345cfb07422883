// analysis/process_summary.h: the few numbers that describe one process in a line: its idle
// fraction, the cause with the most idle time, its step time and sync points per step.
//
// One definition for every place that shows a process in a line (the cross-rank table of the
// report, `gapwatch watch`, the collector's metrics), so that a live view and the final report
// cannot disagree about what "idle %" or "top cause" means. Works on a finished ProcessAnalysis
// and on a live snapshot alike (AnalysisPipeline::snapshot()).
#pragma once

#include "analysis/analysis_result.h"

#include <array>
#include <cstdint>
#include <optional>

namespace gapwatch::analysis {

struct ProcessSummary {
  uint64_t window_ns = 0;  // sum over devices of their windows
  uint64_t idle_ns = 0;    // sum over devices of their idle time
  double idle_fraction = 0;
  std::array<uint64_t, kIdleCauseCount> idle_by_cause_ns{};  // summed over devices
  std::optional<IdleCause> top_cause;  // the cause with the most idle time; none without idle
  uint64_t top_cause_ns = 0;
  uint64_t steps = 0;
  uint64_t step_median_ns = 0;  // 0 when no complete step is known
  uint64_t sync_points = 0;     // every type
  double syncs_per_step = 0;    // 0 without steps
  uint64_t launches = 0;
  uint64_t nccl_comm_ns = 0;
  uint64_t drops = 0;  // events and CUPTI records lost, and records handed back unfinished
};

ProcessSummary summarizeProcess(const ProcessAnalysis& process);

}  // namespace gapwatch::analysis
