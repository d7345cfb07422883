// analysis/steady_state.h: a device's window as its first pass and its steady state.
//
// The engine marks where a first pass ends (DeviceAnalysis::first_pass: the counters as they
// stood at the end of the last gap with one-time evidence that settles the run; the rule is in
// docs/analysis.md, "First pass and steady state"). The steady state is the rest of the window:
// the whole window's counters less the first pass's. One-time costs (lazy module loading, a
// library's set-up in an op's first call, a first compile) are the first pass's finding and
// never feed a steady-state one; a window without a first pass is all steady state.
// Internal to analysis/ (the diagnosis and its findings).
#pragma once

#include "analysis/analysis_result.h"

#include <array>
#include <cstdint>
#include <vector>

namespace gapwatch::analysis {

// The device's steady state: its counters after the first pass (window from where it ends; the
// listed gaps that begin there or later). The device itself when it has no first pass.
DeviceAnalysis steadyStateOf(const DeviceAnalysis& device);

bool hasFirstPass(const ProcessAnalysis& process);

// The process with each device's steady state in place of its whole window.
ProcessAnalysis steadyStateOf(const ProcessAnalysis& process);

// The first passes of a process's devices, summed.
struct FirstPassTotals {
  uint64_t window_ns = 0, idle_ns = 0, busy_ns = 0;
  uint64_t one_time_ns = 0;                       // idle with one-time evidence
  uint64_t longest_ns = 0;                        // the longest device's first pass
  std::array<uint64_t, kIdleCauseCount> idle_by_cause_ns{};
  std::array<uint64_t, kIdleCauseCount> warmup_by_cause_ns{};
  uint64_t steady_window_ns = 0, steady_idle_ns = 0;  // the rest of those devices' windows
  std::vector<IdleGap> gaps;                      // the listed gaps inside a first pass, longest first
};
FirstPassTotals firstPassTotals(const ProcessAnalysis& process);

}  // namespace gapwatch::analysis
