// bench/bench_clock.h: the wall clock and peak memory the in-process benchmarks report.
#pragma once

#include <sys/resource.h>
#include <time.h>

namespace gapwatch::bench {

// Seconds on CLOCK_MONOTONIC.
inline double nowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// This process's peak resident set so far, KiB.
inline long peakRssKb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace gapwatch::bench
