// tools/profile_command.h: `gapwatch profile [-o DIR] [--json] [--watch] -- CMD ARGS...`: runs
// CMD, and every process it starts, under gapwatch with a private collector
// (collector/profile_session.h), then prints the run's report and leaves the recordings in DIR.
// Exits with CMD's exit code (128 + N when signal N ended it); 1 when gapwatch could not start
// the run, 126/127 when CMD cannot be run (docs/cli.md).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gapwatch::cli {

struct ProfileOptions {
  std::string output_dir;  // empty: gapwatch-profile-<YYYYmmdd-HHMMSS> in the current directory
  bool json = false;
  bool watch = false;
  bool colour = false;  // ANSI colour in the text report (main decides, as for `gapwatch report`)
  std::string html_path;  // also put the run's HTML report (the collector's) there; "" for none
  std::vector<std::string> command;
  std::string bin_to_lib = "../lib";  // the install layout, for findInjectedLibrary
};

// Where the injected library may be beside the program at `program` (the gapwatch binary), in the
// order they are tried: <dir>/<bin_to_lib> (the install layout: the path from its bindir to its
// libdir, which main.cpp has from CMake), then <dir>/../lib (the build tree, the Python wheel).
std::vector<std::string> injectedLibraryCandidates(const std::string& program, const std::string& bin_to_lib);

// The injected library that `gapwatch profile` preloads and `gapwatch --where` prints:
// $GAPWATCH_LIBRARY, else the first readable injectedLibraryCandidates() of this binary, made
// absolute. Nothing, and one line on `err` beginning "<who>: " that names every path tried, when
// there is none.
std::optional<std::string> findInjectedLibrary(std::string_view who, const std::string& bin_to_lib,
                                               std::ostream& err);

// The run's report, from what the session left in `dir`: the collector's own (gapwatch-report.txt
// or .json); drawn again from the recordings dir/*.gwt, as `gapwatch report` draws it, when it is
// to be in colour or the collector left none. Returns false (and says so on `err`) when there was
// nothing to report.
bool printRunReport(const std::string& dir, const ProfileOptions& options, std::ostream& out, std::ostream& err);

int runProfile(const ProfileOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gapwatch::cli
