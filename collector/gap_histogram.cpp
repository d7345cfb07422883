// collector/gap_histogram.cpp: see gap_histogram.h.
#include "collector/gap_histogram.h"

#include <bit>

namespace gapwatch {
namespace {

constexpr uint64_t kMicrosecondNs = 1'000;
constexpr uint64_t kSecondNs = 1'000'000'000;

}  // namespace

void GapHistogram::add(uint64_t gap_ns) {
  if (gap_ns == 0) return;
  Bucket& b = buckets_[bucketOf(gap_ns)];
  ++b.count;
  b.total_ns += gap_ns;
  ++count_;
  total_ns_ += gap_ns;
}

std::size_t GapHistogram::bucketOf(uint64_t gap_ns) {
  if (gap_ns >= kSecondNs) return kBucketCount - 1;
  // Whole microseconds: 0 -> bucket 0, [1,2) -> 1, [2,4) -> 2, ... Below 1 s this is < 2^20,
  // so the result is at most 20.
  return static_cast<std::size_t>(std::bit_width(gap_ns / kMicrosecondNs));
}

uint64_t GapHistogram::lowerNs(std::size_t bucket) {
  if (bucket == 0) return 0;
  if (bucket >= kBucketCount - 1) return kSecondNs;
  return kMicrosecondNs << (bucket - 1);
}

uint64_t GapHistogram::upperNs(std::size_t bucket) {
  if (bucket >= kBucketCount - 1) return UINT64_MAX;
  if (bucket == kBucketCount - 2) return kSecondNs;
  return kMicrosecondNs << bucket;
}

}  // namespace gapwatch
