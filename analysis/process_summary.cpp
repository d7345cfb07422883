// analysis/process_summary.cpp: see process_summary.h.
#include "analysis/process_summary.h"

#include "analysis/diagnosis.h"

#include <utility>

namespace gapwatch::analysis {

ProcessSummary summarizeProcess(const ProcessAnalysis& process) {
  ProcessSummary s;
  for (const DeviceAnalysis& d : process.devices) {
    s.window_ns += d.window_end_ns - d.window_start_ns;
    s.idle_ns += d.idle_ns;
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) s.idle_by_cause_ns[c] += d.idle_by_cause_ns[c];
  }
  s.idle_fraction = s.window_ns ? static_cast<double>(s.idle_ns) / static_cast<double>(s.window_ns) : 0.0;
  s.steps = process.steps.steps;
  s.step_median_ns = process.steps.median_ns;
  for (const SyncTypeStats& t : process.sync_points) s.sync_points += t.count;
  s.syncs_per_step = s.steps ? static_cast<double>(s.sync_points) / static_cast<double>(s.steps) : 0.0;
  s.launches = process.launches.launches;
  s.nccl_comm_ns = process.nccl.comm_ns;
  s.drops = process.events_dropped + process.cupti_records_dropped + process.cupti_records_incomplete;
  return s;
}

std::optional<TopFinding> topFindingOf(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.idle_ns == 0) continue;  // as verdict() reads them
    TopFinding top;
    top.cause = causeOfFinding(f.id);
    top.id = f.id;
    top.title = f.title;
    top.idle_ns = f.idle_ns;
    top.idle_share = f.idle_share;
    top.python_site = f.python_site;
    return top;
  }
  return std::nullopt;
}

std::optional<TopFinding> topFinding(const ProcessAnalysis& process, const AnalysisOptions& options) {
  // diagnose() replaces the findings of what it is given: a copy keeps the caller's (a live
  // snapshot, or a report's process whose findings carry cross-rank evidence) untouched.
  ProcessAnalysis diagnosed = process;
  diagnose(diagnosed, options);
  return topFindingOf(diagnosed.findings);
}

}  // namespace gapwatch::analysis
