// A CUDA program that launches one kernel, waits for it and leaves through exit(N), N from argv:
// the recording must carry N as the exit status (exit_status_test.py).
#include <stdlib.h>
#include <time.h>

#include "sim_test_kernels.h"

int main(int argc, char** argv) {
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z8tinyworkv");
  simtest::launch(kernel, 10000);
  cudaDeviceSynchronize();
  exit(argc > 1 ? atoi(argv[1]) : 0);
}
