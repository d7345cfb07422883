// tools/export_command.h: `gapwatch export --format perfetto|chrome|kineto FILE... -o OUT`:
// recordings and PyTorch profiler traces written as a trace that Perfetto, chrome://tracing or
// HTA open. The export itself is export/trace_export.h; this is its arguments and output file.
#pragma once

#include "analysis/analysis_result.h"

#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

struct ExportOptions {
  std::string format = "perfetto";  // perfetto, chrome, kineto
  std::vector<std::string> files;
  std::string output;  // .json.gz is gzip-compressed (chrome, kineto)
  analysis::AnalysisOptions analysis;
};

// Returns the exit code (exit_codes.h); one line on `err` for each problem.
int runExport(const ExportOptions& options, std::ostream& err);

}  // namespace gapwatch::cli
