// tools/diff_terminal.h: `gapwatch diff`'s text: the verdict, what changed, then the numbers of
// both runs side by side (docs/usage.md, "Comparing runs").
#pragma once

#include "analysis/run_diff.h"

#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

void writeTerminalDiff(const analysis::RunDiff& diff, const std::vector<std::string>& before_files,
                       const std::vector<std::string>& after_files, std::ostream& out);

}  // namespace gapwatch::cli
