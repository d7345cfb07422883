// tools/watch_command.h: `gapwatch watch`, a live view of a running collector (docs/cli.md).
//
// Connects to the collector's socket, sends a StatusRequest as its only frame and shows each
// status line the collector sends back (once a second): redrawn in place on a terminal, as plain
// blocks on a pipe (watch_view.h). Ends when the collector closes the connection (exit 0), on
// SIGINT/SIGTERM/SIGHUP or `q` (exit 0), or with one line on stderr and exit 1 when there is no
// collector to connect to or what answers is not one (nothing parseable within 5 s).
#pragma once

#include <string>

namespace gapwatch::cli {

struct WatchOptions {
  std::string socket_path;  // empty: the collector's default socket
  bool once = false;        // print the first status and exit
};

// Writes to stdout and stderr; returns the exit code.
int runWatch(const WatchOptions& options);

}  // namespace gapwatch::cli
