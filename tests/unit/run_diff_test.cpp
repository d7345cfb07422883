// tests/unit/run_diff_test.cpp: the comparison of two runs (analysis/run_diff.h) on hand-built
// reports: the Welch test's numbers, how ranks pair and when they cannot, the sums over ranks
// per step, and the lines that name what changed.
#include "analysis/run_diff.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

using namespace gapwatch;
using namespace gapwatch::analysis;

namespace {

constexpr double kMs = 1e6;

std::size_t at(IdleCause cause) { return static_cast<std::size_t>(cause); }

// One rank: `steps` steps of mean `step_ms`, alternately `sd_ms` shorter and longer (one a point of
// the step timeline), a 100 ms-per-step window with `host_ms` of host_cpu idle per step, and a
// data_pipeline finding of that idle when it has any.
ProcessAnalysis rankWith(std::optional<int32_t> rank, uint64_t steps, double step_ms, double sd_ms, double host_ms) {
  ProcessAnalysis p;
  p.rank = rank;
  p.steps.steps = steps;
  p.steps.timed_steps = steps;
  p.steps.mean_ns = step_ms * kMs;
  p.steps.stddev_ns = sd_ms * kMs;
  for (uint64_t i = 0; i < steps; ++i) {
    StepPoint point;
    point.start_ns = i * static_cast<uint64_t>(100 * kMs);
    point.steps = 1;
    point.mean_ns = static_cast<uint64_t>((step_ms + (i % 2 ? sd_ms : -sd_ms)) * kMs);
    p.steps.timeline.push_back(point);
  }
  DeviceAnalysis d;
  d.window_start_ns = 0;
  d.window_end_ns = static_cast<uint64_t>(100 * kMs) * steps;
  d.idle_by_cause_ns[at(IdleCause::kHostCpu)] = static_cast<uint64_t>(host_ms * kMs) * steps;
  d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kInputPipeline)] = d.idle_by_cause_ns[at(IdleCause::kHostCpu)];
  d.idle_ns = d.idle_by_cause_ns[at(IdleCause::kHostCpu)];
  p.devices.push_back(d);
  p.launches.launches = 30 * steps;
  KernelStats k;
  k.name = "gemm";
  k.count = 10 * steps;
  k.total_ns = static_cast<uint64_t>(20 * kMs) * steps;
  p.kernels.top_by_time.push_back(k);
  if (host_ms > 0) {
    Finding f;
    f.id = "data_pipeline";
    f.title = "data loading";
    f.idle_ns = d.idle_ns;
    p.findings.push_back(f);
  }
  return p;
}

RunReport runOf(std::vector<ProcessAnalysis> processes) {
  RunReport r;
  r.analysis.processes = std::move(processes);
  return r;
}

const DiffQuantity& quantity(const RunDiff& diff, const std::string& key) {
  const auto found = std::find_if(diff.quantities.begin(), diff.quantities.end(),
                                  [&](const DiffQuantity& q) { return q.key == key; });
  REQUIRE(found != diff.quantities.end());
  return *found;
}

}  // namespace

TEST_CASE("Welch's test: t, degrees of freedom and the two-sided p-value", "[run_diff]") {
  // Means 10 and 12, standard errors 1 and 1, ten each: t = 2 / sqrt(2), 18 degrees of freedom,
  // p = 0.1744 (Student's t tables).
  const StepTimeTest test = welchTest(10, 1, 10, 12, 1, 10, 0.05);
  CHECK(test.t == Approx(std::sqrt(2.0)));
  CHECK(test.dof == Approx(18.0));
  CHECK(test.p_value == Approx(0.1744).margin(0.001));
  CHECK_FALSE(test.beyond_noise);
  // Unequal errors: the degrees of freedom fall towards the noisier side's n - 1.
  const StepTimeTest uneven = welchTest(100, 0.5, 30, 110, 3, 6, 0.05);
  CHECK(uneven.dof < 6.0);
  CHECK(uneven.dof > 5.0);
  CHECK(uneven.beyond_noise);  // t = 3.29 with 5 degrees of freedom: p about 0.02
  CHECK(uneven.p_value == Approx(0.0217).margin(0.002));
  CHECK(uneven.relative_change == Approx(0.1));
}

TEST_CASE("steps without spread: equal means are no change, any difference is beyond noise", "[run_diff]") {
  const StepTimeTest same = welchTest(5, 0, 4, 5, 0, 4, 0.05);
  CHECK(same.p_value == 1.0);
  CHECK_FALSE(same.beyond_noise);
  const StepTimeTest moved = welchTest(5, 0, 4, 6, 0, 4, 0.05);
  CHECK(std::isinf(moved.t));
  CHECK(moved.beyond_noise);
  CHECK(slowerBeyondNoise(moved, 0.1));       // +20 %
  CHECK_FALSE(slowerBeyondNoise(moved, 0.25));
}

TEST_CASE("ranks pair by number; runs that cannot be paired say why", "[run_diff]") {
  std::vector<RankPair> pairs;
  const RunReport a = runOf({rankWith(1, 5, 100, 1, 0), rankWith(0, 5, 100, 1, 0)});
  const RunReport b = runOf({rankWith(0, 5, 100, 1, 0), rankWith(1, 5, 100, 1, 0)});
  CHECK(matchRanks(a.analysis, b.analysis, pairs).empty());
  REQUIRE(pairs.size() == 2);
  CHECK(*pairs[0].rank == 0);
  CHECK(pairs[0].before_process == 1);
  CHECK(pairs[0].after_process == 0);

  const RunReport one = runOf({rankWith(0, 5, 100, 1, 0)});
  CHECK(matchRanks(a.analysis, one.analysis, pairs) == "run A has 2 ranks and run B 1: give both runs the same ranks");
  const RunReport other = runOf({rankWith(0, 5, 100, 1, 0), rankWith(2, 5, 100, 1, 0)});
  CHECK(matchRanks(a.analysis, other.analysis, pairs) == "rank 1 of run A is not in run B");
  const RunReport twice = runOf({rankWith(0, 5, 100, 1, 0), rankWith(0, 5, 100, 1, 0)});
  CHECK(matchRanks(a.analysis, twice.analysis, pairs) == "run B has rank 0 twice");
  const RunReport unranked = runOf({rankWith(0, 5, 100, 1, 0), rankWith(std::nullopt, 5, 100, 1, 0)});
  CHECK(matchRanks(unranked.analysis, a.analysis, pairs).find("without a rank") != std::string::npos);
  CHECK(matchRanks(a.analysis, RunReport{}.analysis, pairs) == "run B has no readable recording or trace");

  // One process each: paired whatever their ranks; a rank only when both say the same.
  const RunReport three = runOf({rankWith(3, 5, 100, 1, 0)});
  CHECK(matchRanks(three.analysis, one.analysis, pairs).empty());
  REQUIRE(pairs.size() == 1);
  CHECK_FALSE(pairs[0].rank.has_value());
}

TEST_CASE("two ranks: per-step sums, the step time's mean and error, and what changed", "[run_diff]") {
  // A: 60 ms of data loading per step on both ranks; B: none, steps 40 ms shorter.
  const RunReport a = runOf({rankWith(0, 10, 100, 2, 60), rankWith(1, 10, 102, 4, 60)});
  const RunReport b = runOf({rankWith(0, 10, 60, 2, 0), rankWith(1, 10, 62, 2, 0)});
  std::vector<RankPair> pairs;
  REQUIRE(matchRanks(a.analysis, b.analysis, pairs).empty());
  const RunDiff diff = diffRuns(a, b, pairs);

  // The ranks' steps averaged step by step (101 ms, 3 ms shorter and longer in turn), ten blocks
  // of one step each (under 16 steps): the standard error of their mean.
  CHECK(diff.step_time.before_mean_ns == Approx(101 * kMs));
  CHECK(diff.step_time.before_se_ns == Approx(3 * kMs * std::sqrt(10.0 / 9.0) / std::sqrt(10.0)));
  CHECK(diff.step_time.before_blocks == 10);
  CHECK(diff.step_time.before_warmup_steps == 0);
  CHECK(diff.step_time.after_mean_ns == Approx(61 * kMs));
  CHECK(diff.step_time.beyond_noise);
  CHECK(diff.verdict.rfind("B is faster", 0) == 0);

  CHECK(*quantity(diff, "steps").before == Approx(20));
  CHECK(*quantity(diff, "idle_host_cpu_per_step_ns").before == Approx(60 * kMs));
  CHECK(*quantity(diff, "idle_host_cpu_per_step_ns").after == Approx(0));
  CHECK(quantity(diff, "idle_host_cpu_per_step_ns").notable);
  CHECK(*quantity(diff, "idle_fraction").before == Approx(0.6));
  CHECK(*quantity(diff, "launches_per_step").after == Approx(30));
  CHECK_FALSE(quantity(diff, "launches_per_step").notable);  // counts are never "notable" times

  REQUIRE(diff.findings.size() == 1);
  CHECK(diff.findings[0].id == "data_pipeline");
  CHECK(*diff.findings[0].before_idle_per_step_ns == Approx(60 * kMs));
  CHECK_FALSE(diff.findings[0].after_idle_per_step_ns.has_value());
  CHECK(std::find(diff.changes.begin(), diff.changes.end(),
                  "data_pipeline: 60.0 ms idle per step in A, gone in B (B does not make this finding)") !=
        diff.changes.end());
  REQUIRE(diff.kernels.size() == 1);
  CHECK(*diff.kernels[0].before_per_step_ns == Approx(20 * kMs));
  CHECK(*diff.kernels[0].after_runs_per_step == Approx(10));
}

TEST_CASE("a run with fewer than two timed steps is not compared on step time", "[run_diff]") {
  const RunReport a = runOf({rankWith(std::nullopt, 10, 100, 2, 0)});
  const RunReport b = runOf({rankWith(std::nullopt, 1, 100, 0, 0)});
  std::vector<RankPair> pairs;
  REQUIRE(matchRanks(a.analysis, b.analysis, pairs).empty());
  const RunDiff diff = diffRuns(a, b, pairs);
  CHECK_FALSE(diff.step_time.testable);
  CHECK(diff.verdict == "step time not compared: run B has fewer than two timed steps (on some rank)");
  CHECK_FALSE(slowerBeyondNoise(diff.step_time, 0.0));
}

TEST_CASE("warm-up steps are left out of the step-time test, and said", "[run_diff]") {
  // The same steps, but A's first is a 900 ms compile: with it, A's mean is 180 ms against 100.
  ProcessAnalysis compiled = rankWith(0, 10, 100, 2, 0);
  compiled.steps.timeline.front().mean_ns = static_cast<uint64_t>(900 * kMs);
  const RunReport a = runOf({compiled});
  const RunReport b = runOf({rankWith(0, 10, 100, 2, 0)});
  std::vector<RankPair> pairs;
  REQUIRE(matchRanks(a.analysis, b.analysis, pairs).empty());
  const RunDiff diff = diffRuns(a, b, pairs);
  REQUIRE(diff.step_time.testable);
  CHECK(diff.step_time.before_warmup_steps == 1);
  CHECK(diff.step_time.after_warmup_steps == 0);
  CHECK(diff.step_time.before_steps == 9);
  CHECK_FALSE(diff.step_time.beyond_noise);
  CHECK(diff.verdict.rfind("no change beyond noise", 0) == 0);
}

TEST_CASE("from 16 steps on, the test compares 8 block means of consecutive steps", "[run_diff]") {
  // 64 steps whose time drifts slowly (a noisy neighbour for the first half): single steps would
  // be 64 samples of a correlated series; the blocks are 8.
  ProcessAnalysis drifting = rankWith(0, 64, 100, 1, 0);
  for (std::size_t i = 0; i < 32; ++i) drifting.steps.timeline[i].mean_ns += static_cast<uint64_t>(4 * kMs);
  const RunReport a = runOf({drifting});
  const RunReport b = runOf({rankWith(0, 64, 100, 1, 0)});
  std::vector<RankPair> pairs;
  REQUIRE(matchRanks(a.analysis, b.analysis, pairs).empty());
  const RunDiff diff = diffRuns(a, b, pairs);
  REQUIRE(diff.step_time.testable);
  CHECK(diff.step_time.before_blocks == 8);
  CHECK(diff.step_time.after_blocks == 8);
  CHECK(diff.step_time.before_steps == 64);
  // Half the blocks 4 ms longer: the standard error is the spread of the 8 block means (2 ms
  // from their mean each, sample sd 2.14 ms), not of the 64 steps (whose sd over sqrt 64 is 0.27).
  CHECK(diff.step_time.change_ns == Approx(-2 * kMs));
  CHECK(diff.step_time.before_se_ns == Approx(2 * kMs * std::sqrt(8.0 / 7.0) / std::sqrt(8.0)));
  CHECK(diff.step_time.after_se_ns == Approx(0));
}

TEST_CASE("a finding across ranks (a straggler) counts once for the run", "[run_diff]") {
  const RunReport a = runOf({rankWith(0, 10, 100, 2, 0), rankWith(1, 10, 100, 2, 0)});
  RunReport b = runOf({rankWith(0, 10, 100, 2, 0), rankWith(1, 10, 100, 2, 0)});
  Finding straggler;
  straggler.id = "straggler";
  straggler.title = "rank 1 is late";
  straggler.idle_ns = static_cast<uint64_t>(40 * kMs);
  RankComparison job;
  job.processes = {0, 1};
  job.findings.push_back(straggler);
  b.analysis.rank_comparisons.push_back(job);
  std::vector<RankPair> pairs;
  REQUIRE(matchRanks(a.analysis, b.analysis, pairs).empty());
  const RunDiff diff = diffRuns(a, b, pairs);
  REQUIRE(diff.findings.size() == 1);
  CHECK(diff.findings[0].id == "straggler");
  CHECK(*diff.findings[0].after_idle_per_step_ns == Approx(2 * kMs));  // 40 ms over 20 steps (both ranks')
  CHECK(std::find(diff.changes.begin(), diff.changes.end(),
                  "straggler: new in B, 2.00 ms idle per step (A does not make this finding)") != diff.changes.end());
}
