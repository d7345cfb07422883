// analysis/diagnosis_numbers.h: small helpers that the diagnosis (diagnosis.cpp) and the findings'
// evidence (findings.cpp) both read the analysis with. Internal to analysis/.
#pragma once

#include "analysis/analysis_result.h"
#include "analysis/gap_histogram.h"
#include "analysis/quantity_text.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace gapwatch::analysis::diagnosis_numbers {

inline constexpr std::size_t kHostCpu = static_cast<std::size_t>(IdleCause::kHostCpu);
inline constexpr std::size_t kLaunch = static_cast<std::size_t>(IdleCause::kLaunchOverhead);
inline constexpr std::size_t kSyncCopy = static_cast<std::size_t>(IdleCause::kSyncCopy);
inline constexpr std::size_t kCudaApi = static_cast<std::size_t>(IdleCause::kCudaApi);
inline constexpr std::size_t kNcclHost = static_cast<std::size_t>(IdleCause::kNcclHost);
inline constexpr std::size_t kDependency = static_cast<std::size_t>(IdleCause::kDependency);
inline constexpr std::size_t kInputPart = static_cast<std::size_t>(HostPart::kInputPipeline);

// "Long" gaps, for the typical gap a stall is measured against: the log2 buckets from 1.02 ms
// on. Below that, gaps are launch and sync noise that would make every host pause look like a
// stall.
inline constexpr std::size_t kFirstLongBucket = 11;  // [1.024 ms, 2.048 ms)
// kLongGapNs (analysis_result.h) is this bucket's lower bound.

inline uint64_t gapLength(const IdleGap& gap) { return gap.end_ns - gap.start_ns; }

inline double ratio(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

inline const SyncTypeStats* syncStats(const ProcessAnalysis& process, SyncPointKind kind) {
  for (const SyncTypeStats& s : process.sync_points) {
    if (s.kind == kind) return &s;
  }
  return nullptr;
}

// The bucket holding the median of the gaps in buckets [first, last]; kBucketCount when none.
inline std::size_t medianBucket(const GapHistogram& gaps, std::size_t first) {
  uint64_t n = 0;
  for (std::size_t b = first; b < GapHistogram::kBucketCount; ++b) n += gaps.bucket(b).count;
  if (n == 0) return GapHistogram::kBucketCount;
  const uint64_t rank = (n + 1) / 2;
  uint64_t seen = 0;
  for (std::size_t b = first; b < GapHistogram::kBucketCount; ++b) {
    seen += gaps.bucket(b).count;
    if (seen >= rank) return b;
  }
  return GapHistogram::kBucketCount - 1;
}

inline std::string bucketRangeText(std::size_t b) {
  if (b + 1 >= GapHistogram::kBucketCount) return formatDuration(GapHistogram::lowerNs(b)) + " or more";
  return formatDuration(GapHistogram::lowerNs(b)) + " - " + formatDuration(GapHistogram::upperNs(b));
}

}  // namespace gapwatch::analysis::diagnosis_numbers
