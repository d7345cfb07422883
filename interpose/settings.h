// settings.h: what the user can set through the environment, read once when recording starts.
//
//   GAPWATCH_DISABLE=1       do nothing at all
//   GAPWATCH_OUTPUT=FILE     the recording (default ./gapwatch-<host>-<pid>.gwt); %p: pid, %r: rank;
//                            a directory: the default name inside it
//   GAPWATCH_SOCKET=PATH     stream to a collector listening there instead (falls back to the file);
//                            unset, and GAPWATCH_OUTPUT unset too: the default collector socket
//                            (default_collector_socket()) if one of this user's listens there;
//                            "off": never a socket
//   GAPWATCH_RING_KB=N       per-thread ring size (default 1024 KiB)
//   GAPWATCH_CUPTI_PATH=LIB  which libcupti to load
//   GAPWATCH_PROBES=symbols  do not use CUPTI; symbol hooks only (for comparison and tests)
//   GAPWATCH_LOG=off|warn|info   what the library says on stderr (default warn: one line at exit)
//   GAPWATCH_PY_GAP_MS=N     a launch after N ms or more of host time outside CUDA calls on its
//                            thread carries the thread's Python stack (default 10; 0: never)
//   GAPWATCH_PY_STACKS=0     read no Python stack at all, at any call (default 1: read them)
//   GAPWATCH_PY_SAMPLING=0   do not sample the launching thread's Python stack while it is outside
//                            CUDA (python_sampler.h; default 1: sample; off with PY_STACKS=0 too)
//   GAPWATCH_PY_SAMPLE_MS=N  the sampler's period in ms, fractions allowed (default 10; 0.5 to 1000)
//   GAPWATCH_PY_SAMPLE_AFTER_MS=N  sample only after N ms outside CUDA calls (default 1; 0 to 1000)
#pragma once

#include <cstddef>
#include <string>

namespace gapwatch {

enum class LogLevel { kOff = 0, kWarn = 1, kInfo = 2 };

struct Settings {
  bool disabled = false;
  std::string output_path;  // empty: the default name, made when recording starts
  std::string socket_path;
  size_t ring_bytes = 1024 * 1024;
  std::string cupti_path;
  bool symbols_only = false;
  LogLevel log = LogLevel::kWarn;
  unsigned python_gap_ms = 10;
  bool python_stacks = true;  // GAPWATCH_PY_STACKS=0: false
  bool python_sampling = true;           // GAPWATCH_PY_SAMPLING=0: false
  unsigned python_sample_us = 10000;     // GAPWATCH_PY_SAMPLE_MS
  unsigned python_sample_after_us = 1000;  // GAPWATCH_PY_SAMPLE_AFTER_MS
  // Not from the environment: this process was forked before its parent started recording, so a
  // fixed GAPWATCH_OUTPUT name is its parent's too (output_path() gives the child its own).
  bool forked_child = false;
};

Settings read_settings();
// Where a collector of this user's listens by default (<gapwatch/default_socket.h>, the collector's
// definition too: $XDG_RUNTIME_DIR/gapwatch/collector.sock, else /tmp/gapwatch-<euid>/...); ""
// unless its directory is a real directory (not a symlink) owned by the effective uid and closed
// to others (mode 0700), so that no one else's socket is taken for it.
std::string default_collector_socket();
// True when GAPWATCH_DISABLE asks for nothing; cheap, for the constructor.
bool disabled_by_environment();

// One line on stderr, prefixed "gapwatch: ", when the level allows (never on a user's hot path).
void log_line(const Settings& settings, LogLevel level, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace gapwatch
