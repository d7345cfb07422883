// analysis/process_summary.h: the few numbers that describe one process in a line: its idle
// fraction, its top finding, its step time and sync points per step.
//
// One definition for every place that shows a process in a line (the cross-rank table of the
// report, `gapwatch watch`, the collector's status and metrics), so that a live view and the
// final report cannot disagree about what "idle %" or "top finding" means. The top finding is the
// one the report's verdict names: the first of the diagnosis (diagnosis.h diagnose()), not the
// idle cause with the most time, which can differ (after-sync time is taken from host_cpu and
// launch_overhead; stalls from host_cpu). Works on a finished ProcessAnalysis and on a live
// snapshot alike (AnalysisPipeline::snapshot()).
#pragma once

#include "analysis/analysis_result.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::analysis {

struct ProcessSummary {
  uint64_t window_ns = 0;  // sum over devices of their windows
  uint64_t idle_ns = 0;    // sum over devices of their idle time
  double idle_fraction = 0;
  std::array<uint64_t, kIdleCauseCount> idle_by_cause_ns{};  // summed over devices
  uint64_t steps = 0;
  uint64_t step_median_ns = 0;  // 0 when no complete step is known
  uint64_t sync_points = 0;     // every type
  double syncs_per_step = 0;    // 0 without steps
  uint64_t launches = 0;
  uint64_t nccl_comm_ns = 0;
  uint64_t drops = 0;  // events and CUPTI records lost, and records handed back unfinished
};

ProcessSummary summarizeProcess(const ProcessAnalysis& process);

// The finding the report's verdict names for a process.
struct TopFinding {
  std::string id;     // Finding::id: any finding the diagnosis makes
  std::string title;  // reads after "76% of it"
  std::string cause;  // causeOfFinding(id): the idle cause it stands for, "" when none
  uint64_t idle_ns = 0;    // the idle time it explains
  double idle_share = 0;   // idle_ns / the process's idle time
  std::string python_site;  // Finding::python_site: the user's line it points at, "" when none
};

// The finding a verdict names among `findings` (diagnose()'s, in rank order): the first that
// explains any idle time; none when there is none.
std::optional<TopFinding> topFindingOf(const std::vector<Finding>& findings);

// topFindingOf(the findings of diagnose(process, options)), run on a copy so that a live snapshot
// not yet diagnosed can be asked as often as a view redraws; none when no finding passes its
// threshold or there is no device timeline. A process already diagnosed: topFindingOf(findings).
std::optional<TopFinding> topFinding(const ProcessAnalysis& process, const AnalysisOptions& options = {});

}  // namespace gapwatch::analysis
