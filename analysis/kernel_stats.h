// analysis/kernel_stats.h: which kernels took the device's time, and which were too short.
//
// A report that says "launch overhead" or "a stall" should also say which kernels: the reader
// looks for them in the code. This stage sums, per kernel name (an interned string id), the runs
// of positive length: count, total device time, median (a small log-linear histogram per name,
// within 2 %; exact when all runs are equal, as it is clamped to the runs' min and max), runs
// under 20 us, and runs shorter than the launch call (cudaLaunchKernel, joined by correlation id)
// that queued them: HTA's short-kernel test without its runtime cutoff. A name is *short* when
// most of its runs are either. It writes the top_n names by total device time, and the top_n
// short names by count (KernelTable). Busy time (the union of kernels, copies and memsets per
// device) is the stage's own, for the names' share of it.
// Memory: one entry per distinct kernel name (its histogram holds only the buckets its runs hit),
// plus the correlation index of calls whose kernel has not run yet (bounded by age).
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/correlation_index.h"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gapwatch::analysis {

// A run-time histogram small enough to keep one per kernel name: 32 buckets per power of two
// (each at most 1/32 of its values wide), stored sparsely, as the runs of one kernel cluster.
class CompactDurations {
 public:
  void add(uint64_t ns);
  // The median by nearest rank: the middle of the bucket that holds it, clamped to [min, max].
  uint64_t median() const;
  uint64_t count() const { return count_; }
  uint64_t min() const { return min_; }
  uint64_t max() const { return max_; }
  std::size_t buckets() const { return buckets_.size(); }

  static uint32_t bucketOf(uint64_t ns);
  static uint64_t lowerOf(uint32_t bucket);
  static uint64_t upperOf(uint32_t bucket);  // exclusive

 private:
  std::vector<std::pair<uint32_t, uint64_t>> buckets_;  // (bucket, count), by bucket
  uint64_t count_ = 0, min_ = 0, max_ = 0;
};

// A kernel's name as a report line can hold it: demangled when mangled ("_Z..."), without "void ",
// the argument list and namespace qualifiers, template arguments kept to their first level
// (deeper ones "<...>"), cut to `max_chars` with "...". Names that are not C++ signatures stay.
std::string shortKernelName(const std::string& name, std::size_t max_chars = 70);

class KernelStatsStage final : public AnalysisStage {
 public:
  static constexpr uint64_t kShortKernelNs = 20'000;

  explicit KernelStatsStage(const AnalysisOptions& options);

  void begin(const RecordingFacts& facts) override { facts_ = facts; }
  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  // Writes `kernels`.
  void contribute(ProcessAnalysis& result) override { write(result); }
  void snapshot(ProcessAnalysis& result) const override { write(result); }

  std::size_t distinctNames() const { return by_name_.size(); }

 private:
  struct Entry {
    uint64_t total_ns = 0;
    uint64_t under_20us = 0;
    uint64_t shorter_than_launch = 0;
    CompactDurations durations;
  };
  struct Busy {
    uint64_t covered_until_ns = 0;
    uint64_t busy_ns = 0;
    bool any = false;
  };

  void write(ProcessAnalysis& result) const;
  KernelStats statsOf(uint32_t name_id, const Entry& entry, uint64_t busy_ns) const;

  AnalysisOptions options_;
  RecordingFacts facts_;
  const StringTable* strings_ = nullptr;
  CorrelationIndex queued_by_;
  std::unordered_map<uint32_t, Entry> by_name_;  // nodes do not move: last_ stays valid
  uint32_t last_name_id_ = 0;
  Entry* last_ = nullptr;
  std::map<uint32_t, Busy> busy_;  // per device
  uint64_t kernels_ = 0;
  uint64_t total_ns_ = 0;
  uint64_t calls_since_expire_ = 0;
};

}  // namespace gapwatch::analysis
