// analysis/step_timeline.h: step time over the run in bounded memory, for a plot (the HTML
// report's "step time over the run").
//
// Steps are added in order. Each point is the mean of a run of consecutive steps: one step a
// point until kMaxPoints points are held, then neighbouring points merge in pairs and each new
// point takes twice as many steps. So a run of any length keeps at most kMaxPoints points, every
// point the same number of steps but the last, and memory stays fixed.
#pragma once

#include "analysis/analysis_result.h"

#include <cstdint>
#include <vector>

namespace gapwatch::analysis {

class StepTimeline {
 public:
  static constexpr std::size_t kMaxPoints = 256;

  void add(uint64_t start_ns, uint64_t length_ns, uint64_t idle_ns);
  std::vector<StepPoint> points() const;

 private:
  struct Bucket {
    uint64_t start_ns = 0;
    uint32_t steps = 0;
    uint64_t total_ns = 0, idle_ns = 0;
  };
  std::vector<Bucket> buckets_;
  uint32_t steps_per_bucket_ = 1;
};

}  // namespace gapwatch::analysis
