// tools/diff_html.h: `gapwatch diff --html FILE`: the comparison of two runs as one self-contained
// page (tools/html_page.h): the verdict and its test, what changed, a chart of the per-step times
// of both runs side by side, and the tables of the text diff (diff_terminal.h), whose number
// formats it shares.
#pragma once

#include "analysis/run_diff.h"

#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

void writeHtmlDiff(const analysis::RunDiff& diff, const std::vector<std::string>& before_files,
                   const std::vector<std::string>& after_files, std::ostream& out);

}  // namespace gapwatch::cli
