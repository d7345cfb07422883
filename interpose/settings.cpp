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

// Milliseconds with up to three decimals ("5", "0.5") as microseconds, within [min_us, max_us];
// false for anything else. By hand: strtod follows the locale's decimal point.
bool parse_ms_as_us(const char* v, unsigned min_us, unsigned max_us, unsigned* out) {
  uint64_t us = 0;
  const char* p = v;
  for (; *p >= '0' && *p <= '9'; ++p) {
    us = us * 10 + uint64_t(*p - '0');
    if (us > max_us) return false;
  }
  if (p == v) return false;
  us *= 1000;
  if (*p == '.') {
    uint64_t scale = 100;
    for (++p; *p >= '0' && *p <= '9'; ++p, scale /= 10) us += scale * uint64_t(*p - '0');
  }
  if (*p != 0 || us < min_us || us > max_us) return false;
  *out = unsigned(us);
  return true;
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
  if (const char* v = env("GAPWATCH_PY_SAMPLING")) s.python_sampling = strcmp(v, "0") != 0;
  if (const char* v = env("GAPWATCH_PY_SAMPLE_MS")) parse_ms_as_us(v, 500, 1000 * 1000, &s.python_sample_us);
  if (const char* v = env("GAPWATCH_PY_SAMPLE_AFTER_MS")) parse_ms_as_us(v, 0, 1000 * 1000, &s.python_sample_after_us);
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
