#include "host_clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gapwatch {

bool g_host_clock_is_tsc = false;

// CPUID says whether the TSC is invariant (leaf 0x80000007, EDX bit 8: constant rate, runs in
// every power state), which is what Linux's constant_tsc and nonstop_tsc come from. An instruction,
// not a file read: this runs in the constructor of every process the library is preloaded into.
void choose_host_clock() {
#if defined(__x86_64__)
  // GAPWATCH_HOST_CLOCK=monotonic: clock_gettime for every timestamp (to compare, or distrust the TSC).
  const char* choice = getenv("GAPWATCH_HOST_CLOCK");
  if (choice && strcmp(choice, "monotonic") == 0) return;
  unsigned a = 0, b = 0, c = 0, d = 0;
  g_host_clock_is_tsc = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
#endif
}

namespace {
// A (ticks, ns) pair read back to back, keeping the tightest of a few tries.
void sample(uint64_t* ticks, uint64_t* ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t a = host_ticks(), t = monotonic_ns(), b = host_ticks();
    if (b - a < best) best = b - a, *ticks = a + (b - a) / 2, *ns = t;
  }
}
}  // namespace

void TickConverter::calibrate() {
  if (!g_host_clock_is_tsc) return;
  uint64_t t, n;
  sample(&t, &n);
  if (!started_) {
    tick0_ = t, ns0_ = n, started_ = true;
    // A first guess until a second pair comes: measured over a millisecond.
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
    sample(&t, &n);
  }
  if (t > tick0_) ns_per_tick_ = double(n - ns0_) / double(t - tick0_);
}

uint64_t TickConverter::to_ns(uint64_t ticks) const {
  if (!g_host_clock_is_tsc) return ticks;
  return uint64_t(int64_t(ns0_) + int64_t(double(int64_t(ticks - tick0_)) * ns_per_tick_));
}

}  // namespace gapwatch
