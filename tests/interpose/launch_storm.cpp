// A launch storm: T threads, each on its own stream, launching N kernels of K ns back to back, as
// fast as the runtime lets them, all released together. Usage: launch_storm T N K [API_NS]: API_NS
// sets the simulated launch call's own host time (default: the simulator's, 3 us; a real
// cudaLaunchKernel takes 2-4 us, and 500 ns is faster than any). The recording must
// hold every launch with no drop at the default ring size (launch_storm_test.py,
// bench/launch_storm.py): the flusher has to keep up with rings that fill in milliseconds.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <thread>
#include <vector>

#include "sim_test_kernels.h"
#include "simcuda/timeline.h"

int main(int argc, char** argv) {
  if ((argc != 4 && argc != 5) || atoi(argv[1]) < 1 || atoi(argv[2]) < 1 || atoll(argv[3]) < 0 ||
      (argc == 5 && atoll(argv[4]) < 1)) {
    fprintf(stderr, "usage: launch_storm THREADS LAUNCHES KERNEL_NS [LAUNCH_API_NS]\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  const int launches = atoi(argv[2]);
  const int64_t kernel_ns = atoll(argv[3]);
  if (argc == 5) {
    SimDeviceConfig cfg{};  // zero fields keep the simulator's defaults
    cfg.launch_api_ns = atoll(argv[4]);
    simcuda_configure(&cfg);
  }
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z5stormv");
  cudaFree(nullptr);  // CUDA is up (and gapwatch recording) before the storm starts
  pthread_barrier_t start;
  pthread_barrier_init(&start, nullptr, unsigned(threads));
  std::vector<std::thread> pool;
  bool failed = false;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      cudaStream_t stream;
      if (cudaStreamCreate(&stream) != cudaSuccess) failed = true;
      pthread_barrier_wait(&start);
      for (int i = 0; i < launches; ++i)
        if (simtest::launch(kernel, kernel_ns, stream) != cudaSuccess) failed = true;
      cudaStreamSynchronize(stream);
    });
  for (auto& t : pool) t.join();
  pthread_barrier_destroy(&start);
  return !failed && cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
