// tools/report_command.cpp: see report_command.h.
#include "tools/report_command.h"

#include "analysis/run_analysis.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/html_page.h"
#include "tools/report_html.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"

#include <algorithm>
#include <sstream>

namespace gapwatch::cli {

analysis::RunReport gatherReport(const ReportOptions& options, std::ostream& err, int& exit_code) {
  exit_code = kExitOk;
  return analysis::analyseRecordingFiles(options.files, options.analysis,
                                         [&](const std::string& file, const ReadResult& read) {
                                           exit_code = std::max(exit_code, printReadOutcome(file, read, err));
                                         });
}

bool writeHtmlReportFile(const analysis::RunReport& content, const std::string& path, std::ostream& err) {
  std::ostringstream html;
  writeHtmlReport(content, html);
  return writeWholeFile(path, html.str(), "gapwatch report: --html ", err);
}

int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  int exit_code = kExitOk;
  const analysis::RunReport content = gatherReport(options, err, exit_code);
  if (!options.html_path.empty() && !writeHtmlReportFile(content, options.html_path, err)) {
    exit_code = std::max(exit_code, kExitCannotWrite);
  }
  if (options.json) {
    writeReportJson(content, out);
  } else {
    writeTerminalReport(content, TerminalStyle{options.colour}, out);
  }
  out.flush();
  return exit_code;
}

}  // namespace gapwatch::cli
