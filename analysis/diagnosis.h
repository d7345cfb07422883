// analysis/diagnosis.h: from the numbers of an analysis to what to fix.
//
// The engine (analysis_pipeline.h) measures; the diagnosis says which causes of ARCHITECTURE.md
// section 1 the measurements show, how much idle time each explains, the numbers that show it and
// the usual fix. It reads only the AnalysisReport data model, so it works the same on a live
// collector's result, a recording's, or a hand-built one in a test.
//
// Every idle nanosecond of a device is explained by exactly one finding (explainIdle), so the
// shares a report prints add up to 100 % and the ranking is by the idle time each fix can win:
//   - warmup:          the host_cpu, cuda_api and launch_overhead time of stalls (gaps far
//                      longer than the process's typical long gap) that has evidence of
//                      compilation or first-time work (reader/warmup_names.h: a module load, a
//                      library's set-up, graph capture, a torch.compile range, a kernel's slow
//                      first launch), or all of a stall in the process's own first step where
//                      the recording shows the process start. A stall is a shape, not a cause:
//                      its other time goes to the findings below by their rules;
//   - sync_points:     after-sync idle the host could have hidden had it not waited: per gap, up
//                      to the time the draining call blocked, taken from the host_cpu and
//                      launch_overhead time of after-sync gaps (time inside a CUDA call is
//                      that call's finding's);
//   - input_pipeline, framework_overhead, host_other, host_unknown: the rest of host_cpu, by what
//                      the host was doing (HostPart): inside data loading, inside framework ops,
//                      outside any op, or not known (no host events); stall and sync time taken
//                      from each part in proportion to that part's time in those gaps;
//   - launch_overhead: the rest of launch_overhead, reported only when at least
//                      `launch_min_gaps` gaps under 1.024 ms carry it (many short gaps);
//   - cuda_api:        the rest of cuda_api;
//   - pageable_copies: sync_copy;       - nccl: nccl_host;       - dependency: dependency.
// A finding is reported when the idle it explains passes its threshold (DiagnosisThresholds;
// the values and why: docs/analysis.md), and only then. Evidence that is not idle time, a long
// start-up (warmup) and communication that does not overlap compute (nccl), makes a note
// (ProcessAnalysis::notes) instead. Each fix follows from the finding's own evidence: the sync
// types that drained the queue, the kind of copies that blocked (sync_advice.h).
// Across ranks, the rank the others wait for in collectives is a finding of the whole report.
#pragma once

#include "analysis/analysis_result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gapwatch::analysis {

// Finding ids (Finding::id): stable, scripts match on them (docs/report-json.md).
inline constexpr const char* kFindingInputPipeline = "input_pipeline";
inline constexpr const char* kFindingFrameworkOverhead = "framework_overhead";
inline constexpr const char* kFindingHostOther = "host_other";
inline constexpr const char* kFindingHostUnknown = "host_unknown";
inline constexpr const char* kFindingPageableCopies = "pageable_copies";
inline constexpr const char* kFindingLaunchOverhead = "launch_overhead";
inline constexpr const char* kFindingSyncPoints = "sync_points";
inline constexpr const char* kFindingNccl = "nccl";
inline constexpr const char* kFindingWarmup = "warmup";
inline constexpr const char* kFindingCudaApi = "cuda_api";
inline constexpr const char* kFindingDependency = "dependency";
inline constexpr const char* kFindingStraggler = "straggler";  // across ranks
inline constexpr const char* kFindingSlowLaunchCalls = "slow_launch_calls";
// The window's first pass: one-time costs, kept apart from the steady state (steady_state.h).
inline constexpr const char* kFindingFirstPass = "first_pass";
// The steady state's GPU is the bottleneck (ProcessAnalysis::bottleneck, not a finding: it
// explains no idle): what its busy time goes to.
inline constexpr const char* kFindingGpuBound = "gpu_bound";
// A note: a trace's own host events are dense enough to inflate the host time it measures.
inline constexpr const char* kFindingProfilerCost = "profiler_cost";

// When evidence is strong enough to report (docs/analysis.md, "Thresholds", says why each value).
struct DiagnosisThresholds {
  // A finding must explain at least this share of the device window (idle it explains / window).
  double min_window_share = 0.05;
  // A mid-run stall is a gap of at least this length...
  uint64_t stall_min_ns = 10'000'000;
  // ... and at least this many times the typical long gap (the upper bound of the log2 bucket
  // holding the median of the gaps of 1 ms or more).
  double stall_factor = 8.0;
  // Launch overhead is a finding only when at least this many gaps under kLongGapNs carry it: it
  // is the cost of many small launches, never of one slow call.
  uint64_t launch_min_gaps = 20;
  // Start-up alone (no stall) makes a warmup finding when it is at least this long and this share
  // of start-up + window.
  uint64_t leading_min_ns = 10'000'000'000;
  double leading_share = 0.25;
  // Communication alone (little NCCL host idle) makes an nccl finding when NCCL kernels are at
  // least this share of busy time and overlap compute for at most `nccl_max_overlap` of it.
  double nccl_min_comm_share = 0.30;
  double nccl_max_overlap = 0.50;
  // Across ranks: a rank is a straggler when the others waited for it at least this share of
  // their windows...
  double straggler_min_window_share = 0.05;
  // ... and its mean lateness in the collectives is above 0 by a one-sided t-test on batch means
  // at this level, Bonferroni-corrected for having picked it among the ranks (docs/analysis.md,
  // "Across ranks").
  double straggler_test_level = 0.001;
  // The steady state is GPU-bound when its idle is below this share of its window.
  double gpu_bound_max_idle = 0.10;
  // A trace's profiler cost is noted when its host events, at about profiler_event_ns each, add
  // up to this share of the host time they span.
  uint64_t profiler_event_ns = 1000;
  double profiler_cost_min_share = 0.10;
  // A sync storm: at least this many syncs (every type but malloc / free), at least this many a
  // second of the window. Each drains the queue, so all the host's time after it is exposed.
  uint64_t sync_storm_min_syncs = 200;
  double sync_storm_min_per_second = 500;
};

// How a process's idle time splits among the findings, before any threshold. Sums to idle_ns.
struct IdleExplanation {
  uint64_t window_ns = 0;  // over the process's devices
  uint64_t idle_ns = 0;
  uint64_t leading_ns = 0;  // the earliest device's start-up
  // The host_cpu time left after stalls and sync points, by HostPart: input_pipeline_ns,
  // framework_ns, host_other_ns, host_unknown_ns.
  std::array<uint64_t, kHostPartCount> host_part_ns{};
  uint64_t pageable_copies_ns = 0, launch_overhead_ns = 0, sync_points_ns = 0;
  uint64_t nccl_ns = 0, warmup_ns = 0, cuda_api_ns = 0, dependency_ns = 0;
  // Launch-call time in gaps of kLongGapNs or more that is neither warm-up nor a sync point's: a
  // slow launch call, never launch overhead (which is the short gaps' only).
  uint64_t slow_launch_ns = 0;
  // Launch overhead's class: the summed length of the gaps under kLongGapNs (its bound).
  uint64_t short_gaps_ns = 0;
  // Set by diagnose() where the process has a first pass: the split above is the steady state's,
  // and shares are of all idle (first pass included), which is `all_idle_ns`.
  bool steady_state = false;
  uint64_t all_idle_ns = 0;
  // The inputs behind the split.
  uint64_t after_sync_ns = 0;
  uint64_t after_sync_hideable_ns = 0;  // before capping at the host time of after-sync gaps
  bool after_sync_estimated = false;    // the engine did not fill the after-sync details
  // A sync storm (DiagnosisThresholds::sync_storm_*): sync_points took all the host and launch
  // time of after-sync gaps, not only the hideable part.
  bool sync_storm = false;
  uint64_t syncs = 0;  // sync calls of every type but malloc / free
  // In a storm, what sync_points holds besides the host's time after the syncs: idle inside the
  // sync calls themselves (cuda_api in stream / device / event synchronizes), and the blocking
  // copies' time when they are mostly reads of values (.item(): each is a sync of the storm).
  uint64_t storm_in_sync_calls_ns = 0;
  uint64_t storm_in_reads_ns = 0;
  bool storm_takes_reads = false;
  std::vector<IdleGap> stalls;          // the stall gaps, longest first (whatever their cause)
  // The listed gaps of 1 ms or more with warm-up evidence (reader/warmup_names.h, or the process's
  // first step, which warmup_evidence then names), longest first: the warm-up finding's examples.
  std::vector<IdleGap> warmup_gaps;
  // Launch overhead of the stalls (warmup's: a slow call), and the number of gaps under
  // kLongGapNs that carry some.
  uint64_t long_call_ns = 0;
  uint64_t launch_short_gaps = 0;
  // The stalls in which the thread sat mostly in one launch, copy or event call, longest first.
  std::vector<IdleGap> one_time_stalls;
  uint64_t typical_long_gap_ns = 0;     // 0: no gap of 1 ms or more
  uint64_t stall_limit_ns = 0;          // gaps this long or longer were stalls

  uint64_t explainedNs(const std::string& finding_id) const;
};

IdleExplanation explainIdle(const ProcessAnalysis& process, const DiagnosisThresholds& thresholds = {});

// Replaces process.findings with the findings of one process, ranked by the idle each explains.
void diagnose(ProcessAnalysis& process, const AnalysisOptions& options,
              const DiagnosisThresholds& thresholds = {});

// For each of report.rank_comparisons (each job of several ranks, on its own): replaces its
// findings with the findings across its ranks (a straggler: the rank the others wait for, named
// only when the test of its straggler_test passes), fills its straggler_test, and adds to each of
// its ranks' nccl finding whom the ranks wait for, or that no rank stands out. Run after
// diagnose() on every process.
void diagnoseAcrossRanks(AnalysisReport& report, const DiagnosisThresholds& thresholds = {});

// P(T >= t) for T with Student's t distribution of `dof` (>= 1) degrees of freedom.
double studentUpperTail(double t, uint32_t dof);

// The rank the others waited for most, the straggler test's candidate; null when nobody waited.
const RankWait* stragglerCandidate(const std::vector<RankWait>& waits);

// The test's numbers in a sentence: "rank 1 arrived last in 66 of 127 collectives where a rank
// waited (63.5 by chance); late by 12.0 us on average ± 30.1 us (t = 0.40, ...)".
std::string describeStragglerTest(const StragglerTest& test, std::size_t ranks);
// The line for a test that named no rank: "no rank stands out" only when the candidate's lateness
// is within the spread; else what the test found and why it is not a straggler.
std::string unnamedStragglerText(const StragglerTest& test, std::size_t ranks);

// The straggler test of `candidate` among `ranks` ranks, whose others' windows add up to
// `others_window_ns` (docs/analysis.md, "Across ranks").
StragglerTest testStraggler(const RankWait& candidate, std::size_t ranks, uint64_t others_window_ns,
                            const DiagnosisThresholds& thresholds = {});

// diagnose() on every process with report.options, then diagnoseAcrossRanks().
void diagnoseReport(AnalysisReport& report, const DiagnosisThresholds& thresholds = {});

// The first line of a report: "GPU idle 80.5% of the time; 76% of it waiting on the data pipeline
// (host CPU)", or what the recording cannot tell.
// Ends with what the analysis left out, if anything: events that came after the reordering window
// had passed their time, events the recorder dropped.
std::string verdict(const ProcessAnalysis& process);

// "a 3.06 s cudaLaunchKernel": a gap's call, by its length and API name.
std::string callText(const GapCall& call);

// Where a gap is, for a reader to find it in the code: "thread 12 in a 3.06 s cudaLaunchKernel
// (3.06 s of the gap); after <kernel>; before <kernel>" (kernel names shortened). A thread that
// spent most of the gap in no call is "mostly outside CUDA calls, then <the launch after it>"; one
// whose work was queued before the gap "had returned from" that call.
std::string gapPlace(const IdleGap& gap);

// The idle causes each finding id stands for (for comparing with ground truth): "host_cpu" for
// the four host findings and warmup, "after_sync" for sync_points, "" for straggler.
std::string causeOfFinding(const std::string& finding_id);
// The part of host_cpu time a host finding stands for ("input_pipeline", "framework", "other",
// "unknown"); "" for the others.
std::string hostPartOfFinding(const std::string& finding_id);

}  // namespace gapwatch::analysis
