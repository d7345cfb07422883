// host_clock.h: the host timestamps taken on the user's thread.
//
// Two reads per recorded call sit on the hot path, so they are raw TSC ticks when the TSC is
// invariant (constant_tsc and nonstop_tsc: about 9 ns a read here, against 21 ns for
// clock_gettime through the vDSO), else CLOCK_MONOTONIC nanoseconds. The flusher turns ticks into
// CLOCK_MONOTONIC nanoseconds with TickConverter, which it recalibrates on every flush.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "process_info.h"

namespace gapwatch {

extern bool g_host_clock_is_tsc;  // decided once, before recording starts

inline uint64_t host_ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_host_clock_is_tsc, 1)) return __rdtsc();
#endif
  return monotonic_ns();
}

// Decides whether host_ticks() reads the TSC: in the library's constructor, before any hook runs.
void choose_host_clock();

// Flusher (and exit path) only. Ticks -> CLOCK_MONOTONIC ns by a line through the first and the
// latest (tick, ns) pair, each taken as a tight bracket; the slope sharpens as the run goes on.
class TickConverter {
 public:
  void calibrate();  // takes a new latest pair
  uint64_t to_ns(uint64_t ticks) const;
  // How many ticks make `ns` nanoseconds, by the current slope.
  uint64_t ticks_in(uint64_t ns) const { return g_host_clock_is_tsc ? uint64_t(double(ns) / ns_per_tick_) : ns; }

 private:
  bool started_ = false;
  uint64_t tick0_ = 0, ns0_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace gapwatch
