// analysis/sequence_period.cpp: see sequence_period.h.
#include "analysis/sequence_period.h"

#include <algorithm>

namespace gapwatch::analysis {
namespace {

// A shift that disagrees on more than this share of positions is no period at all.
constexpr double kMaxMismatchRate = 0.2;
// A longer shift must agree clearly better to beat a shorter one: its multiples agree exactly as
// well on a clean periodic sequence, and about as well when noise (streams interleaving
// differently from step to step) breaks some positions under every shift.
constexpr double kMismatchSlackFactor = 1.25;
constexpr double kMismatchSlackAbsolute = 0.002;
// Sampled pre-check of a shift: every kSampleStride-th position, when there are many.
constexpr std::size_t kSampleStride = 61;
constexpr std::size_t kSampleFrom = 4096;

}  // namespace


std::optional<SequencePeriod> findSequencePeriod(const std::vector<uint32_t>& names, std::size_t min_repetitions) {
  const std::size_t n = names.size();
  const std::size_t max_period = n / std::max<std::size_t>(min_repetitions, 2);
  std::vector<SequencePeriod> fits;
  for (std::size_t p = 1; p <= max_period; ++p) {
    const std::size_t compared = n - p;
    if (compared >= kSampleFrom) {
      std::size_t sampled = 0, sampled_mismatches = 0;
      for (std::size_t i = 0; i < compared; i += kSampleStride) {
        ++sampled;
        sampled_mismatches += names[i] != names[i + p];
      }
      if (sampled_mismatches * 2 > sampled) continue;
    }
    const auto budget = static_cast<std::size_t>(kMaxMismatchRate * static_cast<double>(compared));
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < compared && mismatches <= budget; ++i) mismatches += names[i] != names[i + p];
    if (mismatches <= budget) {
      fits.push_back({p, static_cast<double>(mismatches) / static_cast<double>(compared)});
    }
  }
  if (fits.empty()) return std::nullopt;
  double best = 1;
  for (const SequencePeriod& fit : fits) best = std::min(best, fit.mismatch_rate);
  const double acceptable = std::max(best * kMismatchSlackFactor, best + kMismatchSlackAbsolute);
  for (const SequencePeriod& fit : fits) {
    if (fit.mismatch_rate <= acceptable) return fit;
  }
  return std::nullopt;
}

}  // namespace gapwatch::analysis
