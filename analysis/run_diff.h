// analysis/run_diff.h: two runs' reports side by side (`gapwatch diff A B`): what changed between
// them, and whether the step time changed beyond the noise of the step times.
//
// Both runs are analysed as `gapwatch report` analyses them (run_analysis.h); this module only
// reads the two RunReports, so every number of a diff is a report's number, summed over ranks and
// divided by the steps (docs/analysis.md, "Comparing runs", defines each one exactly).
//
//   std::string error = matchRanks(before.analysis, after.analysis, pairs);   // "" when they match
//   RunDiff diff = diffRuns(before, after, options);
#pragma once

#include "analysis/run_analysis.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::analysis {

struct RunDiffOptions {
  double level = 0.05;  // the step-time test's level (two-sided)
  // A per-step time (idle by cause, NCCL, a kernel) "changed" when it moved by at least this share
  // of run A's mean step time: smaller moves are not worth a line in the summary.
  double notable_share_of_step = 0.05;
  uint32_t top_kernels = 5;  // kernels listed: the union of each run's top ones by device time
};

// One rank of A and the same rank of B (indices into each report's processes).
struct RankPair {
  std::optional<int32_t> rank;  // none: both runs are one process, without the same rank
  int before_process = -1, after_process = -1;
  std::optional<int32_t> before_rank, after_rank;  // what each process says (they differ only for one process each)
  std::string before_file, after_file;              // filled by diffRuns (RunReport::files)
};

// One number of both runs. A side is empty where the run does not have it (no steps: nothing per
// step; no device timeline: no idle).
struct DiffQuantity {
  std::string key;    // "idle_host_cpu_per_step_ns", ... (docs/report-json.md, "gapwatch diff")
  std::string label;  // "host_cpu idle per step"
  std::string unit;   // "ns", "fraction" or "count"
  std::optional<double> before, after;
  bool notable = false;  // a per-step time that moved by notable_share_of_step of A's step time

  bool known() const { return before.has_value() && after.has_value(); }
  double change() const { return known() ? *after - *before : 0.0; }
  // change / before; none when either side is unknown or before is 0.
  std::optional<double> relativeChange() const;
};

// The step-time comparison: Welch's t-test on block means of each run's steps, warm-up left out
// (docs/analysis.md, "Comparing runs"). Step times within a run are autocorrelated (a slow data
// worker, a thermal state, a noisy neighbour last for many steps), so single steps are not
// independent samples: with hundreds of steps a test on them calls tiny shifts significant. The
// means of blocks of consecutive steps are close to independent, and a test on 8 of them per run
// keeps its level.
struct StepTimeTest {
  bool testable = false;  // both runs have at least two blocks of steps after warm-up
  std::string untestable_reason;  // when not testable, why ("run B has no steps")
  double before_mean_ns = 0, after_mean_ns = 0;  // of the steps compared (warm-up left out)
  double before_se_ns = 0, after_se_ns = 0;  // standard errors of the means, from the block means
  uint64_t before_steps = 0, after_steps = 0;  // steps compared (the fewest of any rank)
  uint64_t before_warmup_steps = 0, after_warmup_steps = 0;  // leading steps left out as warm-up
  uint64_t before_blocks = 0, after_blocks = 0;              // block means the test compares
  double change_ns = 0;          // after - before
  double relative_change = 0;    // change / before (0 when before is 0)
  double t = 0;                  // change / sqrt(se_before^2 + se_after^2)
  double dof = 0;                // Welch-Satterthwaite degrees of freedom
  double p_value = 1;            // two-sided
  double level = 0.05;
  bool beyond_noise = false;     // p_value < level
};

// A finding of either run (the diagnosis's cause, analysis/findings.h), with the idle it explains
// per step in each; a side is empty where that run did not make the finding.
struct FindingChange {
  std::string id;     // "data_pipeline", ...
  std::string title;  // the title of the run that made it (B's when both did)
  std::optional<double> before_idle_per_step_ns, after_idle_per_step_ns;
};

// One kernel name's device time per step in each run; a side is empty when the kernel is not
// among that run's kernels listed by time (the report lists the top ones only).
struct KernelChange {
  std::string name;
  std::optional<double> before_per_step_ns, after_per_step_ns;
  std::optional<double> before_runs_per_step, after_runs_per_step;
};

struct RunDiff {
  std::vector<RankPair> ranks;
  // Findings and kernels are per step when both runs have steps on every rank, else totals.
  bool per_step = false;
  // The job's world size as each run's recordings or traces say it (the first that does); when
  // both say one and they differ, the runs are of different job sizes and "What changed" says so
  // first: per-rank numbers of a job of 8 and of a job of 2 are not like for like.
  std::optional<int32_t> before_world_size, after_world_size;
  StepTimeTest step_time;
  std::vector<DiffQuantity> quantities;  // in a fixed order (docs/analysis.md)
  std::vector<FindingChange> findings;   // A's findings by idle, then B's new ones
  std::vector<KernelChange> kernels;     // by the larger of the two per-step times
  // What changed, one sentence each, with numbers: the step time's verdict first, then each
  // finding that went away or appeared, then each notable quantity.
  std::vector<std::string> changes;
  std::string verdict;  // "no change beyond noise", "B is slower ...", "B is faster ...", "step time not compared: ..."
};

// Pairs A's processes with B's by rank number. Returns "" on success, else the one line that says
// why they cannot be paired (different rank counts, a rank of one missing from the other, a rank
// twice, ranks on one side only). Two runs of one process each pair whatever their ranks.
std::string matchRanks(const AnalysisReport& before, const AnalysisReport& after, std::vector<RankPair>& pairs);

// The comparison of two runs whose ranks matchRanks paired.
RunDiff diffRuns(const RunReport& before, const RunReport& after, const std::vector<RankPair>& pairs,
                 const RunDiffOptions& options = {});

// `gapwatch diff --fail-if-slower`: B's mean step time is slower than A's by more than
// `threshold` (a fraction of A's: 0.05 for 5%) and beyond noise. False when not testable.
bool slowerBeyondNoise(const StepTimeTest& test, double threshold);

// Welch's two-sided test of two means from their standard errors and sample sizes (each >= 2).
StepTimeTest welchTest(double before_mean, double before_se, uint64_t before_n, double after_mean, double after_se,
                       uint64_t after_n, double level);

// A run's steps as the test sees them: each rank's step timeline (blocks of consecutive steps,
// StepStats::timeline), averaged over the ranks block by block; the leading blocks longer than
// kWarmupFactor x the median block left out as warm-up (at most half of them); the rest grouped
// into kTestBlocks blocks of consecutive steps where there are 16 or more, else one a block.
struct StepSample {
  std::vector<double> block_means_ns;  // the blocks the test compares
  uint64_t steps = 0, warmup_steps = 0;
  double mean_ns = 0;                  // of the steps compared, weighted by steps
};
inline constexpr double kWarmupFactor = 1.5;
inline constexpr std::size_t kTestBlocks = 8;
StepSample stepSampleOf(const std::vector<std::vector<StepPoint>>& rank_timelines);

}  // namespace gapwatch::analysis
