// collector/profile_session.h: the processes behind `gapwatch profile`: a private collector, the
// traced job, and waiting for every process of the job (docs/usage.md, "One command").
//
// Why here and not in tools/: this is process management around the collector (fork it, wait
// until it listens, stop it so that it reads what every peer sent), with no formatting at all;
// tools/profile_command.cpp parses the command line and prints the report of what this leaves.
//
// The session:
//  1. a socket directory of its own (mkdtemp, 0700, under $XDG_RUNTIME_DIR or /tmp);
//  2. the collector, forked and run in the child (runCollector) in a process group of its own, so
//     that a terminal's Ctrl-C reaches the job only; its log goes to <output_dir>/collector.log;
//  3. once the socket accepts a connection, the command, exec'd with LD_PRELOAD (the library
//     first) and GAPWATCH_SOCKET set, and GAPWATCH_OUTPUT removed;
//  4. this process is a child subreaper: a daemonised descendant is reparented to it, and the
//     session waits until the command and every descendant has exited, forwarding SIGINT,
//     SIGTERM, SIGHUP and SIGQUIT to the command (once it has exited: to the descendants left).
//     How is process_supervisor.h's (SIGCHLD ignored by the parent included); which, and when, is
//     this file's;
//  5. SIGTERM to the collector, which then reads what every peer sent, closes the files and
//     writes the run's report (gapwatch-report.txt, .json) in the output directory.
// With --watch, a child runs the live view (`gapwatch watch`) on the private socket from before
// the command starts; it is not one of the job's processes, and it ends when the collector stops.
#pragma once

#include "collector/collector.h"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::collector {

struct ProfileSessionOptions {
  std::string output_dir;  // created when missing; an existing one must be empty
  // output_dir is a base name (the default, named to the second): the session makes a new
  // directory, that name or the first free one of <name>-2, <name>-3, ... (never one that exists,
  // so two runs started in the same second never share one); the result names it.
  bool unique_output_dir = false;
  std::string library;     // libgapwatch.so, absolute
  std::vector<std::string> command;
  // The private collector's options (its report writers, the analysis's knobs); its socket and
  // output directory are the session's.
  CollectorOptions collector;
  // --watch: called in a child of its own with the private socket once the collector listens
  // (gapwatch watch's entry point); returns its exit code. Unset: no live view.
  std::function<int(const std::string& socket)> watch;
};

struct ProfileSessionResult {
  // True once the command was exec'd: from then on exit_code is the command's, and the output
  // directory holds what the collector wrote.
  bool command_ran = false;
  // The command's exit code, 128 + N when signal N ended it (as a shell says); before the command
  // ran: 1 (the session could not start), 126 (not executable) or 127 (not found).
  int exit_code = 1;
  // The output directory used (options.output_dir, or the one made for unique_output_dir).
  std::string output_dir;
};

// Runs the whole session. Every failure is one line on `err`, prefixed "gapwatch profile: ". A
// session that fails before the command ran leaves no socket directory, no collector, and no output
// directory it created.
ProfileSessionResult runProfileSession(const ProfileSessionOptions& options, std::ostream& err);

}  // namespace gapwatch::collector
