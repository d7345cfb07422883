// analysis/duration_percentiles.h: p50/p99 of a stream of durations in bounded memory.
//
// Percentiles are by nearest rank, as the ground truth computes them (docs/scenarios.md: sorted
// values v[0..n-1], p -> v[ceil(p/100 * n) - 1]). The first kExactSamples values are kept as
// they are, so short recordings (and tests) get exact answers; past that the values move into a
// log-linear histogram (64 sub-buckets per power of two) whose answers are within 1% of the true
// value, and memory stays fixed however long the recording is.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gapwatch::analysis {

class DurationPercentiles {
 public:
  static constexpr std::size_t kExactSamples = 4096;

  // Inline: launch statistics add two values per kernel.
  void add(uint64_t value_ns) {
    ++count_;
    if (buckets_.empty()) {
      exact_.push_back(value_ns);
      if (exact_.size() > kExactSamples) spill();
      return;
    }
    ++buckets_[bucketOf(value_ns)];
  }

  uint64_t count() const { return count_; }
  // Nearest-rank percentile, `percent` in (0, 100]; 0 when nothing was added.
  uint64_t percentile(double percent) const;

 private:
  // Values below 2^kLinearBits get a bucket each; above, each power of two is cut into
  // 2^kSubBits buckets, so a bucket is at most 1/64 of its value wide.
  static constexpr unsigned kLinearBits = 7;
  static constexpr unsigned kSubBits = 6;
  static constexpr std::size_t kLinearBuckets = std::size_t{1} << kLinearBits;
  static constexpr std::size_t kBucketCount = kLinearBuckets + (64 - kLinearBits) * (std::size_t{1} << kSubBits);
  static std::size_t bucketOf(uint64_t value) {
    if (value < kLinearBuckets) return static_cast<std::size_t>(value);
    const unsigned exponent = 63 - static_cast<unsigned>(std::countl_zero(value));  // >= kLinearBits
    const uint64_t sub = (value >> (exponent - kSubBits)) & ((uint64_t{1} << kSubBits) - 1);
    return kLinearBuckets + (exponent - kLinearBits) * (std::size_t{1} << kSubBits) + static_cast<std::size_t>(sub);
  }
  static uint64_t bucketMidpoint(std::size_t bucket);
  void spill();

  uint64_t count_ = 0;
  std::vector<uint64_t> exact_;    // while count_ <= kExactSamples
  std::vector<uint64_t> buckets_;  // after that (counts per bucket)
};

}  // namespace gapwatch::analysis
