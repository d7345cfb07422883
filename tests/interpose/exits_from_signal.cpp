// A program that leaves from its SIGTERM handler by _exit(kStatus), the way signal and crash
// handlers leave because _exit is async-signal-safe, while every thread, the one the signal
// interrupts among them, launches kernels, allocates device and host memory and syncs: the signal
// lands inside the CUDA stack, inside malloc or inside gapwatch's hooks, holding their locks
// (signal_exit_test.py). Prints "ready" once each thread has made its first round; runs until
// the signal comes (or 60 s, when SIGALRM ends a run the test never signalled).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "sim_test_kernels.h"

namespace {

constexpr int kStatus = 7;  // what the test expects back: the program's own, not a signal's
constexpr int kThreads = 4;

std::atomic<int> g_started{0};

void on_sigterm(int) { _exit(kStatus); }

void work(simtest::TestKernel& kernel, unsigned seed) {
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  bool counted = false;
  for (unsigned i = 0;; ++i) {
    simtest::launch(kernel, 2000, stream);
    void* device = nullptr;
    if (cudaMalloc(&device, 4096 + (i % 7) * 512) == cudaSuccess) cudaFree(device);
    // Host allocations of several sizes, from the thread's cache and from the arena under its lock.
    void* host = malloc(16 + ((i * 2654435761u + seed) % 8192));
    if (host) memset(host, 1, 64);
    free(host);
    if (i % 16 == 15) cudaStreamSynchronize(stream);
    if (!counted) counted = true, g_started.fetch_add(1);
  }
}

}  // namespace

int main() {
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z10signalworkv");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  alarm(60);  // SIGALRM's default action: a run never signalled ends, and says so by its status
  std::vector<std::thread> threads;
  for (int t = 1; t < kThreads; ++t) threads.emplace_back([t] { work(kernel, unsigned(t)); });
  std::thread ready([] {
    while (g_started.load() < kThreads) usleep(1000);
    printf("ready\n");
    fflush(stdout);
  });
  ready.detach();
  work(kernel, 0);  // the main thread works too: a process-directed signal goes to it first
}
