// tools/diff_terminal.h: `gapwatch diff`'s text: the verdict, what changed, then the numbers of
// both runs side by side (docs/usage.md, "Comparing runs").
#pragma once

#include "analysis/run_diff.h"

#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

// How the diff's numbers read, in text and on the HTML page alike: a value in its unit ("12.3 ms",
// "41.2%", "1,234"), "-" for none, and a change ("+1.20 ms (+9.8%)", "-3.1 points").
std::string diffValueText(double value, const std::string& unit);
std::string diffOptionalText(const std::optional<double>& value, const std::string& unit);
std::string diffChangeText(const analysis::DiffQuantity& q);

void writeTerminalDiff(const analysis::RunDiff& diff, const std::vector<std::string>& before_files,
                       const std::vector<std::string>& after_files, std::ostream& out);

}  // namespace gapwatch::cli
