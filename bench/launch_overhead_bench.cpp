// launch_overhead_bench: a tight kernel-launch loop on the simulated runtime, the user's hot path
// that gapwatch must not slow. Prints the median CPU nanoseconds per launch call across threads.
// bench/launch_overhead.py runs it with and without libgapwatch.so and prints the difference.
//
// The simulated launch is made as cheap as the simulator allows (no simulated API time), so what
// gapwatch adds is not hidden under it. What remains of the simulator's own cost (its locks and
// logs) is the same in every run.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "simcuda/timeline.h"

extern "C" {
void** __cudaRegisterFatBinary(void*);
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
void simcuda_kernel_duration_from_argument(const char* mangled_name);  // the simulator's: ns in the first argument
}

namespace {
char g_stub;

// CPU time of the calling thread: with 16 launching threads on a 2-core machine, wall time per
// call mostly measures waiting for a core; the CPU a call burns is what gapwatch adds to it.
uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int launches = argc > 2 ? atoi(argv[2]) : 20000;
  SimDeviceConfig cfg{};
  cfg.launch_api_ns = 1;
  cfg.launch_latency_ns = 1;
  simcuda_configure(&cfg);
  static char fatbin[8];
  void** h = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterFunction(h, &g_stub, const_cast<char*>("_Z5benchv"), "_Z5benchv", -1, nullptr, nullptr, nullptr,
                         nullptr, nullptr);
  simcuda_kernel_duration_from_argument("_Z5benchv");
  std::vector<double> per_call(size_t(threads), 0.0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      cudaStream_t s;
      cudaStreamCreate(&s);
      int64_t ns = 500;
      void* args[] = {&ns};
      for (int i = 0; i < 200; ++i) cudaLaunchKernel(&g_stub, dim3(1), dim3(1), args, 0, s);  // warm up
      uint64_t start = thread_cpu_ns();
      for (int i = 0; i < launches; ++i) cudaLaunchKernel(&g_stub, dim3(1), dim3(1), args, 0, s);
      per_call[size_t(t)] = double(thread_cpu_ns() - start) / launches;
    });
  for (auto& w : workers) w.join();
  cudaDeviceSynchronize();
  std::sort(per_call.begin(), per_call.end());
  printf("threads=%d launches=%d ns_per_launch=%.1f\n", threads, launches, per_call[per_call.size() / 2]);
  return 0;
}
