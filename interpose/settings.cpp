#include "settings.h"

#include <gapwatch/default_socket.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gapwatch {
namespace {

const char* env(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

bool disabled_by_environment() {
  const char* v = env("GAPWATCH_DISABLE");
  return v && strcmp(v, "0") != 0;
}

Settings read_settings() {
  Settings s;
  s.disabled = disabled_by_environment();
  if (const char* v = env("GAPWATCH_OUTPUT")) s.output_path = v;
  if (const char* v = env("GAPWATCH_SOCKET")) s.socket_path = v;
  if (const char* v = env("GAPWATCH_RING_KB")) {
    long kb = strtol(v, nullptr, 10);
    if (kb >= 4 && kb <= 1024 * 1024) s.ring_bytes = size_t(kb) * 1024;
  }
  if (const char* v = env("GAPWATCH_PY_GAP_MS")) {
    char* end = nullptr;
    long ms = strtol(v, &end, 10);
    if (end != v && *end == 0 && ms >= 0 && ms <= 3600 * 1000) s.python_gap_ms = unsigned(ms);
  }
  if (const char* v = env("GAPWATCH_PY_STACKS")) s.python_stacks = strcmp(v, "0") != 0;
  if (const char* v = env("GAPWATCH_CUPTI_PATH")) s.cupti_path = v;
  if (const char* v = env("GAPWATCH_PROBES")) s.symbols_only = strcmp(v, "symbols") == 0;
  if (const char* v = env("GAPWATCH_LOG")) {
    if (!strcmp(v, "off") || !strcmp(v, "0")) s.log = LogLevel::kOff;
    else if (!strcmp(v, "info") || !strcmp(v, "debug")) s.log = LogLevel::kInfo;
  }
  return s;
}

std::string default_collector_socket() {
  const std::string dir = default_socket_dir();
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != default_socket_owner() ||
      (st.st_mode & 077) != 0)
    return "";
  std::string socket = default_socket_path();
  if (lstat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return "";
  return socket;
}

void log_line(const Settings& settings, LogLevel level, const char* format, ...) {
  if (int(settings.log) < int(level)) return;
  char line[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  fprintf(stderr, "gapwatch: %s\n", line);
}

}  // namespace gapwatch
