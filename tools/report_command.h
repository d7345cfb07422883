// tools/report_command.h: `gapwatch report [--json] [--top N] [--min-gap D] [--launch-threshold D]
// [--input-pipeline-frames PATTERN]... FILE...`: analyses each recording (one per process or rank),
// diagnoses why the GPU was idle, and writes the report as text (report_terminal.h) or as one JSON
// document (report_json.h).
#pragma once

#include "analysis/analysis_result.h"
#include "analysis/run_analysis.h"

#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

struct ReportOptions {
  std::vector<std::string> files;
  bool json = false;
  bool colour = false;  // ANSI colour in the text report (main decides: a terminal, no NO_COLOR)
  std::string html_path;  // also write the HTML report there (report_html.h); "" for none
  analysis::AnalysisOptions analysis;
};

// Reads and analyses every file (analysis::analyseRecordingFiles), printing how each read went.
// Error and notice lines go to `err`; `exit_code` receives the worst code (exit_codes.h).
analysis::RunReport gatherReport(const ReportOptions& options, std::ostream& err, int& exit_code);

// Writes the HTML report to `path`, whole or not at all (gapwatch/output_file.h: a temporary file
// renamed into place, synced). False, with one line on `err`, when it cannot.
bool writeHtmlReportFile(const analysis::RunReport& content, const std::string& path, std::ostream& err);

// The operands as files: a directory becomes its recordings and traces (run_files.h), gapwatch's own
// reports and log named among them are skipped with a note. False, with one line, when nothing is left
// or a directory holds nothing to read. `command` begins each line.
bool expandRunOperands(std::vector<std::string>& files, std::ostream& err, const std::string& command = "gapwatch report");

// expandRunOperands, gatherReport, then the report on `out` (and the HTML file with html_path);
// returns the exit code.
int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gapwatch::cli
