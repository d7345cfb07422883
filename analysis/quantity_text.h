// analysis/quantity_text.h: how durations, counts and shares read in gapwatch's output.
//
// One implementation for everything a person reads: the diagnosis writes its evidence with these
// (Finding::evidence holds the values as printed), and the command line's text output
// (tools/text_format.h) uses the same functions, so a number reads the same in a finding and in
// the table beside it.
#pragma once

#include <cstdint>
#include <string>

namespace gapwatch {

// A duration, three significant digits: "812 ns", "4.10 us", "12.3 ms", "2.50 s", "12 min 05 s",
// "3 h 02 min".
std::string formatDuration(uint64_t ns);

// 1234567 -> "1,234,567".
std::string formatCount(uint64_t n);

// 0.7361 -> "73.6%".
std::string formatPercent(double fraction);

// 0.7361 -> "74%", for shares in a sentence; "<1%" for a share that is not zero but rounds to 0,
// and never "100%" for a share below 1 (it says "99%"), so a rounded share does not claim "all".
std::string formatWholePercent(double fraction);

}  // namespace gapwatch
