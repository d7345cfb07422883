// tools/diff_command.h: `gapwatch diff [--json] [--fail-if-slower P%] A B`: analyses two runs as
// `gapwatch report` does (each a recording or trace, or a directory of them, one per rank), pairs
// their ranks, and writes the comparison of analysis/run_diff.h as text (diff_terminal.h) or as
// one JSON document (diff_json.h).
#pragma once

#include "analysis/analysis_result.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

struct DiffOptions {
  std::string before, after;  // run A and run B: a file or a directory
  bool json = false;
  std::string html_path;  // also write the comparison as one HTML page there (diff_html.h)
  // --fail-if-slower: exit kExitSlower when B's mean step time is slower than A's by more than
  // this fraction (0.05 for 5%) and beyond noise.
  std::optional<double> fail_if_slower;
  analysis::AnalysisOptions analysis;
};

// "5%", "5" or "0.5%" -> 0.05, 0.05, 0.005; nullopt for anything else (negative included).
std::optional<double> parsePercent(const std::string& text);


int runDiff(const DiffOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gapwatch::cli
