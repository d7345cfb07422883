#include "host_work.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace gapwatch_sim {

namespace {

constexpr uint64_t kSpinOnlyNs = 2000000;  // below this, host work is pure CPU time
constexpr uint64_t kSpinTailNs = 300000;   // longer than the kernel's timer slack, so sleep never overshoots

void spin_until(uint64_t deadline) {
  while (monotonic_ns() < deadline) {
  }
}

}  // namespace

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void do_host_work(uint64_t ns) {
  uint64_t deadline = monotonic_ns() + ns;
  if (ns > kSpinOnlyNs) {
    uint64_t wake = deadline - kSpinTailNs;
    timespec ts{time_t(wake / 1000000000ull), long(wake % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  spin_until(deadline);
}

std::vector<pid_t> fork_workers(int64_t count, uint64_t ns) {
  std::vector<pid_t> pids;
  for (int64_t i = 0; i < count; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      // Only async-signal-safe calls from here: the parent may have other threads holding locks.
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t deadline = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec) + ns;
      spin_until(deadline);
      _exit(0);
    }
    if (pid > 0) pids.push_back(pid);
    else break;  // fork failed: the caller sees fewer pids and reports it
  }
  return pids;
}

bool reap_workers(std::vector<pid_t>& pids, bool block) {
  bool all_ok = true;
  std::vector<pid_t> left;
  for (pid_t pid : pids) {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, block ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      left.push_back(pid);
      continue;
    }
    if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) all_ok = false;
  }
  pids = std::move(left);
  return all_ok;
}

}  // namespace gapwatch_sim
