// analysis/gap_histogram.cpp: see gap_histogram.h.
#include "analysis/gap_histogram.h"

namespace gapwatch {

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
