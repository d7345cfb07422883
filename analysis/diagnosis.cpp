// analysis/diagnosis.cpp: see diagnosis.h; the thresholds and definitions are explained
// in docs/analysis.md. Each finding's evidence and fix are built in findings.cpp.
#include "analysis/diagnosis.h"

#include "analysis/cross_rank.h"
#include "analysis/diagnosis_numbers.h"
#include "analysis/findings.h"
#include "analysis/gap_histogram.h"
#include "analysis/kernel_class.h"
#include "analysis/kernel_stats.h"
#include "analysis/quantity_text.h"
#include "analysis/steady_state.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <numbers>
#include <utility>

namespace gapwatch::analysis {
namespace {

using namespace diagnosis_numbers;

uint64_t saturatingScale(uint64_t ns, double factor) {
  const double scaled = static_cast<double>(ns) * factor;
  if (scaled >= static_cast<double>(std::numeric_limits<uint64_t>::max())) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(scaled);
}

uint64_t minusClamped(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// The idle a host could have hidden behind a sync's wait, when the engine did not measure it per
// gap: each gap's length capped at the typical blocked time of the sync type that drained most
// idle, over the histogram's buckets (a bucket's mean standing for its gaps), scaled to the share
// of idle that followed a sync.
uint64_t estimateHideable(const DeviceAnalysis& device, const ProcessAnalysis& process) {
  const SyncTypeStats* drainer = nullptr;
  for (const SyncTypeStats& s : process.sync_points) {
    if (s.idle_after_ns > 0 && (!drainer || s.idle_after_ns > drainer->idle_after_ns)) drainer = &s;
  }
  if (!drainer || device.idle_ns == 0) return 0;
  double hideable = 0;
  for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
    const GapHistogram::Bucket& bucket = device.gaps.bucket(b);
    if (bucket.count == 0) continue;
    const double mean = static_cast<double>(bucket.total_ns) / static_cast<double>(bucket.count);
    hideable += static_cast<double>(bucket.count) * std::min(mean, static_cast<double>(drainer->p50_ns));
  }
  hideable *= ratio(static_cast<double>(device.after_sync_ns), static_cast<double>(device.idle_ns));
  return std::min(device.after_sync_ns, static_cast<uint64_t>(hideable));
}

// Whether a stall (a gap of `limit` or longer) lies in the process's own first step: only where
// the recording shows the process start (a recording, not a trace, which begins with the
// profiler's window) and the first step is the job's first (a marker numbered above 1 says the
// window skipped the job's first steps). A first step's ordinary gaps are what they are.
bool inProcessFirstStep(const IdleGap& gap, const ProcessAnalysis& process, uint64_t limit) {
  const StepStats& s = process.steps;
  if (process.source.kineto_trace || s.first_step_end_ns == 0 || s.first_step_number > 1) return false;
  return gapLength(gap) >= limit && gap.start_ns < s.first_step_end_ns;
}

// A device's idle with warm-up evidence, by cause and host part, in all its gaps and in its
// after-sync gaps: the engine's per-gap evidence (DeviceAnalysis::warmup_by_cause_ns), plus the
// rest of each listed gap in the process's own first step.
struct Warmup {
  std::array<uint64_t, kIdleCauseCount> by_cause_ns{};
  std::array<uint64_t, kHostPartCount> host_by_part_ns{};
  std::array<uint64_t, kIdleCauseCount> after_sync_by_cause_ns{};
  std::array<uint64_t, kHostPartCount> after_sync_host_by_part_ns{};
};

// What a listed gap adds to the engine's per-gap warm-up evidence (IdleGap::warmup_by_cause_ns):
// all of a stall in the process's own first step; else, of a stall in which code was loaded (a
// module load, a kernel's slow first launch: a compile), the host time no host range names, which
// went to producing that code (time a range names, data loading or ops, stays what it is).
struct GapWarmup {
  bool first_step = false, loads_code = false;
  std::array<uint64_t, kIdleCauseCount> extra_by_cause_ns{};
  std::array<uint64_t, kHostPartCount> extra_host_by_part_ns{};
};

GapWarmup gapWarmupOf(const IdleGap& gap, const ProcessAnalysis& process, uint64_t limit) {
  GapWarmup g;
  g.first_step = inProcessFirstStep(gap, process, limit);
  g.loads_code = (gap.warmup_api_name_id != 0 || gap.warmup_first_launch) && gapLength(gap) >= limit;
  if (g.first_step) {
    for (std::size_t c : {kHostCpu, kCudaApi, kLaunch}) {
      g.extra_by_cause_ns[c] = minusClamped(gap.by_cause_ns[c], gap.warmup_by_cause_ns[c]);
    }
    for (std::size_t p = 0; p < kHostPartCount; ++p) {
      g.extra_host_by_part_ns[p] = minusClamped(gap.host_by_part_ns[p], gap.warmup_host_by_part_ns[p]);
    }
  } else if (g.loads_code) {
    constexpr std::size_t kUnknownPart = static_cast<std::size_t>(HostPart::kUnknown);
    const uint64_t more = minusClamped(gap.host_by_part_ns[kUnknownPart], gap.warmup_host_by_part_ns[kUnknownPart]);
    g.extra_by_cause_ns[kHostCpu] = more;
    g.extra_host_by_part_ns[kUnknownPart] = more;
  }
  return g;
}

Warmup warmupOf(const DeviceAnalysis& device, const ProcessAnalysis& process, uint64_t limit) {
  Warmup w;
  for (std::size_t c : {kHostCpu, kCudaApi, kLaunch}) {
    w.by_cause_ns[c] = device.warmup_by_cause_ns[c];
    w.after_sync_by_cause_ns[c] = device.after_sync_warmup_by_cause_ns[c];
  }
  w.host_by_part_ns = device.warmup_host_by_part_ns;
  w.after_sync_host_by_part_ns = device.after_sync_warmup_host_by_part_ns;
  for (const IdleGap& gap : device.longest_gaps) {
    const GapWarmup g = gapWarmupOf(gap, process, limit);
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
      w.by_cause_ns[c] += g.extra_by_cause_ns[c];
      if (gap.after_sync) w.after_sync_by_cause_ns[c] += g.extra_by_cause_ns[c];
    }
    for (std::size_t p = 0; p < kHostPartCount; ++p) {
      w.host_by_part_ns[p] += g.extra_host_by_part_ns[p];
      if (gap.after_sync) w.after_sync_host_by_part_ns[p] += g.extra_host_by_part_ns[p];
    }
  }
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) w.by_cause_ns[c] = std::min(w.by_cause_ns[c], device.idle_by_cause_ns[c]);
  for (std::size_t p = 0; p < kHostPartCount; ++p) {
    w.host_by_part_ns[p] = std::min(w.host_by_part_ns[p], device.host_cpu_by_part_ns[p]);
  }
  return w;
}

// The host_cpu time left after warm-up and sync points (`rest`), by what the host was doing: each
// part loses its own warm-up time, and its share of `taken` (the sync finding's host time) in
// proportion to its time in after-sync gaps (less their warm-up). Data loading is never taken:
// time in the loader after a sync is the input pipeline's (its workers, not the sync, set how
// long the host waits for a batch). What rounding leaves goes to unknown, so the parts sum to
// `rest` exactly.
void explainHostParts(const DeviceAnalysis& device, const Warmup& warm, uint64_t rest, uint64_t taken, bool measured,
                      IdleExplanation& out) {
  constexpr std::size_t kUnknown = static_cast<std::size_t>(HostPart::kUnknown);
  constexpr std::size_t kInput = static_cast<std::size_t>(HostPart::kInputPipeline);
  std::array<double, kHostPartCount> after_sync{};
  // Not measured per gap (a recording without the after-sync detail, whose after_sync_by_cause_ns
  // are all 0): each part's share of idle, as explainDevice estimates each cause's.
  for (std::size_t p = 0; p < kHostPartCount; ++p) {
    after_sync[p] = measured ? static_cast<double>(minusClamped(device.after_sync_host_by_part_ns[p],
                                                                warm.after_sync_host_by_part_ns[p]))
                             : static_cast<double>(device.after_sync_ns) *
                                   ratio(static_cast<double>(device.host_cpu_by_part_ns[p]),
                                         static_cast<double>(device.idle_ns));
  }
  after_sync[kInput] = 0;
  double after_sync_total = 0;
  for (double v : after_sync) after_sync_total += v;
  uint64_t given = 0;
  for (std::size_t p = 0; p < kHostPartCount; ++p) {
    if (p == kUnknown) continue;
    const double own = static_cast<double>(minusClamped(device.host_cpu_by_part_ns[p], warm.host_by_part_ns[p]));
    const double part_taken = static_cast<double>(taken) * ratio(after_sync[p], after_sync_total);
    const uint64_t left = static_cast<uint64_t>(std::llround(std::max(0.0, own - part_taken)));
    const uint64_t kept = std::min(left, rest - given);
    out.host_part_ns[p] += kept;
    given += kept;
  }
  out.host_part_ns[kUnknown] += rest - given;
}

void explainDevice(const DeviceAnalysis& device, const ProcessAnalysis& process, const DiagnosisThresholds& t,
                   bool storm, IdleExplanation& out) {
  const uint64_t window = device.window_end_ns - device.window_start_ns;
  out.window_ns += window;
  out.idle_ns += device.idle_ns;
  out.after_sync_ns += device.after_sync_ns;
  const auto& cause = device.idle_by_cause_ns;

  // Stalls: gaps far longer than this device's typical long gap. A stall is a shape, not a cause:
  // its idle goes to the causes its evidence shows, like any gap's; stalls are listed, and those
  // with warm-up evidence are the warm-up finding's examples.
  const std::size_t median = medianBucket(device.gaps, kFirstLongBucket);
  uint64_t limit = std::numeric_limits<uint64_t>::max();
  if (median < GapHistogram::kBucketCount) {
    const uint64_t typical = GapHistogram::upperNs(median);
    out.typical_long_gap_ns = std::max(out.typical_long_gap_ns, typical);
    limit = std::max(t.stall_min_ns, saturatingScale(typical, t.stall_factor));
    out.stall_limit_ns = std::max(out.stall_limit_ns, limit);
  }
  for (const IdleGap& gap : device.longest_gaps) {
    const GapWarmup g = gapWarmupOf(gap, process, limit);
    uint64_t warm = 0;
    for (std::size_t c : {kHostCpu, kCudaApi, kLaunch}) {
      warm += std::min(gap.warmup_by_cause_ns[c], gap.by_cause_ns[c]) + g.extra_by_cause_ns[c];
    }
    if ((warm > 0 || g.first_step || g.loads_code) && gapLength(gap) >= kLongGapNs) {
      out.warmup_gaps.push_back(gap);
      IdleGap& listed = out.warmup_gaps.back();
      listed.warmup_ns = warm;
      if (g.first_step) {
        listed.warmup_first_step = true;
        listed.warmup_evidence = "the process's first step";
      }
    }
    // A gap the thread spent mostly inside one launch (or copy, event) call is a slow call, a
    // one-time stall, from stall_min_ns on even when the run's typical long gap is as long.
    const bool in_call = gapLength(gap) >= t.stall_min_ns && gap.by_cause_ns[kLaunch] * 2 > gapLength(gap);
    if (gapLength(gap) < limit && !in_call) continue;
    out.stalls.push_back(gap);
    if (in_call && (warm > 0 || g.first_step)) out.one_time_stalls.push_back(gap);
  }
  const Warmup warmup = warmupOf(device, process, limit);

  std::array<double, kIdleCauseCount> after_sync{};
  const bool measured = device.after_sync_gaps > 0 || device.after_sync_ns == 0;
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
    after_sync[c] = measured ? static_cast<double>(minusClamped(device.after_sync_by_cause_ns[c],
                                                                warmup.after_sync_by_cause_ns[c]))
                             : static_cast<double>(device.after_sync_ns) *
                                   ratio(static_cast<double>(cause[c]), static_cast<double>(device.idle_ns));
  }
  if (!measured) out.after_sync_estimated = true;
  // Data loading after a sync is the input pipeline's, not the sync's (explainHostParts).
  const double input_after_sync =
      measured ? static_cast<double>(minusClamped(device.after_sync_host_by_part_ns[kInputPart],
                                                  warmup.after_sync_host_by_part_ns[kInputPart]))
               : static_cast<double>(device.after_sync_ns) *
                     ratio(static_cast<double>(device.host_cpu_by_part_ns[kInputPart]), static_cast<double>(device.idle_ns));
  after_sync[kHostCpu] = std::max(0.0, after_sync[kHostCpu] - input_after_sync);

  // Sync points: hideable idle, taken from the host's own time in after-sync gaps: the Python
  // and launches that ran after the sync returned, which the host could have queued before it
  // waited. Time the host spent inside a CUDA call in such a gap is not the sync's: a blocking
  // copy (sync_copy), an NCCL call, or a cudaMalloc / cudaFree (cuda_api) has its own finding,
  // whose fix is that call's. (Counting cuda_api here once made "take syncs out of the step" the
  // top finding of a loop whose idle was 99 % cudaMalloc / cudaFree.)
  const uint64_t hideable = measured ? device.after_sync_hideable_ns : estimateHideable(device, process);
  out.after_sync_hideable_ns += hideable;
  const double pool = after_sync[kHostCpu] + after_sync[kLaunch];
  // In a sync storm (data-dependent shapes and reads: .item(), nonzero, boolean masks) each sync
  // drains the queue, and all the host's work after it is what the syncs expose: taken whole.
  const double sync_total = storm ? pool : std::min(static_cast<double>(hideable), pool);
  // Launch time with warm-up evidence (a kernel's slow first launch: lazy loading) is a one-time
  // cost, not per-kernel overhead. Not every slow launch: on a loaded host the scheduler preempts
  // a thread inside its launch calls for milliseconds at a time, many times a second, and that is
  // overhead the launches pay.
  const uint64_t long_launch = std::min(cause[kLaunch], warmup.by_cause_ns[kLaunch]);
  std::array<uint64_t, kIdleCauseCount> taken{};
  for (std::size_t c : {kHostCpu, kLaunch}) {
    taken[c] = static_cast<uint64_t>(std::llround(sync_total * ratio(after_sync[c], pool)));
    taken[c] = std::min(taken[c], minusClamped(cause[c], warmup.by_cause_ns[c]));
  }
  // One cause, one finding: in a storm the time inside the sync calls, and in its reads of values
  // when the blocking copies are mostly those, is the storm's too (a post-processing loop of
  // .item() and nonzero once got three findings: the storm, blocking reads, and CUDA API calls).
  if (storm) {
    taken[kCudaApi] = std::min(device.cuda_api_in_syncs_ns, minusClamped(cause[kCudaApi], warmup.by_cause_ns[kCudaApi]));
    out.storm_in_sync_calls_ns += taken[kCudaApi];
    if (out.storm_takes_reads) {
      taken[kSyncCopy] = cause[kSyncCopy];
      out.storm_in_reads_ns += taken[kSyncCopy];
    }
  }
  // Host time in the loader can never be taken (it left the pool): the host parts below must
  // still hold what `taken` takes from them.
  taken[kHostCpu] = std::min(taken[kHostCpu], minusClamped(minusClamped(cause[kHostCpu], warmup.by_cause_ns[kHostCpu]),
                                                           minusClamped(device.host_cpu_by_part_ns[kInputPart],
                                                                        warmup.host_by_part_ns[kInputPart])));

  out.warmup_ns += warmup.by_cause_ns[kHostCpu] + warmup.by_cause_ns[kCudaApi] + long_launch;
  out.long_call_ns += long_launch;
  out.launch_short_gaps += device.launch_overhead_short_gaps;
  out.sync_points_ns += taken[kHostCpu] + taken[kLaunch] + taken[kCudaApi] + taken[kSyncCopy];
  explainHostParts(device, warmup, minusClamped(cause[kHostCpu], warmup.by_cause_ns[kHostCpu] + taken[kHostCpu]),
                   taken[kHostCpu], measured, out);
  // Launch overhead is the short gaps' (many small launches); launch-call time in longer gaps
  // that is not warm-up is a slow call, its own finding: it can never exceed the short gaps.
  const uint64_t launch_left = minusClamped(cause[kLaunch], long_launch + taken[kLaunch]);
  const uint64_t launch_short = minusClamped(cause[kLaunch], device.launch_overhead_long_gaps_ns);
  out.launch_overhead_ns += std::min(launch_left, launch_short);
  out.slow_launch_ns += launch_left - std::min(launch_left, launch_short);
  for (std::size_t b = 0; b < kFirstLongBucket; ++b) out.short_gaps_ns += device.gaps.bucket(b).total_ns;
  out.cuda_api_ns += minusClamped(cause[kCudaApi], warmup.by_cause_ns[kCudaApi] + taken[kCudaApi]);
  out.pageable_copies_ns += cause[kSyncCopy] - taken[kSyncCopy];
  out.nccl_ns += cause[kNcclHost];
  out.dependency_ns += cause[kDependency];
}

}  // namespace


uint64_t IdleExplanation::explainedNs(const std::string& id) const {
  if (id == kFindingInputPipeline) return host_part_ns[static_cast<std::size_t>(HostPart::kInputPipeline)];
  if (id == kFindingFrameworkOverhead) return host_part_ns[static_cast<std::size_t>(HostPart::kFramework)];
  if (id == kFindingHostOther) return host_part_ns[static_cast<std::size_t>(HostPart::kOther)];
  if (id == kFindingHostUnknown) return host_part_ns[static_cast<std::size_t>(HostPart::kUnknown)];
  if (id == kFindingPageableCopies) return pageable_copies_ns;
  if (id == kFindingLaunchOverhead) return launch_overhead_ns;
  if (id == kFindingSyncPoints) return sync_points_ns;
  if (id == kFindingNccl) return nccl_ns;
  if (id == kFindingWarmup) return warmup_ns;
  if (id == kFindingCudaApi) return cuda_api_ns;
  if (id == kFindingDependency) return dependency_ns;
  if (id == kFindingSlowLaunchCalls) return slow_launch_ns;
  return 0;
}

IdleExplanation explainIdle(const ProcessAnalysis& process, const DiagnosisThresholds& thresholds) {
  IdleExplanation x;
  if (!process.device_timeline) return x;
  bool any = false;
  uint64_t window = 0;
  for (const DeviceAnalysis& device : process.devices) {
    if (device.window_end_ns > device.window_start_ns) window += device.window_end_ns - device.window_start_ns;
  }
  for (const SyncTypeStats& s : process.sync_points) {
    if (s.kind != SyncPointKind::kAllocFree) x.syncs += s.count;
  }
  x.sync_storm = window > 0 && x.syncs >= thresholds.sync_storm_min_syncs &&
                 static_cast<double>(x.syncs) >= thresholds.sync_storm_min_per_second * static_cast<double>(window) / 1e9;
  if (x.sync_storm) {
    // The blocking copies are mostly reads of values (as pageableCopies() titles them).
    uint64_t blocking_copies = 0, small_reads = 0;
    for (const SyncTypeStats& s : process.sync_points) {
      if (s.kind != SyncPointKind::kPageableAsyncCopy && s.kind != SyncPointKind::kSyncCopy &&
          s.kind != SyncPointKind::kMemset) {
        continue;
      }
      blocking_copies += s.count;
      small_reads += s.small_reads;
    }
    x.storm_takes_reads = blocking_copies > 0 && small_reads * 2 >= blocking_copies;
  }
  for (const DeviceAnalysis& device : process.devices) {
    if (device.window_end_ns <= device.window_start_ns) continue;
    x.leading_ns = any ? std::min(x.leading_ns, device.leading_ns) : device.leading_ns;
    any = true;
    explainDevice(device, process, thresholds, x.sync_storm, x);
  }
  const auto longest_first = [](const IdleGap& a, const IdleGap& b) { return gapLength(a) > gapLength(b); };
  std::sort(x.stalls.begin(), x.stalls.end(), longest_first);
  std::sort(x.one_time_stalls.begin(), x.one_time_stalls.end(), longest_first);
  std::sort(x.warmup_gaps.begin(), x.warmup_gaps.end(), longest_first);
  return x;
}

void diagnose(ProcessAnalysis& process, const AnalysisOptions& options, const DiagnosisThresholds& t) {
  process.findings.clear();
  process.notes.clear();
  process.bottleneck.reset();
  // One-time costs are the first pass's: every other finding is the steady state's alone.
  const bool first_pass = hasFirstPass(process);
  const ProcessAnalysis steady_copy = first_pass ? steadyStateOf(process) : ProcessAnalysis{};
  const ProcessAnalysis& steady = first_pass ? steady_copy : process;
  IdleExplanation x = explainIdle(steady, t);
  if (x.window_ns == 0 && !first_pass) return;  // nothing measured on the device: no verdict without numbers
  uint64_t all_idle = 0;
  for (const DeviceAnalysis& d : process.devices) {
    if (d.window_end_ns > d.window_start_ns) all_idle += d.idle_ns;
  }
  x.steady_state = first_pass;
  x.all_idle_ns = all_idle;
  const uint64_t steady_idle = x.idle_ns;
  x.idle_ns = all_idle;  // shares are of all idle: the first pass's and the steady state's add up
  const auto passes = [&](uint64_t idle_ns) {
    return idle_ns > 0 && static_cast<double>(idle_ns) >= t.min_window_share * static_cast<double>(x.window_ns);
  };

  std::vector<Finding> found;
  // Waiting for data is its own cause, with its own fix.
  constexpr std::size_t kInput = static_cast<std::size_t>(HostPart::kInputPipeline);
  if (passes(x.host_part_ns[kInput])) found.push_back(findings::hostPart(steady, x, options, HostPart::kInputPipeline));
  // The host running the model slower than the GPU is one cause, whatever it does between kernels
  // (ops, Python between them, launches): one finding, with its split and one fix. Launch overhead
  // counts only from many short gaps (a slow call is not overhead).
  const uint64_t launch = x.launch_short_gaps >= t.launch_min_gaps ? x.launch_overhead_ns : 0;
  const uint64_t host_bound = x.host_part_ns[static_cast<std::size_t>(HostPart::kFramework)] +
                              x.host_part_ns[static_cast<std::size_t>(HostPart::kOther)] +
                              x.host_part_ns[static_cast<std::size_t>(HostPart::kUnknown)] + launch;
  if (passes(host_bound)) found.push_back(findings::hostBound(steady, x, options, t, launch));
  if (passes(x.pageable_copies_ns)) found.push_back(findings::pageableCopies(steady, x));
  if (passes(x.slow_launch_ns)) found.push_back(findings::slowLaunchCalls(steady, x));
  if (passes(x.sync_points_ns)) found.push_back(findings::syncPoints(steady, x));
  const NcclStats& nccl = process.nccl;
  const bool exposed = nccl.comm_ns > 0 && nccl.comm_share_of_busy >= t.nccl_min_comm_share &&
                       nccl.compute_comm_overlap <= t.nccl_max_overlap;
  // A finding explains idle time. Communication that does not overlap compute, or a long start-up,
  // explains none (NCCL kernels are busy time; start-up is before the window), so they are notes:
  // numbers and a fix printed beside the NCCL and start-up lines, never ranked among the causes.
  if (passes(x.nccl_ns)) {
    found.push_back(findings::nccl(steady, x, false));
  } else if (exposed) {
    process.notes.push_back(findings::nccl(steady, x, true));
  }
  const bool long_start = x.leading_ns >= t.leading_min_ns &&
                          static_cast<double>(x.leading_ns) >= t.leading_share * static_cast<double>(x.leading_ns + x.window_ns);
  if (passes(x.warmup_ns)) {
    found.push_back(findings::warmup(x));
  } else if (long_start) {
    process.notes.push_back(findings::warmup(x));
  }
  if (passes(x.cuda_api_ns)) found.push_back(findings::cudaApi(steady, x));
  // The profiler measures host time with its own events: where they are dense, say what they cost.
  const RecordingSource& source = process.source;
  if (source.kineto_trace && source.trace_host_span_ns > 0 &&
      static_cast<double>((source.trace_python_events + source.trace_cpu_ops) * t.profiler_event_ns) >=
          t.profiler_cost_min_share * static_cast<double>(source.trace_host_span_ns)) {
    process.notes.push_back(findings::profilerCost(process, x, t));
  }
  if (passes(x.dependency_ns)) found.push_back(findings::dependency(steady, x));

  // Ranked by the idle each explains; ties keep the order above (section 1's table).
  std::stable_sort(found.begin(), found.end(), [](const Finding& a, const Finding& b) { return a.idle_ns > b.idle_ns; });
  // A steady state whose GPU is rarely idle is GPU-bound: that is the news, and what its busy time
  // goes to is where the gain is (the report shows it ahead of any small idle finding).
  const bool gpu_bound = x.window_ns > 0 && static_cast<double>(steady_idle) <
                                                 t.gpu_bound_max_idle * static_cast<double>(x.window_ns);
  if (gpu_bound && process.kernels.total_ns > 0) {
    IdleExplanation steady_x = x;
    steady_x.idle_ns = steady_idle;
    process.bottleneck = findings::gpuBound(steady, steady_x);
  }
  // The first pass after the steady state's findings: a job runs its steady state for as long as
  // it runs, its first pass once. Alone, it leads.
  if (first_pass) {
    const FirstPassTotals totals = firstPassTotals(process);
    if (totals.idle_ns > 0) found.push_back(findings::firstPass(process, totals, x));
  }
  process.findings = std::move(found);
}

double studentUpperTail(double t, uint32_t dof) {
  if (std::isnan(t) || dof == 0) return 1.0;
  if (std::isinf(t)) return t > 0 ? 0.0 : 1.0;
  // P(|T| < |t|) for integer degrees of freedom, in closed form (Abramowitz and Stegun 26.7.3
  // and 26.7.4) with theta = atan(|t| / sqrt(dof)): a finite series in cos(theta).
  const double theta = std::atan(std::fabs(t) / std::sqrt(static_cast<double>(dof)));
  const double c2 = std::cos(theta) * std::cos(theta);
  double within = 0;
  if (dof % 2 == 1) {
    double series = 0, term = std::cos(theta);  // cos, then (2/3) cos^3, (2*4)/(3*5) cos^5, ...
    for (uint32_t k = 3; k <= dof; k += 2) {
      series += term;
      term *= c2 * static_cast<double>(k - 1) / static_cast<double>(k);
    }
    within = (2.0 / std::numbers::pi) * (theta + std::sin(theta) * series);
  } else {
    double series = 0, term = 1;  // 1, then (1/2) cos^2, (1*3)/(2*4) cos^4, ...
    for (uint32_t k = 2; k <= dof; k += 2) {
      series += term;
      term *= c2 * static_cast<double>(k - 1) / static_cast<double>(k);
    }
    within = std::sin(theta) * series;
  }
  within = std::clamp(within, 0.0, 1.0);
  return t >= 0 ? (1.0 - within) / 2.0 : (1.0 + within) / 2.0;
}

const RankWait* stragglerCandidate(const std::vector<RankWait>& waits) {
  const RankWait* candidate = nullptr;
  for (const RankWait& w : waits) {
    if (!candidate || w.waited_for_ns > candidate->waited_for_ns) candidate = &w;
  }
  return candidate && candidate->waited_for_ns > 0 ? candidate : nullptr;
}

StragglerTest testStraggler(const RankWait& candidate, std::size_t ranks, uint64_t others_window_ns,
                            const DiagnosisThresholds& t) {
  StragglerTest test;
  test.rank = candidate.rank;
  test.collectives_last = candidate.collectives_last;
  test.collectives = candidate.collectives;
  test.expected_last = candidate.expected_last;
  test.lateness_collectives = candidate.lateness_collectives;
  test.batches = candidate.lateness_batches;
  test.lateness_mean_ns = candidate.lateness_mean_ns;
  test.lateness_se_ns = candidate.lateness_se_ns;
  test.level = t.straggler_test_level;
  test.lateness_median_ns = candidate.lateness_median_ns;
  test.lateness_mad_ns = candidate.lateness_mad_ns;
  test.others_window_fraction = ratio(static_cast<double>(candidate.waited_for_ns), static_cast<double>(others_window_ns));
  // H0: no rank is late on purpose, so each rank's mean lateness is 0. One-sided t-test of the
  // candidate's batch means (batches - 1 degrees of freedom). The candidate was picked as the most
  // waited-for of `ranks` ranks: Bonferroni multiplies its p-value by that many.
  if (test.batches >= 2) {
    if (test.lateness_se_ns > 0) {
      test.t = test.lateness_mean_ns / test.lateness_se_ns;
    } else {  // every batch the same: exactly as late each time, or not at all
      test.t = test.lateness_mean_ns > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    }
    test.p_value = std::min(1.0, static_cast<double>(ranks) * studentUpperTail(test.t, test.batches - 1));
  }
  test.late = test.batches >= 2 && test.p_value < test.level;
  test.enough_wait = test.others_window_fraction >= t.straggler_min_window_share;
  test.named = test.late && test.enough_wait;
  return test;
}

namespace {

std::string formatPValue(double p) {
  char text[32];
  std::snprintf(text, sizeof text, p < 0.001 ? "%.1e" : "%.3g", p);
  return text;
}

std::string formatTenths(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", x);
  return text;
}

std::string formatSignedNs(double ns) {
  const uint64_t magnitude = static_cast<uint64_t>(std::llround(std::fabs(ns)));
  return (ns < 0 && magnitude > 0 ? "-" : "") + formatDuration(magnitude);
}

// "in 66 of 127 collectives where a rank waited (63.5 by chance)"
std::string lastText(const StragglerTest& t) {
  return "in " + formatCount(t.collectives_last) + " of " + formatCount(t.collectives) +
         " collectives where a rank waited (" + formatTenths(t.expected_last) + " by chance)";
}

// "12.0 us on average, standard error 30.1 us over 20 batches of 600 collectives (t = 0.40,
// one-sided p = 0.69 with Bonferroni over 2 ranks, level 0.01); median 8.00 us, MAD 150 us"
std::string latenessText(const StragglerTest& t, std::size_t ranks) {
  std::string text = formatSignedNs(t.lateness_mean_ns) + " on average";
  if (t.batches < 2) {
    text += " over " + formatCount(t.lateness_collectives) + " collectives: too few to test (" +
            std::to_string(kStragglerMinCollectives) + " or more)";
  } else {
    text += ", standard error " + formatSignedNs(t.lateness_se_ns) + " over " + std::to_string(t.batches) +
            " batches of " + formatCount(t.lateness_collectives) + " collectives (t = " +
            (std::isinf(t.t) ? std::string("inf") : formatTenths(t.t)) + ", one-sided p = " + formatPValue(t.p_value) +
            " with Bonferroni over " + std::to_string(ranks) + " ranks, level " + formatPValue(t.level) + ")";
  }
  return text + "; median " + formatSignedNs(static_cast<double>(t.lateness_median_ns)) + ", MAD " +
         formatDuration(t.lateness_mad_ns);
}

}  // namespace

std::string unnamedStragglerText(const StragglerTest& t, std::size_t ranks) {
  // "No rank stands out" only where that is what the numbers say: beside a rank the others waited
  // for a real share of their windows, the line says why the test did not name it.
  std::string lead;
  if (t.batches < 2) {
    lead = "not tested: too few collectives to tell rank " + std::to_string(t.rank) + "'s lateness from chance";
  } else if (!t.late) {
    lead = "no rank stands out: rank " + std::to_string(t.rank) + "'s lateness is within the spread of the collectives";
  } else {
    lead = "rank " + std::to_string(t.rank) + " is late beyond chance, but the others waited for it too little to "
           "matter";
  }
  return lead + " (" + describeStragglerTest(t, ranks) + ")";
}

std::string describeStragglerTest(const StragglerTest& t, std::size_t ranks) {
  return "rank " + std::to_string(t.rank) + " arrived last " + lastText(t) + ", late by " + latenessText(t, ranks) +
         "; the others waited for it " + formatPercent(t.others_window_fraction) + " of their windows";
}

namespace {

void addStragglerNumbers(const StragglerTest& t, Finding& f) {
  f.numbers.emplace_back("collectives_last", static_cast<double>(t.collectives_last));
  f.numbers.emplace_back("collectives", static_cast<double>(t.collectives));
  f.numbers.emplace_back("expected_last", t.expected_last);
  f.numbers.emplace_back("lateness_collectives", static_cast<double>(t.lateness_collectives));
  f.numbers.emplace_back("lateness_mean_ns", t.lateness_mean_ns);
  f.numbers.emplace_back("lateness_se_ns", t.lateness_se_ns);
  f.numbers.emplace_back("lateness_batches", static_cast<double>(t.batches));
  f.numbers.emplace_back("t", t.t);
  f.numbers.emplace_back("p_value", t.p_value);
  f.numbers.emplace_back("lateness_median_ns", static_cast<double>(t.lateness_median_ns));
  f.numbers.emplace_back("lateness_mad_ns", static_cast<double>(t.lateness_mad_ns));
}

// One job's ranks: `job` is one of `report`'s comparisons.
// A rank that waits for a named straggler: its NCCL kernel time is largely that wait, not the cost of
// communicating, so its NCCL note or finding (and a bottleneck of NCCL time) says whom it waits for,
// and that fixing that rank is the fix: bucket_cap_mb or no_sync() would not shorten a wait.
void relabelWaitsForStraggler(ProcessAnalysis& p, const RankComparison& job, const RankWait& slowest) {
  uint64_t own_wait = 0;
  for (const RankWait& w : job.rank_waits) {
    if (p.rank && w.rank == *p.rank) own_wait = w.waited_ns;
  }
  uint64_t nccl_device = 0;
  for (const NcclTypeStats& s : p.nccl.by_type) nccl_device += s.device_ns;
  if (own_wait == 0 || nccl_device == 0) return;
  const std::string rank = std::to_string(slowest.rank);
  const std::string wait = formatDuration(own_wait) + " of this rank's " + formatDuration(nccl_device) +
                           " of NCCL kernel time (" +
                           formatPercent(std::min(1.0, ratio(static_cast<double>(own_wait), static_cast<double>(nccl_device)))) +
                           ") ran while rank " + rank + " had not yet joined the collective";
  const std::string fix = "Not communication cost: this rank's collectives wait for rank " + rank +
                          ", the straggler of the job (see the findings across ranks and its own report). Make rank " +
                          rank + " reach the collectives sooner; bucketing or no_sync() here would not shorten a wait.";
  const auto relabel = [&](Finding& f) {
    f.title = "waiting for rank " + rank + " in collectives (its NCCL kernels ran while rank " + rank + " was late)";
    f.evidence.emplace_back("waiting, not communicating", wait);
    f.numbers.emplace_back("waiting_for_rank_ns", static_cast<double>(own_wait));
    f.fix = fix;
  };
  for (Finding& f : p.findings) {
    if (f.id == kFindingNccl) relabel(f);
  }
  for (Finding& f : p.notes) {
    if (f.id == kFindingNccl) relabel(f);
  }
  if (p.bottleneck && p.bottleneck->title.find(kernelClassText(KernelClass::kCommunication)) != std::string::npos) {
    p.bottleneck->evidence.emplace_back("waiting, not communicating", wait);
    p.bottleneck->fix = fix;
    // Busy in NCCL kernels that mostly waited: the verdict (which says the bottleneck's title)
    // names the wait, not "the GPU is the bottleneck" (an 8-rank all_to_all's rank 0 once did).
    if (own_wait * 2 >= nccl_device) {
      p.bottleneck->title = "the GPU is busy, but mostly waiting for rank " + rank + ": " +
                            formatWholePercent(std::min(1.0, ratio(static_cast<double>(own_wait),
                                                                   static_cast<double>(nccl_device)))) +
                            " of its NCCL kernel time ran before rank " + rank + " joined the collective";
    }
  }
}

void diagnoseJobRanks(AnalysisReport& report, RankComparison& job, const DiagnosisThresholds& t) {
  job.findings.clear();
  job.straggler_test.reset();
  if (job.rank_waits.size() < 2) return;
  const RankWait* slowest = stragglerCandidate(job.rank_waits);
  if (!slowest) return;

  // The waiting ranks' windows are what the wait is measured against.
  uint64_t others_window = 0;
  const ProcessAnalysis* slow_process = nullptr;
  for (std::size_t i : job.processes) {
    const ProcessAnalysis& p = report.processes[i];
    uint64_t window = 0;
    for (const DeviceAnalysis& d : p.devices) window += d.window_end_ns - d.window_start_ns;
    if (p.rank && *p.rank == slowest->rank) {
      slow_process = &p;
    } else {
      others_window += window;
    }
  }
  const std::size_t ranks = job.rank_waits.size();
  const StragglerTest test = testStraggler(*slowest, ranks, others_window, t);
  job.straggler_test = test;

  // Every rank's NCCL finding says whom its collectives waited for, or that the waits are even.
  for (std::size_t i : job.processes) {
    ProcessAnalysis& p = report.processes[i];
    if (test.named && !(p.rank && *p.rank == slowest->rank)) relabelWaitsForStraggler(p, job, *slowest);
    for (Finding& f : p.findings) {
      if (f.id != kFindingNccl) continue;
      if (!test.named) {
        f.evidence.emplace_back("the ranks wait for", unnamedStragglerText(test, ranks));
        continue;
      }
      const bool self = p.rank && *p.rank == slowest->rank;
      f.evidence.emplace_back("the ranks wait for", (self ? "this rank, " : "") + std::string("rank ") +
                                                        std::to_string(slowest->rank) + ": " +
                                                        formatDuration(slowest->waited_for_ns) + ", last in " +
                                                        formatCount(slowest->collectives_last) + " of " +
                                                        formatCount(slowest->collectives) + " collectives");
      f.numbers.emplace_back("waited_for_rank", static_cast<double>(slowest->rank));
      f.numbers.emplace_back("waited_for_ns", static_cast<double>(slowest->waited_for_ns));
    }
  }
  if (!test.named) return;

  Finding f;
  f.id = kFindingStraggler;
  f.title = "waiting for rank " + std::to_string(slowest->rank) + " in collectives";
  f.idle_ns = slowest->waited_for_ns;
  f.idle_share = test.others_window_fraction;
  f.evidence.emplace_back("the others waited", formatDuration(slowest->waited_for_ns) + " inside collectives = " +
                                                   formatPercent(test.others_window_fraction) +
                                                   " of their windows (busy NCCL kernels, not idle)");
  f.evidence.emplace_back("arrived last", lastText(test));
  f.evidence.emplace_back("arrived late by", latenessText(test, ranks));
  f.numbers.emplace_back("rank", static_cast<double>(slowest->rank));
  f.numbers.emplace_back("waited_for_ns", static_cast<double>(slowest->waited_for_ns));
  f.numbers.emplace_back("others_window_fraction", test.others_window_fraction);
  addStragglerNumbers(test, f);
  if (slow_process) f.evidence.emplace_back("its own verdict", verdict(*slow_process));
  f.fix = "Balance the ranks: find out why rank " + std::to_string(slowest->rank) +
          " reaches the collectives late (its own report: data loading, host work, uneven shapes or a slower "
          "host) and give it less work or a faster input pipeline.";
  job.findings.push_back(std::move(f));
}

}  // namespace

void diagnoseAcrossRanks(AnalysisReport& report, const DiagnosisThresholds& t) {
  for (RankComparison& job : report.rank_comparisons) diagnoseJobRanks(report, job, t);
}

void diagnoseReport(AnalysisReport& report, const DiagnosisThresholds& thresholds) {
  for (ProcessAnalysis& p : report.processes) diagnose(p, report.options, thresholds);
  diagnoseAcrossRanks(report, thresholds);
}

namespace {

// What the analysis left out, for the verdict line itself: a number that rests on part of the
// recording says so where it is read, not in a note further down. "" when nothing was.
std::string leftOut(const ProcessAnalysis& process) {
  std::string text;
  if (process.late_events > 0) {
    text += "; " + formatCount(process.late_events) + " of " + formatCount(process.window_events) + " events (" +
            formatPercent(ratio(static_cast<double>(process.late_events), static_cast<double>(process.window_events))) +
            ") left out: they came after the reordering window had passed their time";
  }
  const uint64_t dropped = process.events_dropped + process.cupti_records_dropped;
  if (dropped > 0) text += "; " + formatCount(dropped) + " events dropped by the recorder are not in these numbers";
  return text;
}

std::string verdictWithoutLosses(const ProcessAnalysis& process) {
  if (!process.device_timeline) {
    return "Device idle time not measured: the CUPTI activity probe was not active (symbol hooks only); "
           "host-side numbers only";
  }
  uint64_t window = 0, idle = 0;
  for (const DeviceAnalysis& d : process.devices) {
    if (d.window_end_ns <= d.window_start_ns) continue;
    window += d.window_end_ns - d.window_start_ns;
    idle += d.idle_ns;
  }
  if (window == 0) {
    return "No kernel, copy or memset was recorded, so there is no device timeline; host-side numbers only";
  }
  std::string text = "GPU idle " + formatPercent(ratio(static_cast<double>(idle), static_cast<double>(window))) +
                     " of the time";
  // A process that died hung: that is the news, ahead of how idle the device was before.
  for (const Finding& n : process.notes) {
    if (n.id != "hang" || n.title.empty()) continue;
    std::string hung = n.title;
    hung[0] = static_cast<char>(toupper(static_cast<unsigned char>(hung[0])));
    return hung + "; before that, " + text;
  }
  // A first pass is said first, apart: its one-time costs are not what the run spends its time on.
  uint64_t steady_window = window, steady_idle = idle;
  if (hasFirstPass(process)) {
    const FirstPassTotals fp = firstPassTotals(process);
    steady_window = minusClamped(window, fp.window_ns);
    steady_idle = minusClamped(idle, fp.idle_ns);
    std::string one_time = "one-time set-up";
    for (const Finding& f : process.findings) {
      if (f.id == kFindingFirstPass) {
        const std::size_t open = f.title.find(" (");
        if (open != std::string::npos) one_time += f.title.substr(open);
      }
    }
    if (steady_window == 0) {
      return text + ", all of it in a first pass that does not settle within the window: " +
             one_time + "; profile after a warm-up step to see the steady state";
    }
    text += ": a first pass of " + formatDuration(fp.longest_ns) + " (" + formatDuration(fp.idle_ns) + " idle, " +
            one_time + "), then steady state " +
            formatPercent(ratio(static_cast<double>(steady_idle), static_cast<double>(steady_window))) + " idle";
  }
  if (process.bottleneck) return text + "; " + process.bottleneck->title;
  // The overall ceiling, beside the finding the verdict names (a run with no finding has little to win).
  std::string ceiling =
      steady_window > steady_idle && steady_idle * 20 >= steady_window
          ? "; up to " + findings::formatSpeedup(static_cast<double>(steady_window) /
                                                 static_cast<double>(steady_window - steady_idle)) +
                " faster if the GPU never waited"
          : std::string();
  // In a step's terms, where the run has steps enough for medians: a typical step's length and
  // about how much of it is GPU work (the step's floor if the GPU never waited). The median step
  // and the median idle fraction need not be one step's, hence "about".
  const StepStats& steps = process.steps;
  if (!ceiling.empty() && steps.steps >= 3 && steps.median_ns > 0 && steps.median_idle_fraction < 1) {
    const double work = static_cast<double>(steps.median_ns) * (1.0 - steps.median_idle_fraction);
    ceiling += " (a typical step: " + formatDuration(steps.median_ns) + ", about " +
               formatDuration(static_cast<uint64_t>(work)) + " of it GPU work)";
  }
  for (const Finding& f : process.findings) {
    if (f.idle_ns == 0 || f.id == kFindingFirstPass) continue;
    return text + "; " + formatWholePercent(ratio(static_cast<double>(f.idle_ns), static_cast<double>(steady_idle))) +
           " of it " + f.title + ceiling;
  }
  const char* which = hasFirstPass(process) ? "steady-state idle" : "idle time";
  if (process.notes.empty()) return text + "; no cause of " + which + " passes its threshold";
  return text + "; no cause of " + which + " passes its threshold, but see the notes";
}

}  // namespace

std::string verdict(const ProcessAnalysis& process) { return verdictWithoutLosses(process) + leftOut(process); }

std::string hostPartOfFinding(const std::string& id) {
  if (id == kFindingInputPipeline) return hostPartName(HostPart::kInputPipeline);
  if (id == kFindingFrameworkOverhead) return hostPartName(HostPart::kFramework);
  if (id == kFindingHostOther) return hostPartName(HostPart::kOther);
  if (id == kFindingHostUnknown) return hostPartName(HostPart::kUnknown);
  return "";
}

std::string callText(const GapCall& call) {
  const std::string name = call.api_name.empty() ? std::string("CUDA call") : call.api_name;
  std::string text = "a " + formatDuration(call.exit_ns - std::min(call.enter_ns, call.exit_ns)) + " " + name;
  if (!call.python_site.empty()) text += " at " + call.python_site;  // where the user's code made it
  return text;
}

std::string gapPlace(const IdleGap& gap) {
  std::string text;
  const uint64_t length = gap.end_ns - gap.start_ns;
  const GapCall& q = gap.queued_by;
  if (gap.call.known && gap.call.in_gap_ns == 0) {
    text = "thread " + std::to_string(gap.call.thread_id) + " had returned from " + callText(gap.call);
  } else if (gap.call.known && gap.call.in_gap_ns * 2 >= length) {
    text = "thread " + std::to_string(gap.call.thread_id) + " in " + callText(gap.call) + " (" +
           formatDuration(gap.call.in_gap_ns) + " of the gap)";
    // The launch of the work after the gap, when it is another call that took a real part of it.
    if (q.known && q.enter_ns != gap.call.enter_ns && q.in_gap_ns * 100 >= length) {
      text += ", then " + callText(q) + " (" + formatDuration(q.in_gap_ns) + " of the gap)";
    }
  } else if (gap.call.known) {
    // Host work outside CUDA calls: the calls it made are not where the time went. Name the launch
    // that ended it, which is where the code resumed.
    text = "thread " + std::to_string(gap.call.thread_id) + " mostly outside CUDA calls, then " +
           callText(q.known ? q : gap.call);
  }
  if (!gap.before.name.empty()) text += (text.empty() ? "" : "; ") + std::string("after ") + shortKernelName(gap.before.name, 60);
  if (!gap.after.name.empty()) text += (text.empty() ? "" : "; ") + std::string("before ") + shortKernelName(gap.after.name, 60);
  return text;
}

std::string causeOfFinding(const std::string& id) {
  if (id == kFindingInputPipeline || id == kFindingFrameworkOverhead || id == kFindingHostOther ||
      id == kFindingHostUnknown || id == kFindingWarmup) {
    return idleCauseName(IdleCause::kHostCpu);
  }
  if (id == kFindingPageableCopies) return idleCauseName(IdleCause::kSyncCopy);
  if (id == kFindingLaunchOverhead || id == kFindingSlowLaunchCalls) return idleCauseName(IdleCause::kLaunchOverhead);
  if (id == kFindingNccl) return idleCauseName(IdleCause::kNcclHost);
  if (id == kFindingCudaApi) return idleCauseName(IdleCause::kCudaApi);
  if (id == kFindingDependency) return idleCauseName(IdleCause::kDependency);
  if (id == kFindingSyncPoints) return "after_sync";
  return "";
}

}  // namespace gapwatch::analysis