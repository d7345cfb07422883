// A CUPTI client that calls back into CUPTI from its own buffer callbacks, while gapwatch shares
// CUPTI with it (cupti_sharing_test.py, test_client_calling_cupti_from_its_callbacks; issue 21,
// item 9): a profiler that flushes again from its completion callback, and reads each buffer's
// records (cuptiActivityGetNextRecord) there, as some do to free buffers early.
//
// A second thread keeps kernels finishing, so that CUPTI's delivery (gapwatch's pulls, every
// 100 ms) always has records to copy into this client's buffers. The main thread flushes a few
// times; its completion callback, on the main thread, first lets CUPTI's delivery run for a while
// (a pause), then flushes again. If the callback were called with a lock of gapwatch's held that
// CUPTI's delivery waits for, the two threads would wait on each other for ever: the program has
// an alarm that ends it (exit status 3, "deadlock" on stderr) instead of hanging the test.
//
// Prints "reentrant rounds=N records=M buffers=B" and exits 0.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include <atomic>
#include <thread>

#include "sim_test_kernels.h"

namespace {

constexpr int kRounds = 5;
constexpr int64_t kKernelNs = 200000;

pthread_t g_main_thread;
thread_local int t_depth = 0;  // a flush from inside the callback calls it again: once is enough
std::atomic<long> g_records{0}, g_buffers{0};

void pause_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 16 * 1024;  // small: buffers fill, and are handed back from CUPTI's delivery too
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  ++g_buffers;
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) ++g_records;
  free(buffer);
  if (pthread_equal(pthread_self(), g_main_thread) && t_depth == 0) {
    ++t_depth;
    pause_ms(250);  // CUPTI's delivery runs meanwhile (gapwatch pulls every 100 ms)
    cuptiActivityFlushAll(0);
    --t_depth;
  }
}

void on_alarm(int) {
  static const char text[] = "cupti-reentrant: deadlock: still running after the alarm\n";
  ssize_t ignored = write(2, text, sizeof text - 1);
  (void)ignored;
  // The system call itself: _exit() is gapwatch's hook under LD_PRELOAD, which ends the recording
  // and would wait on the very locks that are stuck.
  syscall(SYS_exit_group, 3);
}

}  // namespace

int main(int argc, char** argv) {
  // A bound on a hang, not a measurement: the run takes a few seconds.
  signal(SIGALRM, on_alarm);
  alarm(argc > 1 ? unsigned(atoi(argv[1])) : 60);
  g_main_thread = pthread_self();
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z9reentrantv");
  simtest::launch(kernel, kKernelNs);
  cudaDeviceSynchronize();

  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(stderr, "cupti-reentrant: cannot use CUPTI\n");
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread launcher([&] {
    cudaStream_t s;
    cudaStreamCreate(&s);
    while (!stop.load()) {
      simtest::launch(kernel, kKernelNs, s);
      cudaStreamSynchronize(s);
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    pause_ms(50);
    cuptiActivityFlushAll(0);
  }
  stop.store(true);
  launcher.join();
  cuptiActivityFlushAll(0);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  alarm(0);
  printf("reentrant rounds=%d records=%ld buffers=%ld\n", kRounds, g_records.load(), g_buffers.load());
  return 0;
}
