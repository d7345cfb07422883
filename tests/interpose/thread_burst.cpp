// A thread pool starting at once, as a real job's does: T threads released together by a barrier,
// each launching N kernels, then joined. Every launch must be in the recording, none dropped
// (thread_rings_test.py). Usage: thread_burst T N [ROUNDS]: ROUNDS pools one after another, so
// the rings of exited threads must be reused.
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <thread>
#include <vector>

#include "sim_test_kernels.h"

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 64;
  int launches = argc > 2 ? atoi(argv[2]) : 20;
  int rounds = argc > 3 ? atoi(argv[3]) : 1;
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z9poolworkv");
  cudaFree(nullptr);  // CUDA is up (and gapwatch recording) before the pool starts
  for (int round = 0; round < rounds; ++round) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, nullptr, unsigned(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        pthread_barrier_wait(&start);
        for (int i = 0; i < launches; ++i) simtest::launch(kernel, 1000);
      });
    for (auto& t : pool) t.join();
    pthread_barrier_destroy(&start);
  }
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
