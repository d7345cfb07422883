// tools/report_command.cpp: see report_command.h.
#include "tools/report_command.h"

#include "analysis/run_analysis.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "collector/output_file.h"
#include "tools/report_html.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

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
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) {
    err << "gapwatch report: --html " << path << ": not a file name\n";
    return false;
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    err << "gapwatch report: --html " << path << ": cannot open its directory: " << strerror(errno) << '\n';
    return false;
  }
  std::ostringstream html;
  writeHtmlReport(content, html);
  std::string error;
  const bool written = collector::replaceOutputFile(dir_fd, name, html.str(), &error);
  ::close(dir_fd);
  if (!written) err << "gapwatch report: --html " << path << ": " << error << '\n';
  return written;
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
