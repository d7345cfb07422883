// A job whose phases a test drives, to put a fault (a stopped, killed or full collector or disk)
// exactly where it wants it: launches N short kernels, each waited for, prints "phase 1 done",
// then for every line read from stdin launches N more and prints "phase K done"; at end of input
// prints "exiting" and returns from main, so that the library's exit path (its last flush and
// Goodbye) runs after that line. Usage: exits_on_cue [N]. Used by fault_injection_test.py.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sim_test_kernels.h"

namespace {

void phase(simtest::TestKernel& kernel, int launches, int number) {
  for (int i = 0; i < launches; ++i) {
    simtest::launch(kernel, 2000);
    cudaStreamSynchronize(nullptr);
  }
  printf("phase %d done\n", number);
  fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? atoi(argv[1]) : 500;
  if (launches < 1) {
    fprintf(stderr, "usage: exits_on_cue [LAUNCHES_PER_PHASE]\n");
    return 2;
  }
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z7oncuev");
  int number = 1;
  phase(kernel, launches, number);
  char line[64];
  while (fgets(line, sizeof line, stdin)) phase(kernel, launches, ++number);
  printf("exiting\n");
  fflush(stdout);
  return 0;
}
