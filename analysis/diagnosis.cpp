// analysis/diagnosis.cpp: see diagnosis.h; the thresholds and definitions are explained
// in docs/analysis.md. Each finding's evidence and fix are built in findings.cpp.
#include "analysis/diagnosis.h"

#include "analysis/diagnosis_numbers.h"
#include "analysis/findings.h"
#include "analysis/gap_histogram.h"
#include "analysis/kernel_stats.h"
#include "analysis/quantity_text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <limits>
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

// The host_cpu time left after stalls and sync points (`rest`), by what the host was doing: each
// part loses its own time in the stall gaps, and its share of `taken` (the sync finding's host
// time) in proportion to its time in after-sync gaps that are not stalls. What rounding leaves
// goes to unknown, so the parts sum to `rest` exactly.
void explainHostParts(const DeviceAnalysis& device, uint64_t rest, uint64_t taken, uint64_t stall_limit, bool measured,
                      IdleExplanation& out) {
  constexpr std::size_t kUnknown = static_cast<std::size_t>(HostPart::kUnknown);
  std::array<double, kHostPartCount> stall{}, after_sync{};
  const double host = static_cast<double>(device.idle_by_cause_ns[kHostCpu]);
  for (std::size_t p = 0; p < kHostPartCount; ++p) {
    after_sync[p] = measured ? static_cast<double>(device.after_sync_host_by_part_ns[p])
                             : static_cast<double>(device.after_sync_by_cause_ns[kHostCpu]) *
                                   ratio(static_cast<double>(device.host_cpu_by_part_ns[p]), host);
  }
  for (const IdleGap& gap : device.longest_gaps) {
    if (gapLength(gap) < stall_limit) continue;
    for (std::size_t p = 0; p < kHostPartCount; ++p) {
      stall[p] += static_cast<double>(gap.host_by_part_ns[p]);
      if (gap.after_sync) after_sync[p] = std::max(0.0, after_sync[p] - static_cast<double>(gap.host_by_part_ns[p]));
    }
  }
  double after_sync_total = 0;
  for (double v : after_sync) after_sync_total += v;
  uint64_t given = 0;
  for (std::size_t p = 0; p < kHostPartCount; ++p) {
    if (p == kUnknown) continue;
    const double own = std::max(0.0, static_cast<double>(device.host_cpu_by_part_ns[p]) - stall[p]);
    const double part_taken = static_cast<double>(taken) * ratio(after_sync[p], after_sync_total);
    const uint64_t left = static_cast<uint64_t>(std::llround(std::max(0.0, own - part_taken)));
    const uint64_t kept = std::min(left, rest - given);
    out.host_part_ns[p] += kept;
    given += kept;
  }
  out.host_part_ns[kUnknown] += rest - given;
}

void explainDevice(const DeviceAnalysis& device, const ProcessAnalysis& process, const DiagnosisThresholds& t,
                   IdleExplanation& out) {
  const uint64_t window = device.window_end_ns - device.window_start_ns;
  out.window_ns += window;
  out.idle_ns += device.idle_ns;
  out.after_sync_ns += device.after_sync_ns;
  const auto& cause = device.idle_by_cause_ns;

  // Stalls: gaps far longer than this device's typical long gap.
  const std::size_t median = medianBucket(device.gaps, kFirstLongBucket);
  uint64_t limit = std::numeric_limits<uint64_t>::max();
  if (median < GapHistogram::kBucketCount) {
    const uint64_t typical = GapHistogram::upperNs(median);
    out.typical_long_gap_ns = std::max(out.typical_long_gap_ns, typical);
    limit = std::max(t.stall_min_ns, saturatingScale(typical, t.stall_factor));
    out.stall_limit_ns = std::max(out.stall_limit_ns, limit);
  }
  std::array<uint64_t, kIdleCauseCount> stall{};
  std::array<double, kIdleCauseCount> after_sync{};
  const bool measured = device.after_sync_gaps > 0 || device.after_sync_ns == 0;
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
    after_sync[c] = measured ? static_cast<double>(device.after_sync_by_cause_ns[c])
                             : static_cast<double>(device.after_sync_ns) *
                                   ratio(static_cast<double>(cause[c]), static_cast<double>(device.idle_ns));
  }
  if (!measured) out.after_sync_estimated = true;
  for (const IdleGap& gap : device.longest_gaps) {
    if (gapLength(gap) < limit) {
      // A long gap that the thread spent mostly inside one launch (or copy, event) call.
      if (gapLength(gap) >= kLongGapNs && gap.by_cause_ns[kLaunch] * 2 > gapLength(gap)) {
        out.one_time_stalls.push_back(gap);
      }
      continue;
    }
    out.stalls.push_back(gap);
    stall[kHostCpu] += gap.by_cause_ns[kHostCpu];
    stall[kCudaApi] += gap.by_cause_ns[kCudaApi];
    stall[kLaunch] += gap.by_cause_ns[kLaunch];
    if (gap.after_sync) {
      // The stall is explained as a stall; the sync before it cannot take it as well.
      for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
        after_sync[c] = std::max(0.0, after_sync[c] - static_cast<double>(gap.by_cause_ns[c]));
      }
    }
  }

  // Sync points: hideable idle, taken from the host's own time in after-sync gaps: the Python
  // and launches that ran after the sync returned, which the host could have queued before it
  // waited. Time the host spent inside a CUDA call in such a gap is not the sync's: a blocking
  // copy (sync_copy), an NCCL call, or a cudaMalloc / cudaFree (cuda_api) has its own finding,
  // whose fix is that call's. (Counting cuda_api here once made "take syncs out of the step" the
  // top finding of a loop whose idle was 99 % cudaMalloc / cudaFree.)
  const uint64_t hideable = measured ? device.after_sync_hideable_ns : estimateHideable(device, process);
  out.after_sync_hideable_ns += hideable;
  const double pool = after_sync[kHostCpu] + after_sync[kLaunch];
  const double sync_total = std::min(static_cast<double>(hideable), pool);
  // Launch overhead of long gaps is a slow call, not per-kernel overhead: a one-time stall, as
  // is all of a stall gap's (which is long too, unless the thresholds say otherwise).
  const uint64_t long_launch = std::min(cause[kLaunch], std::max(device.launch_overhead_long_gaps_ns, stall[kLaunch]));
  stall[kLaunch] = long_launch;
  std::array<uint64_t, kIdleCauseCount> taken{};
  for (std::size_t c : {kHostCpu, kLaunch}) {
    taken[c] = static_cast<uint64_t>(std::llround(sync_total * ratio(after_sync[c], pool)));
    taken[c] = std::min(taken[c], minusClamped(cause[c], stall[c]));
  }

  out.warmup_ns += stall[kHostCpu] + stall[kCudaApi] + long_launch;
  out.long_call_ns += long_launch;
  out.launch_short_gaps += device.launch_overhead_short_gaps;
  out.sync_points_ns += taken[kHostCpu] + taken[kLaunch] + taken[kCudaApi];
  explainHostParts(device, minusClamped(cause[kHostCpu], stall[kHostCpu] + taken[kHostCpu]), taken[kHostCpu], limit,
                   measured, out);
  out.launch_overhead_ns += minusClamped(cause[kLaunch], long_launch + taken[kLaunch]);
  out.cuda_api_ns += minusClamped(cause[kCudaApi], stall[kCudaApi] + taken[kCudaApi]);
  out.pageable_copies_ns += cause[kSyncCopy];
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
  return 0;
}

IdleExplanation explainIdle(const ProcessAnalysis& process, const DiagnosisThresholds& thresholds) {
  IdleExplanation x;
  if (!process.device_timeline) return x;
  bool any = false;
  for (const DeviceAnalysis& device : process.devices) {
    if (device.window_end_ns <= device.window_start_ns) continue;
    x.leading_ns = any ? std::min(x.leading_ns, device.leading_ns) : device.leading_ns;
    any = true;
    explainDevice(device, process, thresholds, x);
  }
  const auto longest_first = [](const IdleGap& a, const IdleGap& b) { return gapLength(a) > gapLength(b); };
  std::sort(x.stalls.begin(), x.stalls.end(), longest_first);
  std::sort(x.one_time_stalls.begin(), x.one_time_stalls.end(), longest_first);
  return x;
}

void diagnose(ProcessAnalysis& process, const AnalysisOptions& options, const DiagnosisThresholds& t) {
  process.findings.clear();
  process.notes.clear();
  const IdleExplanation x = explainIdle(process, t);
  if (x.window_ns == 0) return;  // nothing measured on the device: no verdict without numbers
  const auto passes = [&](uint64_t idle_ns) {
    return idle_ns > 0 && static_cast<double>(idle_ns) >= t.min_window_share * static_cast<double>(x.window_ns);
  };

  std::vector<Finding> found;
  for (HostPart part : {HostPart::kInputPipeline, HostPart::kFramework, HostPart::kOther, HostPart::kUnknown}) {
    if (passes(x.host_part_ns[static_cast<std::size_t>(part)])) found.push_back(findings::hostPart(process, x, options, part));
  }
  if (passes(x.pageable_copies_ns)) found.push_back(findings::pageableCopies(process, x));
  // Many short gaps, or it is not launch overhead (a slow call is warmup's).
  if (passes(x.launch_overhead_ns) && x.launch_short_gaps >= t.launch_min_gaps) {
    found.push_back(findings::launchOverhead(process, x, options, t));
  }
  if (passes(x.sync_points_ns)) found.push_back(findings::syncPoints(process, x));
  const NcclStats& nccl = process.nccl;
  const bool exposed = nccl.comm_ns > 0 && nccl.comm_share_of_busy >= t.nccl_min_comm_share &&
                       nccl.compute_comm_overlap <= t.nccl_max_overlap;
  // A finding explains idle time. Communication that does not overlap compute, or a long start-up,
  // explains none (NCCL kernels are busy time; start-up is before the window), so they are notes:
  // numbers and a fix printed beside the NCCL and start-up lines, never ranked among the causes.
  if (passes(x.nccl_ns)) {
    found.push_back(findings::nccl(process, x, false));
  } else if (exposed) {
    process.notes.push_back(findings::nccl(process, x, true));
  }
  const bool long_start = x.leading_ns >= t.leading_min_ns &&
                          static_cast<double>(x.leading_ns) >= t.leading_share * static_cast<double>(x.leading_ns + x.window_ns);
  if (passes(x.warmup_ns)) {
    found.push_back(findings::warmup(x));
  } else if (long_start) {
    process.notes.push_back(findings::warmup(x));
  }
  if (passes(x.cuda_api_ns)) found.push_back(findings::cudaApi(process, x));
  if (passes(x.dependency_ns)) found.push_back(findings::dependency(process, x));

  // Ranked by the idle each explains; ties keep the order above (section 1's table).
  std::stable_sort(found.begin(), found.end(), [](const Finding& a, const Finding& b) { return a.idle_ns > b.idle_ns; });
  process.findings = std::move(found);
}

void diagnoseAcrossRanks(AnalysisReport& report, const DiagnosisThresholds& t) {
  report.findings.clear();
  if (report.rank_waits.size() < 2) return;
  const RankWait* slowest = nullptr;
  uint64_t collectives = 0;
  for (const RankWait& w : report.rank_waits) {
    collectives += w.collectives_last;
    if (!slowest || w.waited_for_ns > slowest->waited_for_ns) slowest = &w;
  }
  if (!slowest || slowest->waited_for_ns == 0) return;

  // The waiting ranks' windows are what the wait is measured against.
  uint64_t others_window = 0;
  const ProcessAnalysis* slow_process = nullptr;
  for (const ProcessAnalysis& p : report.processes) {
    uint64_t window = 0;
    for (const DeviceAnalysis& d : p.devices) window += d.window_end_ns - d.window_start_ns;
    if (p.rank && *p.rank == slowest->rank) {
      slow_process = &p;
    } else {
      others_window += window;
    }
  }
  const double share = ratio(static_cast<double>(slowest->waited_for_ns), static_cast<double>(others_window));

  // Every rank's NCCL finding names the rank its collectives waited for.
  for (ProcessAnalysis& p : report.processes) {
    for (Finding& f : p.findings) {
      if (f.id != kFindingNccl) continue;
      const bool self = p.rank && *p.rank == slowest->rank;
      f.evidence.emplace_back("the ranks wait for", (self ? "this rank, " : "") + std::string("rank ") +
                                                        std::to_string(slowest->rank) + ": " +
                                                        formatDuration(slowest->waited_for_ns) + ", last in " +
                                                        formatCount(slowest->collectives_last) + " collectives");
      f.numbers.emplace_back("waited_for_rank", static_cast<double>(slowest->rank));
      f.numbers.emplace_back("waited_for_ns", static_cast<double>(slowest->waited_for_ns));
    }
  }
  if (share < t.straggler_min_window_share) return;

  Finding f;
  f.id = kFindingStraggler;
  f.title = "waiting for rank " + std::to_string(slowest->rank) + " in collectives";
  f.idle_ns = slowest->waited_for_ns;
  f.idle_share = share;
  f.evidence.emplace_back("the others waited", formatDuration(slowest->waited_for_ns) + " inside collectives = " +
                                                   formatPercent(share) + " of their windows (busy NCCL kernels, not idle)");
  f.evidence.emplace_back("arrived last", "in " + formatCount(slowest->collectives_last) + " of " +
                                              formatCount(collectives) + " collectives where a rank waited");
  f.numbers.emplace_back("rank", static_cast<double>(slowest->rank));
  f.numbers.emplace_back("waited_for_ns", static_cast<double>(slowest->waited_for_ns));
  f.numbers.emplace_back("others_window_fraction", share);
  f.numbers.emplace_back("collectives_last", static_cast<double>(slowest->collectives_last));
  if (slow_process) f.evidence.emplace_back("its own verdict", verdict(*slow_process));
  f.fix = "Balance the ranks: find out why rank " + std::to_string(slowest->rank) +
          " reaches the collectives late (its own report: data loading, host work, uneven shapes or a slower "
          "host) and give it less work or a faster input pipeline.";
  report.findings.push_back(std::move(f));
}

void diagnoseReport(AnalysisReport& report, const DiagnosisThresholds& thresholds) {
  for (ProcessAnalysis& p : report.processes) diagnose(p, report.options, thresholds);
  diagnoseAcrossRanks(report, thresholds);
}

std::string verdict(const ProcessAnalysis& process) {
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
  for (const Finding& f : process.findings) {
    if (f.idle_ns == 0) continue;
    return text + "; " + formatWholePercent(f.idle_share) + " of it " + f.title;
  }
  if (process.notes.empty()) return text + "; no cause of idle time passes its threshold";
  return text + "; no cause of idle time passes its threshold, but see the notes";
}

std::string hostPartOfFinding(const std::string& id) {
  if (id == kFindingInputPipeline) return hostPartName(HostPart::kInputPipeline);
  if (id == kFindingFrameworkOverhead) return hostPartName(HostPart::kFramework);
  if (id == kFindingHostOther) return hostPartName(HostPart::kOther);
  if (id == kFindingHostUnknown) return hostPartName(HostPart::kUnknown);
  return "";
}

std::string callText(const GapCall& call) {
  const std::string name = call.api_name.empty() ? std::string("CUDA call") : call.api_name;
  return "a " + formatDuration(call.exit_ns - std::min(call.enter_ns, call.exit_ns)) + " " + name;
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
  if (id == kFindingLaunchOverhead) return idleCauseName(IdleCause::kLaunchOverhead);
  if (id == kFindingNccl) return idleCauseName(IdleCause::kNcclHost);
  if (id == kFindingCudaApi) return idleCauseName(IdleCause::kCudaApi);
  if (id == kFindingDependency) return idleCauseName(IdleCause::kDependency);
  if (id == kFindingSyncPoints) return "after_sync";
  return "";
}

}  // namespace gapwatch::analysis