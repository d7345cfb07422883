// A light job: one 1 ms kernel every PERIOD ms (default 97: about ten a second, and not a multiple
// of the recorder's 100 ms pulls, so that kernels end at every phase of them), each waited for,
// until it is killed (live_records_test.py, bench/live_records.py). Usage: steady_launcher
// [LAUNCHES [PERIOD_MS]]. After each kernel it prints "ended <i> <CLOCK_MONOTONIC ns>", the time
// the wait returned, which is just after the kernel's device end: the test knows which kernels had
// finished, and when, without reading the recording.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sim_test_kernels.h"

int main(int argc, char** argv) {
  const int launches = argc > 1 ? atoi(argv[1]) : 1000000;
  const uint64_t period_ns = uint64_t(argc > 2 ? atoi(argv[2]) : 97) * 1000000ull;
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z10steadyworkv");
  uint64_t next = simtest::mono_ns();
  for (int i = 0; i < launches; ++i) {
    simtest::launch(kernel, 1000000);
    cudaStreamSynchronize(nullptr);
    printf("ended %d %llu\n", i, (unsigned long long)simtest::mono_ns());
    fflush(stdout);
    next += period_ns;
    timespec ts{time_t(next / 1000000000ull), long(next % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
    }
  }
  return 0;
}
