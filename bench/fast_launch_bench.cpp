// fast_launch_bench: a tight launch loop on the bench-only CUDA trio (bench/fastcuda/), where a
// launch costs a few nanoseconds plus whatever a profiler's callbacks cost. bench/launch_cost.py
// runs it under each configuration and prints the differences.
//
//   fast_launch_bench THREADS LAUNCHES runtime|driver [PACE_NS]
// runtime: cudaLaunchKernel (runtime callbacks, then the nested driver ones); driver:
// cuLaunchKernel alone, as Triton and cuBLAS launch. Prints the median over threads of the
// nanoseconds per launch, and the callbacks fired per launch (the trio counts them).
//
// Without PACE_NS the loop launches back to back and the thread's CPU time is divided by the
// launches: ten million launches a second, faster than any flusher drains a ring, so the caller
// must give gapwatch a ring that holds the whole run. With PACE_NS each launch starts PACE_NS after
// the previous one (a real runtime's rate: a launch takes microseconds), and only the launch calls
// are timed, each with the TSC: the default ring, drained by the flusher as the run goes, stays as
// warm in the cache as in a real job. A launch timed over 20 us was preempted and is left out.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

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

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// TSC ticks per ns, measured over 20 ms (the bench's timing only; gapwatch has its own).
double tsc_per_ns() {
  uint64_t t0 = mono_ns(), c0 = __rdtsc();
  while (mono_ns() - t0 < 20000000) {
  }
  return double(__rdtsc() - c0) / double(mono_ns() - t0);
}
}  // namespace

int main(int argc, char** argv) {
  if ((argc != 4 && argc != 5) || (strcmp(argv[3], "runtime") != 0 && strcmp(argv[3], "driver") != 0) || atoi(argv[1]) < 1 ||
      atoi(argv[2]) < 1) {
    fprintf(stderr, "usage: fast_launch_bench THREADS LAUNCHES runtime|driver [PACE_NS]\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  const int launches = atoi(argv[2]);
  const bool driver = strcmp(argv[3], "driver") == 0;
  const int64_t pace_ns = argc == 5 ? atoll(argv[4]) : 0;
  const double ticks_per_ns = pace_ns > 0 ? tsc_per_ns() : 1.0;
  const uint64_t pace_ticks = uint64_t(double(pace_ns) * ticks_per_ns);
  const uint64_t preempted_ticks = uint64_t(20000.0 * ticks_per_ns);
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
      if (pace_ns > 0) {
        uint64_t in_calls = 0, timed = 0, next = __rdtsc();
        for (int i = 0; i < launches; ++i) {
          while (__rdtsc() < next) _mm_pause();
          const uint64_t t0 = __rdtsc();
          launch();
          const uint64_t t1 = __rdtsc();
          next = t1 + pace_ticks;
          if (t1 - t0 < preempted_ticks) in_calls += t1 - t0, ++timed;
        }
        per_call[size_t(t)] = timed ? double(in_calls) / ticks_per_ns / double(timed) : 0.0;
      } else {
        const uint64_t start = thread_cpu_ns();
        for (int i = 0; i < launches; ++i) launch();
        per_call[size_t(t)] = double(thread_cpu_ns() - start) / launches;
      }
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
