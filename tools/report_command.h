// tools/report_command.h: `gapwatch report FILE...`, the basic report of each recording.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

struct ReportOptions {
  std::vector<std::string> files;
};

// Reports every file, even after one fails; returns the worst exit code (exit_codes.h).
int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gapwatch::cli
