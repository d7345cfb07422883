// analysis/process_summary.cpp: see process_summary.h.
#include "analysis/process_summary.h"

namespace gapwatch::analysis {

ProcessSummary summarizeProcess(const ProcessAnalysis& process) {
  ProcessSummary s;
  for (const DeviceAnalysis& d : process.devices) {
    s.window_ns += d.window_end_ns - d.window_start_ns;
    s.idle_ns += d.idle_ns;
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) s.idle_by_cause_ns[c] += d.idle_by_cause_ns[c];
  }
  s.idle_fraction = s.window_ns ? static_cast<double>(s.idle_ns) / static_cast<double>(s.window_ns) : 0.0;
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
    // Ties go to the cause listed first (idleCauseName order), so the answer is stable.
    if (s.idle_by_cause_ns[c] > s.top_cause_ns) {
      s.top_cause_ns = s.idle_by_cause_ns[c];
      s.top_cause = static_cast<IdleCause>(c);
    }
  }
  s.steps = process.steps.steps;
  s.step_median_ns = process.steps.median_ns;
  for (const SyncTypeStats& t : process.sync_points) s.sync_points += t.count;
  s.syncs_per_step = s.steps ? static_cast<double>(s.sync_points) / static_cast<double>(s.steps) : 0.0;
  s.launches = process.launches.launches;
  s.nccl_comm_ns = process.nccl.comm_ns;
  s.drops = process.events_dropped + process.cupti_records_dropped + process.cupti_records_incomplete;
  return s;
}

}  // namespace gapwatch::analysis
