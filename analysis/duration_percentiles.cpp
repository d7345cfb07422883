// analysis/duration_percentiles.cpp: see duration_percentiles.h.
#include "analysis/duration_percentiles.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace gapwatch::analysis {
namespace {

// 1-based nearest rank of `percent` among n values.
uint64_t nearestRank(double percent, uint64_t n) {
  const double exact = percent / 100.0 * static_cast<double>(n);
  auto rank = static_cast<uint64_t>(std::ceil(exact - 1e-9));
  return std::clamp<uint64_t>(rank, 1, n);
}

}  // namespace

uint64_t DurationPercentiles::bucketMidpoint(std::size_t bucket) {
  if (bucket < kLinearBuckets) return bucket;
  const std::size_t rest = bucket - kLinearBuckets;
  const unsigned exponent = kLinearBits + static_cast<unsigned>(rest >> kSubBits);
  const uint64_t sub = rest & ((std::size_t{1} << kSubBits) - 1);
  const uint64_t width = uint64_t{1} << (exponent - kSubBits);
  const uint64_t low = (uint64_t{1} << exponent) + sub * width;
  return low + width / 2;
}

void DurationPercentiles::spill() {
  buckets_.assign(kBucketCount, 0);
  for (uint64_t v : exact_) ++buckets_[bucketOf(v)];
  std::vector<uint64_t>().swap(exact_);
}

uint64_t DurationPercentiles::percentile(double percent) const {
  if (count_ == 0) return 0;
  const uint64_t rank = nearestRank(percent, count_);
  if (buckets_.empty()) {
    std::vector<uint64_t> sorted = exact_;
    auto nth = sorted.begin() + static_cast<std::ptrdiff_t>(rank - 1);
    std::nth_element(sorted.begin(), nth, sorted.end());
    return *nth;
  }
  uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= rank) return bucketMidpoint(b);
  }
  return bucketMidpoint(buckets_.size() - 1);
}

}  // namespace gapwatch::analysis
