#include "process_info.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


namespace gapwatch {
namespace {

uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

bool env_int(const char* name, int32_t* out) {
  const char* v = getenv(name);
  if (!v || !*v) return false;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  if (*end) return false;
  *out = int32_t(x);
  return true;
}

// The whole of a small /proc file, "" when it cannot be read. Plain read(2), not <fstream>: the
// iostreams pulled libstdc++'s locale machinery (700 KB) into this library, which links libstdc++
// statically.
std::string read_proc_file(const char* path) {
  std::string text;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, size_t(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fd);
  return text;
}

// Process start on CLOCK_MONOTONIC: /proc/self/stat gives it in clock ticks since boot, on
// CLOCK_BOOTTIME's scale; the two clocks differ by the time spent suspended.
uint64_t process_start_monotonic() {
  const std::string stat = read_proc_file("/proc/self/stat");
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  // Fields after the command name; starttime is field 22 overall, the 20th after ')'.
  const char* p = stat.c_str() + close_paren + 2;
  unsigned long long start_ticks = 0;
  for (int field = 3; field <= 22 && *p; ++field) {
    if (field == 22) start_ticks = strtoull(p, nullptr, 10);
    p = strchr(p, ' ');
    if (!p) break;
    ++p;
  }
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0 || start_ticks == 0) return 0;
  int64_t start_boot = int64_t(start_ticks * (1000000000ull / uint64_t(hz)));
  // Read back to back, the two clocks can differ by less than zero: keep the sign.
  int64_t skew = int64_t(clock_ns(CLOCK_BOOTTIME)) - int64_t(clock_ns(CLOCK_MONOTONIC));
  return start_boot > skew ? uint64_t(start_boot - skew) : 0;
}

}  // namespace

uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

void fill_process_info(HelloInfo* h) {
  h->pid = uint32_t(getpid());
  h->host = host_name();
  h->has_rank = env_int("RANK", &h->rank);
  h->has_local_rank = env_int("LOCAL_RANK", &h->local_rank);
  h->has_world_size = env_int("WORLD_SIZE", &h->world_size);
  const std::string cmd = read_proc_file("/proc/self/cmdline");
  size_t start = 0;
  for (size_t i = 0; i < cmd.size(); ++i)
    if (cmd[i] == '\0') h->command_line.push_back(cmd.substr(start, i - start)), start = i + 1;
  h->start_time_ns = monotonic_ns();
  h->start_unix_ns = clock_ns(CLOCK_REALTIME);
  h->process_start_ns = process_start_monotonic();
}

std::string default_output_name() {
  std::string host = host_name();
  for (char& c : host)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '_';
  return "gapwatch-" + host + "-" + std::to_string(getpid()) + ".gwt";
}

}  // namespace gapwatch
