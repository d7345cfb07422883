// analysis/run_diff.cpp: see run_diff.h.
#include "analysis/run_diff.h"

#include "analysis/diagnosis.h"
#include "analysis/quantity_text.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

namespace gapwatch::analysis {

namespace {

// One run's numbers, summed over its ranks (in the order of the rank pairs).
struct RunTotals {
  uint64_t steps = 0;        // StepStats::steps summed over ranks
  bool all_ranks_have_steps = true;
  bool device_timeline = false;
  uint64_t window_ns = 0, idle_ns = 0;
  std::array<uint64_t, kIdleCauseCount> idle_by_cause_ns{};
  std::array<uint64_t, kHostPartCount> host_by_part_ns{};
  uint64_t sync_calls = 0, launches = 0, nccl_ns = 0;
  // The mean step time over ranks (each rank's mean, averaged: synchronised ranks share their step
  // times) and the fewest timed steps of any rank, for the step_time_mean_ns quantity; the
  // step-time test reads the timelines instead (stepSampleOf).
  double step_mean_ns = 0;
  uint64_t timed_steps = std::numeric_limits<uint64_t>::max();
  std::vector<std::vector<StepPoint>> timelines;  // each rank's, for the step-time test
  std::map<std::string, std::pair<uint64_t, std::string>> findings;  // id -> idle ns, title
  std::vector<std::string> finding_order;                            // by idle, as ranked
  std::map<std::string, std::pair<uint64_t, uint64_t>> kernels;      // name -> total ns, runs
};

RunTotals totalsOf(const AnalysisReport& report, const std::vector<int>& processes) {
  RunTotals t;
  for (int index : processes) {
    const ProcessAnalysis& p = report.processes[static_cast<std::size_t>(index)];
    t.steps += p.steps.steps;
    if (p.steps.steps == 0) t.all_ranks_have_steps = false;
    if (p.device_timeline && !p.devices.empty()) t.device_timeline = true;
    for (const DeviceAnalysis& d : p.devices) {
      t.window_ns += d.window_end_ns > d.window_start_ns ? d.window_end_ns - d.window_start_ns : 0;
      t.idle_ns += d.idle_ns;
      for (std::size_t c = 0; c < kIdleCauseCount; ++c) t.idle_by_cause_ns[c] += d.idle_by_cause_ns[c];
      for (std::size_t h = 0; h < kHostPartCount; ++h) t.host_by_part_ns[h] += d.host_cpu_by_part_ns[h];
    }
    for (const SyncTypeStats& s : p.sync_points) t.sync_calls += s.count;
    t.launches += p.launches.launches;
    t.nccl_ns += p.nccl.comm_ns;
    t.step_mean_ns += p.steps.mean_ns / static_cast<double>(processes.size());
    t.timed_steps = std::min(t.timed_steps, p.steps.timed_steps);
    t.timelines.push_back(p.steps.timeline);
    for (const Finding& f : p.findings) {
      auto [it, inserted] = t.findings.try_emplace(f.id, 0, f.title);
      it->second.first += f.idle_ns;
      if (inserted) t.finding_order.push_back(f.id);
    }
    for (const KernelStats& k : p.kernels.top_by_time) {
      auto& [total_ns, runs] = t.kernels[k.name];
      total_ns += k.total_ns;
      runs += k.count;
    }
  }
  // The findings across ranks (a straggler) are the run's, not a rank's: counted once per job.
  for (const RankComparison& job : report.rank_comparisons) {
    for (const Finding& f : job.findings) {
      auto [it, inserted] = t.findings.try_emplace(f.id, 0, f.title);
      it->second.first += f.idle_ns;
      if (inserted) t.finding_order.push_back(f.id);
    }
  }
  if (processes.empty()) t.timed_steps = 0;
  // Findings ranked by their idle summed over ranks (each rank's are ranked on their own).
  std::stable_sort(t.finding_order.begin(), t.finding_order.end(), [&](const std::string& a, const std::string& b) {
    return t.findings.at(a).first > t.findings.at(b).first;
  });
  return t;
}

std::optional<double> perStep(const RunTotals& t, double value) {
  if (t.steps == 0 || !t.all_ranks_have_steps) return std::nullopt;
  return value / static_cast<double>(t.steps);
}

std::optional<double> fractionOfWindow(const RunTotals& t, double value) {
  if (!t.device_timeline || t.window_ns == 0) return std::nullopt;
  return value / static_cast<double>(t.window_ns);
}

std::optional<int32_t> worldSizeOf(const RunReport& run) {
  for (const RecordingOverview& o : run.overviews) {
    if (o.hello && o.hello->has_world_size()) return o.hello->world_size();
  }
  return std::nullopt;
}

std::string signedDuration(double ns) {
  return (ns < 0 ? "-" : "+") + formatDuration(static_cast<uint64_t>(std::llround(std::fabs(ns))));
}

std::string signedPercent(double fraction) { return (fraction < 0 ? "-" : "+") + formatPercent(std::fabs(fraction)); }

std::string durationOf(double ns) { return formatDuration(static_cast<uint64_t>(std::llround(std::max(0.0, ns)))); }

}  // namespace

std::optional<double> DiffQuantity::relativeChange() const {
  if (!known() || *before == 0) return std::nullopt;
  return change() / *before;
}

std::string matchRanks(const AnalysisReport& before, const AnalysisReport& after, std::vector<RankPair>& pairs) {
  pairs.clear();
  const std::size_t a = before.processes.size(), b = after.processes.size();
  if (a == 0 || b == 0) return std::string("run ") + (a == 0 ? "A" : "B") + " has no readable recording or trace";
  if (a != b) {
    return "run A has " + std::to_string(a) + " rank" + (a == 1 ? "" : "s") + " and run B " + std::to_string(b) +
           ": give both runs the same ranks";
  }
  if (a == 1) {
    // One process each: they are the runs, whatever rank they say (one rank's trace of a job
    // against another rank's of the next job is a fair comparison); a rank only when both agree.
    RankPair pair;
    if (before.processes[0].rank == after.processes[0].rank) pair.rank = before.processes[0].rank;
    pair.before_rank = before.processes[0].rank;
    pair.after_rank = after.processes[0].rank;
    pair.before_process = 0;
    pair.after_process = 0;
    pairs.push_back(pair);
    return "";
  }
  std::map<int32_t, int> before_by_rank, after_by_rank;
  for (int side = 0; side < 2; ++side) {
    const AnalysisReport& report = side == 0 ? before : after;
    std::map<int32_t, int>& by_rank = side == 0 ? before_by_rank : after_by_rank;
    const char* name = side == 0 ? "A" : "B";
    for (std::size_t i = 0; i < report.processes.size(); ++i) {
      const std::optional<int32_t>& rank = report.processes[i].rank;
      if (!rank) return std::string("run ") + name + " has a process without a rank: several processes pair by rank";
      if (!by_rank.emplace(*rank, static_cast<int>(i)).second) {
        return std::string("run ") + name + " has rank " + std::to_string(*rank) + " twice";
      }
    }
  }
  for (const auto& [rank, index] : before_by_rank) {
    const auto found = after_by_rank.find(rank);
    if (found == after_by_rank.end()) return "rank " + std::to_string(rank) + " of run A is not in run B";
    RankPair pair;
    pair.rank = rank;
    pair.before_rank = rank;
    pair.after_rank = rank;
    pair.before_process = index;
    pair.after_process = found->second;
    pairs.push_back(pair);
  }
  return "";
}

StepTimeTest welchTest(double before_mean, double before_se, uint64_t before_n, double after_mean, double after_se,
                       uint64_t after_n, double level) {
  StepTimeTest test;
  test.testable = true;
  test.level = level;
  test.before_mean_ns = before_mean;
  test.after_mean_ns = after_mean;
  test.before_se_ns = before_se;
  test.after_se_ns = after_se;
  test.before_steps = before_n;
  test.after_steps = after_n;
  test.change_ns = after_mean - before_mean;
  test.relative_change = before_mean > 0 ? test.change_ns / before_mean : 0.0;
  const double va = before_se * before_se, vb = after_se * after_se;
  const double se = std::sqrt(va + vb);
  if (se == 0) {
    // Steps of exactly equal length on both sides (a simulation without jitter): any difference
    // is beyond the (absent) noise.
    test.t = test.change_ns == 0 ? 0.0
                                 : std::copysign(std::numeric_limits<double>::infinity(), test.change_ns);
    test.dof = static_cast<double>(before_n + after_n - 2);
    test.p_value = test.change_ns == 0 ? 1.0 : 0.0;
  } else {
    test.t = test.change_ns / se;
    const double denominator = (before_n > 1 ? va * va / static_cast<double>(before_n - 1) : 0.0) +
                               (after_n > 1 ? vb * vb / static_cast<double>(after_n - 1) : 0.0);
    test.dof = denominator > 0 ? (va + vb) * (va + vb) / denominator : 1.0;
    // studentUpperTail takes whole degrees of freedom: rounding down gives a heavier tail, so the
    // test never claims more than the data show.
    const auto whole_dof = static_cast<uint32_t>(std::max(1.0, std::floor(std::min(test.dof, 1e6))));
    test.p_value = std::min(1.0, 2.0 * studentUpperTail(std::fabs(test.t), whole_dof));
  }
  test.beyond_noise = test.p_value < level;
  return test;
}

StepSample stepSampleOf(const std::vector<std::vector<StepPoint>>& rank_timelines) {
  StepSample sample;
  // Ranks step together: their timelines are averaged point by point, over the points all have.
  std::size_t points = rank_timelines.empty() ? 0 : std::numeric_limits<std::size_t>::max();
  for (const auto& t : rank_timelines) points = std::min(points, t.size());
  std::vector<double> means(points, 0.0);
  std::vector<uint32_t> steps(points, 0);
  for (std::size_t i = 0; i < points; ++i) {
    for (const auto& t : rank_timelines) means[i] += static_cast<double>(t[i].mean_ns) / static_cast<double>(rank_timelines.size());
    steps[i] = rank_timelines.front()[i].steps;
  }
  // Warm-up: the leading points far longer than the run's median (compiles, first batches).
  std::vector<double> sorted = means;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0.0
                        : sorted.size() % 2 ? sorted[sorted.size() / 2]
                                            : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  std::size_t first = 0;
  while (first < points / 2 && means[first] > kWarmupFactor * median) sample.warmup_steps += steps[first++];
  // The rest, in blocks of consecutive points: kTestBlocks blocks from 16 points on, else one a point.
  const std::size_t left = points - first;
  const std::size_t blocks = left >= 16 ? kTestBlocks : left;
  double total_ns = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t from = first + b * left / blocks, to = first + (b + 1) * left / blocks;
    double block_ns = 0;
    uint64_t block_steps = 0;
    for (std::size_t i = from; i < to; ++i) {
      block_ns += means[i] * steps[i];
      block_steps += steps[i];
    }
    if (block_steps == 0) continue;
    sample.block_means_ns.push_back(block_ns / static_cast<double>(block_steps));
    sample.steps += block_steps;
    total_ns += block_ns;
  }
  sample.mean_ns = sample.steps ? total_ns / static_cast<double>(sample.steps) : 0.0;
  return sample;
}

bool slowerBeyondNoise(const StepTimeTest& test, double threshold) {
  return test.testable && test.beyond_noise && test.change_ns > 0 && test.relative_change > threshold;
}

namespace {

// The step-time test and the verdict (the first line of what changed).
void compareStepTimes(const RunTotals& a, const RunTotals& b, const RunDiffOptions& options, RunDiff& diff) {
  const StepSample sa = stepSampleOf(a.timelines), sb = stepSampleOf(b.timelines);
  // The mean and its standard error from the block means (the blocks are the samples).
  const auto se = [](const StepSample& s) {
    const std::size_t k = s.block_means_ns.size();
    if (k < 2) return 0.0;
    double mean = 0, ss = 0;
    for (double m : s.block_means_ns) mean += m / static_cast<double>(k);
    for (double m : s.block_means_ns) ss += (m - mean) * (m - mean);
    return std::sqrt(ss / static_cast<double>(k - 1) / static_cast<double>(k));
  };
  const auto block_mean = [](const StepSample& s) {
    double mean = 0;
    for (double m : s.block_means_ns) mean += m / static_cast<double>(s.block_means_ns.size());
    return mean;
  };
  if (sa.block_means_ns.size() < 2 || sb.block_means_ns.size() < 2) {
    diff.step_time.level = options.level;
    const bool a_short = sa.block_means_ns.size() < 2;
    const StepSample& s = a_short ? sa : sb;
    diff.step_time.untestable_reason = std::string("run ") + (a_short ? "A" : "B") + " has fewer than two timed steps" +
                                       (s.warmup_steps ? " after its " + std::to_string(s.warmup_steps) + " warm-up steps"
                                                       : std::string()) +
                                       " (on some rank)";
    diff.verdict = "step time not compared: " + diff.step_time.untestable_reason;
  } else {
    diff.step_time = welchTest(block_mean(sa), se(sa), sa.block_means_ns.size(), block_mean(sb), se(sb),
                               sb.block_means_ns.size(), options.level);
    StepTimeTest& t = diff.step_time;
    t.before_mean_ns = sa.mean_ns;
    t.after_mean_ns = sb.mean_ns;
    t.change_ns = sb.mean_ns - sa.mean_ns;
    t.relative_change = sa.mean_ns > 0 ? t.change_ns / sa.mean_ns : 0.0;
    t.before_blocks = sa.block_means_ns.size();
    t.after_blocks = sb.block_means_ns.size();
    t.before_steps = sa.steps;
    t.after_steps = sb.steps;
    t.before_warmup_steps = sa.warmup_steps;
    t.after_warmup_steps = sb.warmup_steps;
    // The verdict's direction follows the test's own difference (of block means); the printed
    // change is of the steps' means, which differ from it only by the blocks' weights.
    if (t.beyond_noise && (t.change_ns > 0) != (block_mean(sb) > block_mean(sa))) t.beyond_noise = false;
    const StepTimeTest& s = diff.step_time;
    const std::string numbers = "mean step time " + durationOf(s.before_mean_ns) + " -> " + durationOf(s.after_mean_ns) +
                                " (" + signedDuration(s.change_ns) + ", " + signedPercent(s.relative_change) + ")";
    if (!s.beyond_noise) {
      diff.verdict = "no change beyond noise: " + numbers + " is within the spread of the step times";
    } else {
      diff.verdict = std::string(s.change_ns > 0 ? "B is slower" : "B is faster") + ": " + numbers +
                     ", beyond the spread of the step times";
    }
  }
  diff.changes.push_back(diff.verdict);
}

// The quantities, in the fixed order of docs/analysis.md, each marked notable or not.
void compareQuantities(const RunTotals& a, const RunTotals& b, const RunDiffOptions& options, RunDiff& diff) {
  const double step_ns = diff.step_time.testable ? diff.step_time.before_mean_ns : 0.0;
  auto add = [&](std::string key, std::string label, std::string unit, std::optional<double> x,
                 std::optional<double> y) {
    DiffQuantity q;
    q.key = std::move(key);
    q.label = std::move(label);
    q.unit = std::move(unit);
    q.before = x;
    q.after = y;
    if (q.unit == "ns" && q.known() && step_ns > 0 && q.key.ends_with("_per_step_ns")) {
      q.notable = std::fabs(q.change()) >= options.notable_share_of_step * step_ns;
    }
    diff.quantities.push_back(std::move(q));
  };
  // Idle per step needs a device timeline; without one the recording has no idle to divide.
  const auto idlePerStep = [](const RunTotals& t, uint64_t ns) {
    return t.device_timeline ? perStep(t, static_cast<double>(ns)) : std::nullopt;
  };
  const auto stepMean = [](const RunTotals& t) {
    return t.timed_steps > 0 ? std::optional<double>(t.step_mean_ns) : std::nullopt;
  };
  add("step_time_mean_ns", "step time (mean)", "ns", stepMean(a), stepMean(b));
  add("steps", "steps", "count", static_cast<double>(a.steps), static_cast<double>(b.steps));
  add("idle_fraction", "idle fraction", "fraction", fractionOfWindow(a, static_cast<double>(a.idle_ns)),
      fractionOfWindow(b, static_cast<double>(b.idle_ns)));
  add("idle_per_step_ns", "idle per step", "ns", idlePerStep(a, a.idle_ns), idlePerStep(b, b.idle_ns));
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
    const std::string cause = idleCauseName(static_cast<IdleCause>(c));
    add("idle_" + cause + "_per_step_ns", cause + " idle per step", "ns", idlePerStep(a, a.idle_by_cause_ns[c]),
        idlePerStep(b, b.idle_by_cause_ns[c]));
  }
  for (std::size_t h = 0; h < kHostPartCount; ++h) {
    const std::string part = hostPartName(static_cast<HostPart>(h));
    add("host_cpu_" + part + "_per_step_ns", "host_cpu idle in " + part + " per step", "ns",
        idlePerStep(a, a.host_by_part_ns[h]), idlePerStep(b, b.host_by_part_ns[h]));
  }
  add("sync_points_per_step", "sync points per step", "count", perStep(a, static_cast<double>(a.sync_calls)),
      perStep(b, static_cast<double>(b.sync_calls)));
  add("launches_per_step", "launches per step", "count", perStep(a, static_cast<double>(a.launches)),
      perStep(b, static_cast<double>(b.launches)));
  add("nccl_per_step_ns", "NCCL time per step", "ns", perStep(a, static_cast<double>(a.nccl_ns)),
      perStep(b, static_cast<double>(b.nccl_ns)));
}

// A value of one run per step when diff.per_step, else as it is.
double normalised(const RunDiff& diff, const RunTotals& t, double value) {
  return diff.per_step ? value / static_cast<double>(t.steps) : value;
}

// Every finding of either run, A's first; a line for each one that went away or appeared.
void compareFindings(const RunTotals& a, const RunTotals& b, RunDiff& diff) {
  const auto idleOf = [&](const RunTotals& t, const std::string& id) -> std::optional<double> {
    const auto found = t.findings.find(id);
    if (found == t.findings.end()) return std::nullopt;
    return normalised(diff, t, static_cast<double>(found->second.first));
  };
  std::vector<std::string> ids = a.finding_order;
  for (const std::string& id : b.finding_order) {
    if (!a.findings.contains(id)) ids.push_back(id);
  }
  const std::string unit = diff.per_step ? " per step" : " in all";
  for (const std::string& id : ids) {
    FindingChange f;
    f.id = id;
    f.title = b.findings.contains(id) ? b.findings.at(id).second : a.findings.at(id).second;
    f.before_idle_per_step_ns = idleOf(a, id);
    f.after_idle_per_step_ns = idleOf(b, id);
    if (f.before_idle_per_step_ns && !f.after_idle_per_step_ns) {
      diff.changes.push_back(id + ": " + durationOf(*f.before_idle_per_step_ns) + " idle" + unit +
                             " in A, gone in B (B does not make this finding)");
    } else if (!f.before_idle_per_step_ns && f.after_idle_per_step_ns) {
      diff.changes.push_back(id + ": new in B, " + durationOf(*f.after_idle_per_step_ns) + " idle" + unit +
                             " (A does not make this finding)");
    }
    diff.findings.push_back(std::move(f));
  }
}

// A line for each notable quantity, after the findings' lines.
void describeNotableQuantities(RunDiff& diff) {
  for (const DiffQuantity& q : diff.quantities) {
    if (!q.notable) continue;
    std::string line = q.label + ": " + durationOf(*q.before) + " -> " + durationOf(*q.after) + " (" +
                       signedDuration(q.change());
    if (const auto relative = q.relativeChange()) line += ", " + signedPercent(*relative);
    diff.changes.push_back(line + ")");
  }
}

// The union of each run's top kernels by device time, with both runs' time and runs.
void compareKernels(const RunTotals& a, const RunTotals& b, const RunDiffOptions& options, RunDiff& diff) {
  const auto topNames = [&](const RunTotals& t) {
    std::vector<std::pair<uint64_t, std::string>> by_time;
    for (const auto& [name, totals] : t.kernels) by_time.emplace_back(totals.first, name);
    // Stable over the names' order: kernels of equal time are listed the same way every time.
    std::stable_sort(by_time.begin(), by_time.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    if (by_time.size() > options.top_kernels) by_time.resize(options.top_kernels);
    return by_time;
  };
  std::set<std::string> listed;
  for (const auto& [ns, name] : topNames(a)) listed.insert(name);
  for (const auto& [ns, name] : topNames(b)) listed.insert(name);
  const auto valueOf = [&](const RunTotals& t, const std::string& name, bool runs) -> std::optional<double> {
    const auto found = t.kernels.find(name);
    if (found == t.kernels.end()) return std::nullopt;
    return normalised(diff, t, static_cast<double>(runs ? found->second.second : found->second.first));
  };
  for (const std::string& name : listed) {
    KernelChange k;
    k.name = name;
    k.before_per_step_ns = valueOf(a, name, false);
    k.after_per_step_ns = valueOf(b, name, false);
    k.before_runs_per_step = valueOf(a, name, true);
    k.after_runs_per_step = valueOf(b, name, true);
    diff.kernels.push_back(std::move(k));
  }
  std::stable_sort(diff.kernels.begin(), diff.kernels.end(), [](const KernelChange& x, const KernelChange& y) {
    return std::max(x.before_per_step_ns.value_or(0), x.after_per_step_ns.value_or(0)) >
           std::max(y.before_per_step_ns.value_or(0), y.after_per_step_ns.value_or(0));
  });
}

}  // namespace

RunDiff diffRuns(const RunReport& before, const RunReport& after, const std::vector<RankPair>& pairs,
                 const RunDiffOptions& options) {
  RunDiff diff;
  diff.ranks = pairs;
  std::vector<int> before_processes, after_processes;
  for (RankPair& pair : diff.ranks) {
    before_processes.push_back(pair.before_process);
    after_processes.push_back(pair.after_process);
    // The files are parallel to the processes, which a file without anything to show has not.
    const auto fileOf = [](const RunReport& run, int process) {
      return static_cast<std::size_t>(process) < run.files.size() ? run.files[static_cast<std::size_t>(process)]
                                                                  : std::string();
    };
    pair.before_file = fileOf(before, pair.before_process);
    pair.after_file = fileOf(after, pair.after_process);
  }
  const RunTotals a = totalsOf(before.analysis, before_processes);
  const RunTotals b = totalsOf(after.analysis, after_processes);

  compareStepTimes(a, b, options, diff);
  diff.before_world_size = worldSizeOf(before);
  diff.after_world_size = worldSizeOf(after);
  if (diff.before_world_size && diff.after_world_size && *diff.before_world_size != *diff.after_world_size) {
    diff.changes.push_back("world size: " + std::to_string(*diff.before_world_size) + " ranks in A, " +
                           std::to_string(*diff.after_world_size) +
                           " in B: jobs of different sizes, so per-rank numbers are not like for like");
  }
  compareQuantities(a, b, options, diff);
  // Findings and kernels per step when both runs have steps on every rank, else totals.
  diff.per_step = a.steps > 0 && b.steps > 0 && a.all_ranks_have_steps && b.all_ranks_have_steps;
  compareFindings(a, b, diff);
  describeNotableQuantities(diff);
  compareKernels(a, b, options, diff);
  return diff;
}

}  // namespace gapwatch::analysis
