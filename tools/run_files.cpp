// tools/run_files.cpp: see run_files.h.
#include "tools/run_files.h"

#include "tools/text_format.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace gapwatch::cli {
namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What a directory of a run holds that is a recording or a trace, and not a report of one.
bool isRunFile(const std::string& name) {
  if (isGapwatchOutput(name)) return false;
  return endsWith(name, ".gwt") || endsWith(name, ".json") || endsWith(name, ".json.gz");
}

}  // namespace

bool isGapwatchOutput(const std::string& file_name) {
  const std::size_t slash = file_name.rfind('/');
  const std::string name = slash == std::string::npos ? file_name : file_name.substr(slash + 1);
  return endsWith(name, ".report.json") || name == "gapwatch-report.json" || name == "gapwatch-report.txt" ||
         name == "gapwatch-report.html" || name == "collector.log";
}

bool runFiles(const std::string& operand, std::vector<std::string>& files, std::string& error) {
  namespace fs = std::filesystem;
  files.clear();
  std::error_code ec;
  const fs::file_status status = fs::status(operand, ec);
  if (ec || !fs::exists(status)) {
    error = printable(operand) + ": no such file or directory";
    return false;
  }
  if (!fs::is_directory(status)) {
    files.push_back(operand);
    return true;
  }
  fs::directory_iterator it(operand, ec);
  if (ec) {
    error = printable(operand) + ": cannot list the directory: " + ec.message();
    return false;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::error_code file_ec;
    if (it->is_regular_file(file_ec) && isRunFile(it->path().filename().string())) {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    error = printable(operand) + ": no recordings (.gwt) or traces (.json, .json.gz) in this directory";
    return false;
  }
  return true;
}

}  // namespace gapwatch::cli
