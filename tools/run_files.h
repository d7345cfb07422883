// tools/run_files.h: which files make a run, for the commands that take a run as a file or a
// directory (`gapwatch report`, `gapwatch diff`): recordings (*.gwt) and traces (*.json,
// *.json.gz), never gapwatch's own output beside them (*.report.json, gapwatch-report.json, .txt
// and .html, collector.log), so that `gapwatch report DIR` and `gapwatch report DIR/*` read the
// output directory of `gapwatch profile` or of a collector as it is.
#pragma once

#include <string>
#include <vector>

namespace gapwatch::cli {

// A file gapwatch itself wrote beside recordings: a report or the collector's log.
bool isGapwatchOutput(const std::string& file_name);

// The files of one run: the file itself, or a directory's recordings and traces (above), sorted by
// name. On failure, returns false with the one-line reason in `error`.
bool runFiles(const std::string& operand, std::vector<std::string>& files, std::string& error);

}  // namespace gapwatch::cli
