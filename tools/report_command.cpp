// tools/report_command.cpp: see report_command.h.
#include "tools/report_command.h"

#include "analysis/run_analysis.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"

#include <algorithm>

namespace gapwatch::cli {

analysis::RunReport gatherReport(const ReportOptions& options, std::ostream& err, int& exit_code) {
  exit_code = kExitOk;
  return analysis::analyseRecordingFiles(options.files, options.analysis,
                                         [&](const std::string& file, const ReadResult& read) {
                                           exit_code = std::max(exit_code, printReadOutcome(file, read, err));
                                         });
}

int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  int exit_code = kExitOk;
  const analysis::RunReport content = gatherReport(options, err, exit_code);
  if (options.json) {
    writeReportJson(content, out);
  } else {
    writeTerminalReport(content, TerminalStyle{options.colour}, out);
  }
  out.flush();
  return exit_code;
}

}  // namespace gapwatch::cli
