// tools/report_command.cpp: see report_command.h.
#include "tools/report_command.h"

#include "analysis/run_analysis.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/html_page.h"
#include "tools/report_html.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"
#include "tools/run_files.h"
#include "tools/text_format.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
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

bool expandRunOperands(std::vector<std::string>& files, std::ostream& err, const std::string& command) {
  std::vector<std::string> expanded;
  for (const std::string& operand : files) {
    std::error_code ec;
    if (std::filesystem::is_directory(operand, ec)) {
      std::vector<std::string> in_dir;
      std::string error;
      if (!runFiles(operand, in_dir, error)) {
        err << command << ": " << error << '\n';
        return false;
      }
      expanded.insert(expanded.end(), in_dir.begin(), in_dir.end());
    } else if (isGapwatchOutput(operand)) {
      // `report DIR/*` names the reports and the log beside the recordings too.
      err << command << ": note: skipped " << printable(operand) << ": gapwatch's own output, not a recording\n";
    } else {
      expanded.push_back(operand);
    }
  }
  if (expanded.empty()) {
    err << command << ": no recording or trace among the files given\n";
    return false;
  }
  files = std::move(expanded);
  return true;
}

int runReport(const ReportOptions& given, std::ostream& out, std::ostream& err) {
  ReportOptions options = given;
  // Before anything is read or printed: a report is not printed whole only to fail at the end.
  if (!options.html_path.empty() && !outputPathUsable(options.html_path, "gapwatch report: --html ", err))
    return kExitCannotWrite;
  if (!expandRunOperands(options.files, err)) return kExitBadRecording;
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
