// tools/diff_command.cpp: see diff_command.h.
#include "tools/diff_command.h"

#include "analysis/run_analysis.h"
#include "analysis/run_diff.h"
#include "tools/diff_html.h"
#include "tools/diff_json.h"
#include "tools/html_page.h"
#include "tools/diff_terminal.h"
#include "tools/run_files.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/text_format.h"

#include <algorithm>
#include <sstream>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace gapwatch::cli {

std::optional<double> parsePercent(const std::string& text) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') number.pop_back();
  if (number.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !(value >= 0) || value > 1e6) return std::nullopt;
  return value / 100.0;
}


int runDiff(const DiffOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.html_path.empty() && !outputPathUsable(options.html_path, "gapwatch diff: --html ", err))
    return kExitCannotWrite;
  std::vector<std::string> files[2];
  for (int side = 0; side < 2; ++side) {
    std::string error;
    if (!runFiles(side == 0 ? options.before : options.after, files[side], error)) {
      err << "gapwatch diff: " << error << '\n';
      return kExitBadRecording;
    }
  }
  // A run with an unreadable file is not that run: its ranks would not pair, or would compare
  // half a run with a whole one. Every file's read is said (one line each), then the diff stops.
  int read_code = kExitOk;
  const auto on_read = [&](const std::string& file, const ReadResult& read) {
    read_code = std::max(read_code, printReadOutcome(file, read, err));
  };
  // A report lists its top 5 kernels; 20 here, so that a kernel in one run's top 5 is usually
  // listed in the other run's too and the diff can give both times.
  analysis::AnalysisOptions analysis_options = options.analysis;
  analysis_options.top_n = std::max<uint32_t>(analysis_options.top_n, 20);
  const analysis::RunReport before = analysis::analyseRecordingFiles(files[0], analysis_options, on_read);
  const analysis::RunReport after = analysis::analyseRecordingFiles(files[1], analysis_options, on_read);
  if (read_code != kExitOk) return read_code;

  std::vector<analysis::RankPair> pairs;
  const std::string mismatch = analysis::matchRanks(before.analysis, after.analysis, pairs);
  if (!mismatch.empty()) {
    err << "gapwatch diff: " << mismatch << '\n';
    return kExitBadRecording;
  }
  const analysis::RunDiff diff = analysis::diffRuns(before, after, pairs);
  // The page first: a destination that cannot be written is exit 4, whatever the comparison says.
  if (!options.html_path.empty()) {
    std::ostringstream html;
    writeHtmlDiff(diff, files[0], files[1], html);
    if (!writeWholeFile(options.html_path, html.str(), "gapwatch diff: --html ", err)) return kExitCannotWrite;
  }
  if (options.json) {
    writeDiffJson(diff, files[0], files[1], options.fail_if_slower, out);
  } else {
    writeTerminalDiff(diff, files[0], files[1], out);
  }
  out.flush();

  if (!options.fail_if_slower) return kExitOk;
  if (!diff.step_time.testable) {
    err << "gapwatch diff: --fail-if-slower: " << diff.verdict << '\n';
    return kExitNotCompared;
  }
  return analysis::slowerBeyondNoise(diff.step_time, *options.fail_if_slower) ? kExitSlower : kExitOk;
}

}  // namespace gapwatch::cli
