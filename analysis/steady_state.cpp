// analysis/steady_state.cpp: see steady_state.h.
#include "analysis/steady_state.h"

#include <algorithm>
#include <cstddef>

namespace gapwatch::analysis {
namespace {

uint64_t less(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

template <std::size_t N>
void subtract(std::array<uint64_t, N>& a, const std::array<uint64_t, N>& b) {
  for (std::size_t i = 0; i < N; ++i) a[i] = less(a[i], b[i]);
}

}  // namespace

DeviceAnalysis steadyStateOf(const DeviceAnalysis& device) {
  if (!device.first_pass) return device;
  const DeviceAnalysis& f = *device.first_pass;
  DeviceAnalysis s = device;
  s.first_pass = nullptr;
  s.window_start_ns = f.window_end_ns;
  s.busy_ns = less(s.busy_ns, f.busy_ns);
  const uint64_t window = less(s.window_end_ns, s.window_start_ns);
  s.idle_ns = less(window, s.busy_ns);
  s.idle_fraction = window ? static_cast<double>(s.idle_ns) / static_cast<double>(window) : 0.0;
  s.kernels = less(s.kernels, f.kernels);
  s.memcpys = less(s.memcpys, f.memcpys);
  s.memsets = less(s.memsets, f.memsets);
  s.gaps.subtract(f.gaps);
  subtract(s.idle_by_cause_ns, f.idle_by_cause_ns);
  subtract(s.host_cpu_by_part_ns, f.host_cpu_by_part_ns);
  s.unknown_host_in_long_gaps_ns = less(s.unknown_host_in_long_gaps_ns, f.unknown_host_in_long_gaps_ns);
  s.long_host_gaps = less(s.long_host_gaps, f.long_host_gaps);
  s.after_sync_ns = less(s.after_sync_ns, f.after_sync_ns);
  s.after_sync_gaps = less(s.after_sync_gaps, f.after_sync_gaps);
  subtract(s.after_sync_by_cause_ns, f.after_sync_by_cause_ns);
  subtract(s.after_sync_host_by_part_ns, f.after_sync_host_by_part_ns);
  subtract(s.warmup_by_cause_ns, f.warmup_by_cause_ns);
  subtract(s.warmup_host_by_part_ns, f.warmup_host_by_part_ns);
  subtract(s.after_sync_warmup_by_cause_ns, f.after_sync_warmup_by_cause_ns);
  subtract(s.after_sync_warmup_host_by_part_ns, f.after_sync_warmup_host_by_part_ns);
  s.after_sync_hideable_ns = less(s.after_sync_hideable_ns, f.after_sync_hideable_ns);
  s.work_without_call = less(s.work_without_call, f.work_without_call);
  s.launch_overhead_long_gaps_ns = less(s.launch_overhead_long_gaps_ns, f.launch_overhead_long_gaps_ns);
  s.launch_overhead_short_gaps = less(s.launch_overhead_short_gaps, f.launch_overhead_short_gaps);
  s.one_time_ns = less(s.one_time_ns, f.one_time_ns);
  s.cuda_api_in_syncs_ns = less(s.cuda_api_in_syncs_ns, f.cuda_api_in_syncs_ns);
  s.first_runs = less(s.first_runs, f.first_runs);
  s.copy_wait_ns = less(s.copy_wait_ns, f.copy_wait_ns);
  s.copy_waits = less(s.copy_waits, f.copy_waits);
  std::erase_if(s.longest_gaps, [&](const IdleGap& g) { return g.start_ns < f.window_end_ns; });
  return s;
}

bool hasFirstPass(const ProcessAnalysis& process) {
  return std::any_of(process.devices.begin(), process.devices.end(),
                     [](const DeviceAnalysis& d) { return d.first_pass != nullptr; });
}

ProcessAnalysis steadyStateOf(const ProcessAnalysis& process) {
  ProcessAnalysis s = process;
  for (DeviceAnalysis& d : s.devices) d = steadyStateOf(d);
  return s;
}

FirstPassTotals firstPassTotals(const ProcessAnalysis& process) {
  FirstPassTotals t;
  for (const DeviceAnalysis& d : process.devices) {
    if (!d.first_pass) continue;
    const DeviceAnalysis& f = *d.first_pass;
    const uint64_t window = less(f.window_end_ns, f.window_start_ns);
    t.window_ns += window;
    t.longest_ns = std::max(t.longest_ns, window);
    t.idle_ns += f.idle_ns;
    t.busy_ns += f.busy_ns;
    t.one_time_ns += f.one_time_ns;
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
      t.idle_by_cause_ns[c] += f.idle_by_cause_ns[c];
      t.warmup_by_cause_ns[c] += std::min(f.warmup_by_cause_ns[c], f.idle_by_cause_ns[c]);
    }
    t.steady_window_ns += less(d.window_end_ns, f.window_end_ns);
    t.steady_idle_ns += less(d.idle_ns, f.idle_ns);
    for (const IdleGap& g : d.longest_gaps) {
      if (g.start_ns < f.window_end_ns) t.gaps.push_back(g);
    }
  }
  std::sort(t.gaps.begin(), t.gaps.end(),
            [](const IdleGap& a, const IdleGap& b) { return a.end_ns - a.start_ns > b.end_ns - b.start_ns; });
  return t;
}

}  // namespace gapwatch::analysis
