// What a lookup in the table of pinned host ranges costs (interpose/pinned_host_ranges.h): the
// work every async copy's exit does to tell pinned host memory from pageable. ns per lookup, the
// best of 7 timed loops, with 1 to 1,024 ranges pinned, for a pointer in none of them and for one
// in the last. Single thread, no writer running. Built with the project, run by hand; never by ctest.
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "pinned_host_ranges.h"

int main() {
  gapwatch::PinnedHostRanges& t = gapwatch::pinned_host_ranges();
  for (size_t n : {size_t(1), size_t(16), size_t(128), gapwatch::PinnedHostRanges::kCapacity}) {
    t.clear();
    for (size_t i = 0; i < n; ++i) t.add(reinterpret_cast<void*>(uintptr_t(0x100000 + i * 0x10000)), 0x1000);
    for (int hit = 0; hit < 2; ++hit) {
      const void* p = reinterpret_cast<void*>(uintptr_t(hit ? 0x100000 + (n - 1) * 0x10000 + 8 : 0x90000000));
      const int iters = 2000000;
      size_t found = 0;  // printed: the loop cannot be optimized away
      double best = 1e9;
      for (int rep = 0; rep < 7; ++rep) {
        const auto a = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) found += t.pinned(p, 4);
        const auto b = std::chrono::steady_clock::now();
        const double ns = std::chrono::duration<double, std::nano>(b - a).count() / iters;
        if (ns < best) best = ns;
      }
      std::printf("%5zu ranges pinned, %-22s %5.1f ns per lookup (%s)\n", n, hit ? "pointer in the last:" : "pointer in none:",
                  best, found ? "found" : "not found");
    }
  }
  return 0;
}
