// tools/report_json.h: `gapwatch report --json FILE...`: the report as one JSON document.
//
// The same content as the text report (analysis/run_analysis.h), for CI scripts that assert on it:
// "gapwatch_report_version": 1, the options and thresholds the run used, per input file what was
// read, per process the device windows with idle by cause and the full gap histogram, sync points,
// launch statistics, NCCL, steps and the ranked findings with their evidence as text and as
// numbers, then the cross-rank waits and findings. The format is documented field by field in
// docs/report-json.md; within version 1 keys are only ever added, never renamed or removed.
#pragma once

#include "analysis/run_analysis.h"

#include <nlohmann/json.hpp>

#include <ostream>

namespace gapwatch::cli {

inline constexpr int kReportJsonVersion = analysis::AnalysisReport::kJsonVersion;

nlohmann::ordered_json reportJson(const analysis::RunReport& content);

// The document, indented by two spaces, and a newline.
void writeReportJson(const analysis::RunReport& content, std::ostream& out);

}  // namespace gapwatch::cli
