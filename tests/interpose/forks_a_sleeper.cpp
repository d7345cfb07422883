// A CUDA program that forks a long-lived child after its first CUDA calls, as a training job forks
// a helper (a checkpoint writer, a DataLoader worker) that outlives it, then exits 0. The child
// touches no CUDA: it sleeps until killed, at most argv[1] seconds (default 600). Prints
// "child <pid>" (forked_child_test.py).
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sim_test_kernels.h"

int main(int argc, char** argv) {
  const unsigned seconds = argc > 1 ? unsigned(atoi(argv[1])) : 600;
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z7beforeforkv");
  simtest::launch(kernel, 100000);
  cudaDeviceSynchronize();
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    // Not the parent's output: whoever reads the parent's pipes sees them end with the parent.
    const int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    sleep(seconds);
    _exit(0);
  }
  printf("child %d\n", int(child));
  return 0;
}
