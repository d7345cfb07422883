// The step timeline behind the HTML report's step-time plot: every step in order while they fit,
// then pairs merged, never more than kMaxPoints points, the means and idle exact.
#include "analysis/step_timeline.h"

#include <catch2/catch.hpp>

using gapwatch::analysis::StepPoint;
using gapwatch::analysis::StepTimeline;

TEST_CASE("each step is a point of its own while they fit") {
  StepTimeline timeline;
  timeline.add(0, 100, 10);
  timeline.add(100, 300, 0);
  const std::vector<StepPoint> points = timeline.points();
  REQUIRE(points.size() == 2);
  CHECK(points[0].start_ns == 0);
  CHECK(points[0].steps == 1);
  CHECK(points[0].mean_ns == 100);
  CHECK(points[0].idle_fraction == Approx(0.1));
  CHECK(points[1].start_ns == 100);
  CHECK(points[1].mean_ns == 300);
  CHECK(points[1].idle_fraction == 0);
}

TEST_CASE("a long run keeps at most kMaxPoints points, each the mean of its consecutive steps") {
  StepTimeline timeline;
  const uint64_t steps = 10 * StepTimeline::kMaxPoints + 3;
  for (uint64_t i = 0; i < steps; ++i) timeline.add(i * 1000, i < steps / 2 ? 1000 : 3000, i < steps / 2 ? 0 : 1500);
  const std::vector<StepPoint> points = timeline.points();
  REQUIRE(points.size() <= StepTimeline::kMaxPoints);
  REQUIRE(points.size() > StepTimeline::kMaxPoints / 4);
  uint64_t counted = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    counted += points[i].steps;
    if (i + 1 < points.size()) CHECK(points[i].steps == points[0].steps);  // all full but the last
    if (i > 0) CHECK(points[i].start_ns > points[i - 1].start_ns);
  }
  CHECK(counted == steps);
  CHECK(points.front().mean_ns == 1000);
  CHECK(points.front().idle_fraction == 0);
  CHECK(points.back().mean_ns == 3000);
  CHECK(points.back().idle_fraction == Approx(0.5));
}
