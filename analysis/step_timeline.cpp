// analysis/step_timeline.cpp: see step_timeline.h.
#include "analysis/step_timeline.h"

namespace gapwatch::analysis {

void StepTimeline::add(uint64_t start_ns, uint64_t length_ns, uint64_t idle_ns) {
  if (buckets_.empty() || buckets_.back().steps >= steps_per_bucket_) {
    if (buckets_.size() == kMaxPoints) {
      // Full: pairs merge into one, halving the points; a bucket holds twice the steps from now.
      std::size_t out = 0;
      for (std::size_t i = 0; i < buckets_.size(); i += 2) {
        Bucket merged = buckets_[i];
        if (i + 1 < buckets_.size()) {
          merged.steps += buckets_[i + 1].steps;
          merged.total_ns += buckets_[i + 1].total_ns;
          merged.idle_ns += buckets_[i + 1].idle_ns;
        }
        buckets_[out++] = merged;
      }
      buckets_.resize(out);
      steps_per_bucket_ *= 2;
    }
    if (buckets_.empty() || buckets_.back().steps >= steps_per_bucket_) buckets_.push_back(Bucket{start_ns, 0, 0, 0});
  }
  Bucket& bucket = buckets_.back();
  ++bucket.steps;
  bucket.total_ns += length_ns;
  bucket.idle_ns += idle_ns;
}

std::vector<StepPoint> StepTimeline::points() const {
  std::vector<StepPoint> points;
  points.reserve(buckets_.size());
  for (const Bucket& b : buckets_) {
    StepPoint p;
    p.start_ns = b.start_ns;
    p.steps = b.steps;
    p.mean_ns = b.steps ? b.total_ns / b.steps : 0;
    p.idle_fraction = b.total_ns ? static_cast<double>(b.idle_ns) / static_cast<double>(b.total_ns) : 0;
    points.push_back(p);
  }
  return points;
}

}  // namespace gapwatch::analysis
