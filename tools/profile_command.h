// tools/profile_command.h: `gapwatch profile [-o DIR] [--json] [--watch] -- CMD ARGS...`: runs
// CMD, and every process it starts, under gapwatch with a private collector
// (collector/profile_session.h), then prints the run's report and leaves the recordings in DIR.
// Exits with CMD's exit code (128 + N when signal N ended it); 1 when gapwatch could not start
// the run, 126/127 when CMD cannot be run (docs/cli.md).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

struct ProfileOptions {
  std::string output_dir;  // empty: gapwatch-profile-<YYYYmmdd-HHMMSS> in the current directory
  bool json = false;
  bool watch = false;
  bool colour = false;  // ANSI colour in the text report (main decides, as for `gapwatch report`)
  std::string html_path;  // also put the run's HTML report (the collector's) there; "" for none
  std::vector<std::string> command;
};

// The injected library: $GAPWATCH_LIBRARY, else <dir of this binary>/../lib/libgapwatch.so, made
// absolute. Nothing (and one line on `err`) when it is not a readable file.
std::optional<std::string> findInjectedLibrary(std::ostream& err);

// The run's report, from what the session left in `dir`: the collector's own (gapwatch-report.txt
// or .json); drawn again from the recordings dir/*.gwt, as `gapwatch report` draws it, when it is
// to be in colour or the collector left none. Returns false (and says so on `err`) when there was
// nothing to report.
bool printRunReport(const std::string& dir, const ProfileOptions& options, std::ostream& out, std::ostream& err);

int runProfile(const ProfileOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gapwatch::cli
