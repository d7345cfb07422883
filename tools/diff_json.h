// tools/diff_json.h: `gapwatch diff --json`: the comparison as one JSON document
// (docs/report-json.md, "gapwatch diff --json").
#pragma once

#include "analysis/run_diff.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

inline constexpr int kDiffJsonVersion = 1;

// `fail_if_slower`: the --fail-if-slower threshold (a fraction), when given.
void writeDiffJson(const analysis::RunDiff& diff, const std::vector<std::string>& before_files,
                   const std::vector<std::string>& after_files, std::optional<double> fail_if_slower,
                   std::ostream& out);

}  // namespace gapwatch::cli
