// tools/profile_command.cpp: see profile_command.h.
#include "tools/profile_command.h"

#include "collector/profile_session.h"
#include "tools/exit_codes.h"
#include "tools/report_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
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

}  // namespace

std::optional<std::string> findInjectedLibrary(std::ostream& err) {
  std::string library;
  const char* named = std::getenv("GAPWATCH_LIBRARY");
  if (named && named[0]) {
    library = named;
  } else {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      err << kPrefix << "cannot find this program's own path (/proc/self/exe: " << ec.message()
          << "): set GAPWATCH_LIBRARY to libgapwatch.so\n";
      return std::nullopt;
    }
    library = (self.parent_path() / ".." / "lib" / "libgapwatch.so").string();
  }
  std::error_code ec;
  fs::path absolute = fs::weakly_canonical(fs::absolute(library, ec), ec);
  if (!ec) library = absolute.string();
  struct stat st {};
  if (::stat(library.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(library.c_str(), R_OK) != 0) {
    err << kPrefix << "the injected library is missing: " << library
        << (named && named[0] ? " (from GAPWATCH_LIBRARY)" : " (set GAPWATCH_LIBRARY to libgapwatch.so)") << '\n';
    return std::nullopt;
  }
  // The dynamic loader splits LD_PRELOAD at both.
  if (library.find_first_of(": ") != std::string::npos) {
    err << kPrefix << "the injected library's path " << library
        << " has a space or a colon, which LD_PRELOAD cannot carry: copy or link it elsewhere\n";
    return std::nullopt;
  }
  return library;
}

bool printRunReport(const std::string& dir, const ProfileOptions& options, std::ostream& out, std::ostream& err) {
  ReportOptions report;
  report.files = recordingsIn(dir);
  report.json = options.json;
  report.colour = options.colour;
  if (report.files.empty()) {
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
  const auto library = findInjectedLibrary(err);
  if (!library) return kExitUsage;
  if (options.watch) err << kPrefix << "--watch is not built yet\n";

  collector::ProfileSessionOptions session;
  session.output_dir = options.output_dir.empty() ? defaultOutputDir() : options.output_dir;
  // "D/" names its recordings "D/x.gwt", as the shell's D/*.gwt does.
  while (session.output_dir.size() > 1 && session.output_dir.back() == '/') session.output_dir.pop_back();
  session.library = *library;
  session.command = options.command;
  const collector::ProfileSessionResult result = collector::runProfileSession(session, err);
  if (!result.command_ran) return result.exit_code;

  // A reader that stops early (`| head`) must not turn the command's exit code into 141. Every
  // process of the job has exited, so none inherits this.
  ::signal(SIGPIPE, SIG_IGN);
  const bool reported = printRunReport(session.output_dir, options, out, err);
  out.flush();
  if (reported) {
    const bool report_file = fs::exists(session.output_dir + "/gapwatch-report.txt");
    err << kPrefix << (report_file ? "recordings and report in " : "recordings in ") << session.output_dir << '\n';
  }
  return result.exit_code;
}

}  // namespace gapwatch::cli
