// analysis/sequence_period.h: the period of a sequence of kernel names, the heart of step detection
// without markers (step_detector.h says why the best-agreeing shift is the training step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gapwatch::analysis {

// The steady-state period of a sequence of kernel name ids (see the header comment), or nullopt
// when no shift of at most size / min_repetitions agrees on at least 80% of positions.
struct SequencePeriod {
  std::size_t period = 0;
  double mismatch_rate = 0;  // share of positions i with names[i] != names[i + period]
};
std::optional<SequencePeriod> findSequencePeriod(const std::vector<uint32_t>& names, std::size_t min_repetitions = 3);

}  // namespace gapwatch::analysis
