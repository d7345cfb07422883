// The virtual device's clock: CLOCK_MONOTONIC, the clock the simulated hardware runs on.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim_driver.h"

namespace simcuda {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void wait_until(uint64_t t) {
  // Sleeping wakes up to the timer slack (50 us by default) late, so sleep to 200 us before the
  // deadline and spin the rest: a sync in the simulator returns within a microsecond or two of the
  // device time it waited for, as a spinning cudaStreamSynchronize does on a real GPU.
  constexpr uint64_t kSpinWindowNs = 200000;
  uint64_t now = now_ns();
  if (t > now + kSpinWindowNs) {
    uint64_t wake = t - kSpinWindowNs;
    timespec ts{time_t(wake / 1000000000ull), long(wake % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
    }
  }
  while (now_ns() < t) {
  }
}

void sleep_until(uint64_t t) {
  timespec ts{time_t(t / 1000000000ull), long(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

void spend(int64_t ns) {
  if (ns > 0) wait_until(now_ns() + uint64_t(ns));
}

int32_t current_tid() {
  static thread_local int32_t tid = int32_t(syscall(SYS_gettid));
  return tid;
}

}  // namespace simcuda
