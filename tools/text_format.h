// tools/text_format.h: how numbers, times and recorded strings look in gapwatch's text output.
//
// Recorded strings (host names, command lines, kernel names) are untrusted: printable() makes sure
// none of them can move the cursor or change a terminal's state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gapwatch::cli {

// A duration for people, three significant digits: "812 ns", "4.10 us", "12.3 ms", "2.50 s",
// "12 min 05 s", "3 h 02 min".
std::string formatDuration(uint64_t ns);

// A duration to the nanosecond, in microseconds: "4.100us", "0.012us", "1200000.000us".
std::string formatExactMicros(uint64_t ns);

// `ns - reference_ns` in seconds to the nanosecond, signed: "+0.000012000", "-1.500000000".
std::string formatRelativeSeconds(uint64_t ns, uint64_t reference_ns);

// 1234567 -> "1,234,567".
std::string formatCount(uint64_t n);

// 0.7361 -> "73.6%".
std::string formatPercent(double fraction);

// The text with control characters (C0, DEL, C1) and backslashes written as escapes.
std::string printable(std::string_view text);

// printable(text) in double quotes, with inner quotes escaped.
std::string quoteText(std::string_view text);

}  // namespace gapwatch::cli
