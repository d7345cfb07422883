// analysis/gap_histogram.h: idle gaps by length, in log2 buckets, with count and total time.
//
// Time-weighted as well as counted, so that a thousand 5 us gaps and one 5 ms gap both show
// (ARCHITECTURE.md section 6). Buckets: 0 is [0, 1 us); bucket k in 1..20 is [2^(k-1), 2^k) us,
// except that bucket 20 stops at 1 s, [524.288 ms, 1 s); bucket 21 is [1 s, infinity).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace gapwatch {

class GapHistogram {
 public:
  static constexpr std::size_t kBucketCount = 22;

  struct Bucket {
    uint64_t count = 0;
    uint64_t total_ns = 0;
  };

  // Counts one gap. Zero-length gaps are not gaps and are ignored. (Inline: the analysis engine
  // adds one per idle gap and per launch.)
  void add(uint64_t gap_ns) {
    if (gap_ns == 0) return;
    Bucket& b = buckets_[bucketOf(gap_ns)];
    ++b.count;
    b.total_ns += gap_ns;
    ++count_;
    total_ns_ += gap_ns;
  }

  static std::size_t bucketOf(uint64_t gap_ns) {
    if (gap_ns >= kSecondNs) return kBucketCount - 1;
    // Whole microseconds: 0 -> bucket 0, [1,2) -> 1, [2,4) -> 2, ... Below 1 s this is < 2^20,
    // so the result is at most 20.
    return static_cast<std::size_t>(std::bit_width(gap_ns / kMicrosecondNs));
  }
  // [lowerNs, upperNs) of a bucket; the last bucket's upper bound is UINT64_MAX.
  static uint64_t lowerNs(std::size_t bucket);
  static uint64_t upperNs(std::size_t bucket);

  const Bucket& bucket(std::size_t index) const { return buckets_[index]; }
  // Takes out the gaps of `earlier`, a copy of this histogram taken before (the first pass's
  // from the whole window's: what came after it).
  void subtract(const GapHistogram& earlier) {
    for (std::size_t b = 0; b < kBucketCount; ++b) {
      buckets_[b].count -= std::min(buckets_[b].count, earlier.buckets_[b].count);
      buckets_[b].total_ns -= std::min(buckets_[b].total_ns, earlier.buckets_[b].total_ns);
    }
    count_ -= std::min(count_, earlier.count_);
    total_ns_ -= std::min(total_ns_, earlier.total_ns_);
  }
  uint64_t count() const { return count_; }
  uint64_t totalNs() const { return total_ns_; }

 private:
  static constexpr uint64_t kMicrosecondNs = 1'000;
  static constexpr uint64_t kSecondNs = 1'000'000'000;

  std::array<Bucket, kBucketCount> buckets_{};
  uint64_t count_ = 0;
  uint64_t total_ns_ = 0;
};

}  // namespace gapwatch
