// tools/text_format.h: how numbers, times and recorded strings look in gapwatch's text output.
//
// Recorded strings (host names, command lines, kernel names) are untrusted: printable() makes sure
// none of them can move the cursor or change a terminal's state.
#pragma once

#include "analysis/quantity_text.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gapwatch::cli {

// Durations ("12.3 ms"), counts ("1,234,567") and shares ("73.6%") read the same everywhere:
// they come from analysis/quantity_text.h, which the diagnosis's evidence uses too.
using gapwatch::formatCount;
using gapwatch::formatDuration;
using gapwatch::formatPercent;
using gapwatch::formatWholePercent;

// A duration to the nanosecond, in microseconds: "4.100us", "0.012us", "1200000.000us".
std::string formatExactMicros(uint64_t ns);

// `ns - reference_ns` in seconds to the nanosecond, signed: "+0.000012000", "-1.500000000".
std::string formatRelativeSeconds(uint64_t ns, uint64_t reference_ns);

// The text with control characters (C0, DEL, C1), backslashes and bytes that begin no valid UTF-8
// sequence (gapwatch/utf8_text.h) written as escapes: what is printed is valid UTF-8.
std::string printable(std::string_view text);

// The candidate nearest `word` by edit distance, when near enough to be a typo of it (at most 2
// edits, fewer for short words), else "": `gapwatch reprot` -> "report".
std::string nearestWord(std::string_view word, const std::vector<std::string>& candidates);

// printable(text) in double quotes, with inner quotes escaped.
std::string quoteText(std::string_view text);

}  // namespace gapwatch::cli
