// tools/report_content.h: everything `gapwatch report` shows, gathered before a line is written.
//
// The terminal text (report_terminal.h) and the JSON document (report_json.h) are two views of the
// same content, so they cannot disagree: the analysis of every recording (with its findings), the
// cross-rank analysis when several recordings are given, and per file what was read.
#pragma once

#include "collector/analysis/analysis_result.h"
#include "tools/recording_overview.h"

#include <string>
#include <vector>

namespace gapwatch::cli {

// One file of the command line and what became of it.
struct ReportInput {
  std::string file;
  // "ok", "truncated" (reported up to the last whole frame), "error" (not reported, or only the
  // frames before a corrupt one: then `process` is set too).
  std::string status;
  std::string message;  // the error or notice line, without the file name; "" when ok
  int process = -1;     // index into ReportContent::analysis.processes, -1 when not reported
};

struct ReportContent {
  analysis::AnalysisReport analysis;
  std::vector<RecordingOverview> overviews;  // parallel to analysis.processes
  std::vector<std::string> files;            // parallel to analysis.processes
  std::vector<ReportInput> inputs;           // every file given, in order
};

}  // namespace gapwatch::cli
