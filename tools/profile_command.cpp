// tools/profile_command.cpp: see profile_command.h.
#include "tools/profile_command.h"

#include "collector/collector.h"
#include "collector/profile_session.h"
#include "tools/exit_codes.h"
#include "tools/report_command.h"
#include "tools/html_page.h"
#include "tools/report_html.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"
#include "tools/watch_command.h"

#include <gapwatch/json_text.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

namespace gapwatch::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "gapwatch profile: ";

std::string defaultOutputDir() {
  const time_t now = ::time(nullptr);
  tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return std::string("gapwatch-profile-") + stamp;
}

std::vector<std::string> recordingsIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".gwt" && entry.is_regular_file(ec)) {
      files.push_back(dir + "/" + entry.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::optional<std::string> readWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// The recordings in the order of the collector's run report (its JSON's inputs: by rank), so a
// report drawn again from them lists the processes as the collector's does; name order without it.
std::vector<std::string> recordingsInReportOrder(const std::string& dir, const std::string& json_text) {
  std::vector<std::string> files = recordingsIn(dir);
  const auto document = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object() || !document.contains("inputs") || !document["inputs"].is_array()) return files;
  std::vector<std::string> ordered;
  for (const auto& input : document["inputs"]) {
    if (!input.is_object() || !input.contains("file") || !input["file"].is_string()) return files;
    ordered.push_back(dir + "/" + input["file"].get<std::string>());
  }
  std::vector<std::string> sorted_ordered = ordered;
  std::sort(sorted_ordered.begin(), sorted_ordered.end());
  return sorted_ordered == files ? ordered : files;
}

}  // namespace

std::vector<std::string> injectedLibraryCandidates(const std::string& program, const std::string& bin_to_lib) {
  const fs::path bin = fs::path(program).parent_path();
  std::vector<std::string> candidates;
  // ../lib is the build tree's and the Python wheel's layout (gapwatch/bin and gapwatch/lib), which
  // an install to a multiarch libdir does not share.
  for (const std::string& relative : {bin_to_lib, std::string("../lib")}) {
    const std::string candidate = (bin / relative / "libgapwatch.so").lexically_normal().string();
    if (std::find(candidates.begin(), candidates.end(), candidate) == candidates.end()) {
      candidates.push_back(candidate);
    }
  }
  return candidates;
}

namespace {

bool readableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

}  // namespace

std::optional<std::string> findInjectedLibrary(std::string_view who, const std::string& bin_to_lib,
                                               std::ostream& err) {
  std::string library;
  const char* named = std::getenv("GAPWATCH_LIBRARY");
  if (named && named[0]) {
    library = named;
    std::error_code ec;
    fs::path absolute = fs::weakly_canonical(fs::absolute(library, ec), ec);
    if (!ec) library = absolute.string();
    if (!readableFile(library)) {
      err << who << ": the injected library is missing: " << library << " (from GAPWATCH_LIBRARY)\n";
      return std::nullopt;
    }
  } else {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      err << who << ": cannot find this program's own path (/proc/self/exe: " << ec.message()
          << "): set GAPWATCH_LIBRARY to libgapwatch.so\n";
      return std::nullopt;
    }
    const std::vector<std::string> candidates = injectedLibraryCandidates(self.string(), bin_to_lib);
    for (const std::string& candidate : candidates) {
      if (readableFile(candidate)) {
        library = candidate;
        break;
      }
    }
    if (library.empty()) {
      err << who << ": the injected library libgapwatch.so is missing: not in ";
      for (std::size_t i = 0; i < candidates.size(); ++i) err << (i ? " nor " : "") << candidates[i];
      err << " (set GAPWATCH_LIBRARY to its path)\n";
      return std::nullopt;
    }
    fs::path absolute = fs::weakly_canonical(library, ec);
    if (!ec) library = absolute.string();
  }
  // The dynamic loader splits LD_PRELOAD at both.
  if (library.find_first_of(": ") != std::string::npos) {
    err << who << ": the injected library's path " << library
        << " has a space or a colon, which LD_PRELOAD cannot carry: copy or link it elsewhere\n";
    return std::nullopt;
  }
  return library;
}

bool printRunReport(const std::string& dir, const ProfileOptions& options, std::ostream& out, std::ostream& err) {
  const std::string text_path = dir + "/" + collector::kRunReportText;
  const std::string json_path = dir + "/" + collector::kRunReportJson;
  const auto json_text = readWhole(json_path);
  // The collector's own report, computed live (equal to `gapwatch report` of the recordings in its
  // order, the file names as it wrote them). It has no colour: for a terminal the same report is
  // drawn again from the recordings, with the paths under DIR.
  if (!options.colour || options.json) {
    const auto report = options.json ? json_text : readWhole(text_path);
    if (report) {
      out << *report;
      return true;
    }
  }
  ReportOptions report;
  report.files = json_text ? recordingsInReportOrder(dir, *json_text) : recordingsIn(dir);
  report.json = options.json;
  report.colour = options.colour;
  if (report.files.empty()) {
    // The report of a run with no process, so that a script reading stdout still gets a document
    // that says so; in text the line on stderr is the report (stdout stays the command's own).
    if (options.json) {
      std::ostringstream empty;
      writeReportJson(analysis::RunReport{}, empty);
      auto document = nlohmann::ordered_json::parse(empty.str());
      document["nothing_recorded"] = "no process of the command used CUDA";
      out << jsonText(document, 2) << '\n';
    }
    err << kPrefix << "nothing was recorded: no process of the command used CUDA (collector log: " << dir
        << "/collector.log)\n";
    return false;
  }
  // A recording that cannot be read gets its line on `err`; the command's exit code stands.
  runReport(report, out, err);
  return true;
}

int runProfile(const ProfileOptions& options, std::ostream& out, std::ostream& err) {
  if (options.command.empty()) {
    err << kPrefix << "no command to run: gapwatch profile [-o DIR] -- CMD ARGS...\n";
    return kExitUsage;
  }
  const auto library = findInjectedLibrary("gapwatch profile", options.bin_to_lib, err);
  if (!library) return kExitUsage;
  // Before the job runs: a job of hours must not end in "cannot write" for a typo in --html.
  if (!options.html_path.empty() && !outputPathUsable(options.html_path, kPrefix + std::string("--html "), err))
    return kExitCannotWrite;

  collector::ProfileSessionOptions session;
  session.output_dir = options.output_dir.empty() ? defaultOutputDir() : options.output_dir;
  // Named to the second: the session makes it, with a suffix when a run in the same second has it.
  session.unique_output_dir = options.output_dir.empty();
  // "D/" given: the paths in a redrawn report and the last line say D/x.gwt and D, not D//x.gwt.
  while (session.output_dir.size() > 1 && session.output_dir.back() == '/') session.output_dir.pop_back();
  session.library = *library;
  session.command = options.command;
  // As `gapwatch collector` writes them (tools/main.cpp): the report files carry no colour.
  session.collector.write_text_report = [](const analysis::RunReport& content, std::ostream& text) {
    writeTerminalReport(content, TerminalStyle{false}, text);
  };
  session.collector.write_json_report = [](const analysis::RunReport& content, std::ostream& json) {
    writeReportJson(content, json);
  };
  session.collector.write_html_report = [](const analysis::RunReport& content, std::ostream& html) {
    writeHtmlReport(content, html);
  };
  if (options.watch) {
    session.watch = [](const std::string& socket) {
      // stdout is the report's (a file, a pipe: `--json > out.json`); the view goes where a
      // person looks, stderr, when stdout is not a terminal (docs/usage.md, "One command").
      if (::isatty(STDOUT_FILENO) != 1) ::dup2(STDERR_FILENO, STDOUT_FILENO);
      WatchOptions watch;
      watch.socket_path = socket;
      const int code = runWatch(watch);
      std::cout.flush();  // the child ends with _exit, which flushes nothing
      std::cerr.flush();
      return code;
    };
  }
  const collector::ProfileSessionResult result = collector::runProfileSession(session, err);
  if (!result.command_ran) return result.exit_code;
  const std::string& dir = result.output_dir;

  // A reader that stops early (`| head`) must not turn the command's exit code into 141. Every
  // process of the job has exited, so none inherits this.
  ::signal(SIGPIPE, SIG_IGN);
  const bool reported = printRunReport(dir, options, out, err);
  out.flush();
  if (reported) {
    const bool report_file = fs::exists(dir + "/" + collector::kRunReportText);
    err << kPrefix << (report_file ? "recordings and report in " : "recordings in ") << dir << '\n';
  }
  // The collector wrote the run's HTML report beside its text and JSON: --html puts a copy where
  // it was asked for. The command's exit code stands either way; a failure says so in one line.
  if (reported && !options.html_path.empty()) {
    if (const auto html = readWhole(dir + "/" + collector::kRunReportHtml)) {
      writeWholeFile(options.html_path, *html, std::string(kPrefix) + "--html ", err);
    } else {
      err << kPrefix << "--html " << options.html_path << ": the collector wrote no " << collector::kRunReportHtml
          << '\n';
    }
  }
  return result.exit_code;
}

}  // namespace gapwatch::cli
