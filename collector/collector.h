// collector/collector.h: the collector daemon's entry point and its options (docs/collector.md).
//
// One thread, one poll() loop: the listening socket, a signalfd for SIGINT/SIGTERM, and every
// connection. A connection is one traced process; its frames are checked as they arrive and the
// whole ones written, unchanged, to that process's .gwt. A bad connection is closed on its own.
#pragma once

#include <cstdint>
#include <string>

namespace gapwatch::collector {

struct CollectorOptions {
  std::string socket_path;  // empty: defaultSocketPath()
  std::string output_dir = ".";
  bool exit_when_idle = false;  // exit once a process has connected and none is left
  // A connection with a frame begun (or no Hello yet) and no whole frame for this long is closed.
  uint64_t slow_peer_timeout_ns = 30'000'000'000ull;
};

// Runs until SIGINT/SIGTERM (or idle, with exit_when_idle). Returns the process exit code: 0 after
// a clean stop, 1 when it could not start (one line on stderr says why).
int runCollector(const CollectorOptions& options);

}  // namespace gapwatch::collector
