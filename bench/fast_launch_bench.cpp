// fast_launch_bench: a tight launch loop on the bench-only CUDA trio (bench/fastcuda/), where a
// launch costs a few nanoseconds plus whatever a profiler's callbacks cost. bench/launch_cost.py
// runs it under each configuration and prints the differences.
//
//   fast_launch_bench THREADS LAUNCHES runtime|driver
// runtime: cudaLaunchKernel (runtime callbacks, then the nested driver ones); driver:
// cuLaunchKernel alone, as Triton and cuBLAS launch. Prints the median over threads of the CPU
// nanoseconds per launch, and the callbacks fired per launch (the trio counts them).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fastcuda/fast_dispatch.h"

extern "C" {
void** __cudaRegisterFatBinary(void*);
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
}

namespace {
char g_stub;

// CPU time of the calling thread: 16 threads on 2 cores would make wall time mostly waiting.
uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[3], "runtime") != 0 && strcmp(argv[3], "driver") != 0) || atoi(argv[1]) < 1 ||
      atoi(argv[2]) < 1) {
    fprintf(stderr, "usage: fast_launch_bench THREADS LAUNCHES runtime|driver\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  const int launches = atoi(argv[2]);
  const bool driver = strcmp(argv[3], "driver") == 0;
  static char fatbin[8];
  void** h = __cudaRegisterFatBinary(fatbin);  // cuInit: the driver loads CUDA_INJECTION64_PATH here
  __cudaRegisterFunction(h, &g_stub, const_cast<char*>("_Z5benchv"), "_Z5benchv", -1, nullptr, nullptr, nullptr,
                         nullptr, nullptr);
  std::vector<double> per_call(size_t(threads), 0.0), callbacks(size_t(threads), 0.0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      cudaStream_t s;
      cudaStreamCreate(&s);
      int64_t ns = 500;
      void* args[] = {&ns};
      auto launch = [&] {
        if (driver)
          cuLaunchKernel(reinterpret_cast<CUfunction>(&g_stub), 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(s),
                         args, nullptr);
        else
          cudaLaunchKernel(&g_stub, dim3(1), dim3(1), args, 0, s);
      };
      for (int i = 0; i < 1000; ++i) launch();  // warm up: the thread's ring, caches
      const uint64_t fired = fastcuda_callbacks_on_this_thread();
      const uint64_t start = thread_cpu_ns();
      for (int i = 0; i < launches; ++i) launch();
      per_call[size_t(t)] = double(thread_cpu_ns() - start) / launches;
      callbacks[size_t(t)] = double(fastcuda_callbacks_on_this_thread() - fired) / launches;
    });
  for (auto& w : workers) w.join();
  cudaDeviceSynchronize();
  std::sort(per_call.begin(), per_call.end());
  std::sort(callbacks.begin(), callbacks.end());
  printf("threads=%d launches=%d api=%s callbacks_per_launch=%.2f ns_per_launch=%.2f\n", threads, launches, argv[3],
         callbacks[callbacks.size() / 2], per_call[per_call.size() / 2]);
  return 0;
}
