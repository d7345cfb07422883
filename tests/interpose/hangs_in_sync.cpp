// A program that hangs: one short kernel (so the device has a timeline), then a kernel that runs
// for an hour, then it waits for it in cudaDeviceSynchronize ("sync"), a device-to-host
// cudaMemcpy ("memcpy"), or a cudaStreamQuery polling loop ("poll", the asyncAPI sample's way of
// waiting) until it is killed (hang_test.py). It prints "waiting" just before it waits.
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim_test_kernels.h"

int main(int argc, char** argv) {
  const bool memcpy_wait = argc > 1 && strcmp(argv[1], "memcpy") == 0;
  const bool poll_wait = argc > 1 && strcmp(argv[1], "poll") == 0;
  static simtest::TestKernel short_kernel, endless_kernel;
  simtest::register_kernel(short_kernel, "_Z9shortworkv");
  simtest::register_kernel(endless_kernel, "_Z11endlessworkv");
  void* device = nullptr;
  cudaMalloc(&device, 4096);
  simtest::launch(short_kernel, 20000);
  cudaDeviceSynchronize();
  simtest::launch(endless_kernel, int64_t(3600) * 1000000000);
  printf("waiting\n");
  fflush(stdout);
  char host[4096];
  if (memcpy_wait) cudaMemcpy(host, device, sizeof host, cudaMemcpyDeviceToHost);
  else if (poll_wait)
    while (cudaStreamQuery(nullptr) == cudaErrorNotReady) {
    }
  else cudaDeviceSynchronize();
  return 0;
}
