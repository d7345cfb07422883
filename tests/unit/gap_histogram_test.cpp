// tests/unit/gap_histogram_test.cpp: the log2 idle-gap histogram's bucket edges, and what it counts.

#include <catch2/catch.hpp>

#include "analysis/gap_histogram.h"

#include <algorithm>

namespace {

using gapwatch::GapHistogram;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;

}  // namespace

TEST_CASE("idle gaps go into log2 buckets from under 1 us to 1 s and over") {
  CHECK(GapHistogram::bucketOf(1) == 0);
  CHECK(GapHistogram::bucketOf(999) == 0);
  CHECK(GapHistogram::bucketOf(1 * kUs) == 1);
  CHECK(GapHistogram::bucketOf(2 * kUs - 1) == 1);
  CHECK(GapHistogram::bucketOf(2 * kUs) == 2);
  CHECK(GapHistogram::bucketOf(4 * kUs) == 3);
  CHECK(GapHistogram::bucketOf(5 * kUs) == 3);
  CHECK(GapHistogram::bucketOf(524'288 * kUs - 1) == 19);
  CHECK(GapHistogram::bucketOf(524'288 * kUs) == 20);
  CHECK(GapHistogram::bucketOf(kS - 1) == 20);
  CHECK(GapHistogram::bucketOf(kS) == 21);
  CHECK(GapHistogram::bucketOf(3600 * kS) == 21);

  // Every bucket's bounds agree with bucketOf, and the buckets tile [0, infinity).
  for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
    CAPTURE(b);
    CHECK(GapHistogram::bucketOf(std::max<uint64_t>(GapHistogram::lowerNs(b), 1)) == b);
    if (b + 1 < GapHistogram::kBucketCount) {
      CHECK(GapHistogram::bucketOf(GapHistogram::upperNs(b) - 1) == b);
      CHECK(GapHistogram::upperNs(b) == GapHistogram::lowerNs(b + 1));
    }
  }
  CHECK(GapHistogram::upperNs(GapHistogram::kBucketCount - 1) == UINT64_MAX);
}

TEST_CASE("the histogram counts gaps and their time, a thousand small ones beside one large one") {
  GapHistogram h;
  for (int i = 0; i < 1000; ++i) h.add(5 * kUs);
  h.add(5 * kMs);
  h.add(0);  // not a gap
  CHECK(h.count() == 1001);
  CHECK(h.totalNs() == 10 * kMs);
  const GapHistogram::Bucket& small = h.bucket(GapHistogram::bucketOf(5 * kUs));
  CHECK(small.count == 1000);
  CHECK(small.total_ns == 5 * kMs);
  const GapHistogram::Bucket& large = h.bucket(GapHistogram::bucketOf(5 * kMs));
  CHECK(large.count == 1);
  CHECK(large.total_ns == 5 * kMs);
}
