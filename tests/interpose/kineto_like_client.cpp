// A program with a profiler of its own, using CUPTI the way torch.profiler's Kineto does, while
// gapwatch may be recording it (cupti_sharing_test.py; cupti-field-notes.md 3).
//
//   kineto_like_client current   Kineto HEAD (pytorch/kineto#1250): no subscription; a session
//                                registers a timestamp callback returning TSC ticks, its buffer
//                                callbacks, enables CONCURRENT_KERNEL, MEMCPY, MEMSET; at its end it
//                                flushes (forced) and disables the kinds.
//   kineto_like_client none      the same job without a profiler session (nothing takes CUPTI).
//   kineto_like_client legacy    released PyTorch: cuptiSubscribe first (resource and runtime launch
//                                callbacks); refused with error 39 it logs what Kineto logs and
//                                profiles CPU only; else the session as above.
//
// The job: kBefore kernels, a pause, the session around kDuring kernels 40 ms apart, a pause,
// kAfter kernels; each kernel 2 ms and waited for. The pauses are what a training job has around a
// profiled span (the recorder asks CUPTI for records every 100 ms). It prints what its own profile holds ("profile kernels=N expected=M ..."), the
// session's CLOCK_MONOTONIC bounds ("session start=... end=..."), and exits 0 (a profiler that
// loses data does not fail the job; the test reads the lines).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include <cupti.h>

#include <mutex>
#include <vector>

#include "sim_test_kernels.h"

namespace {

constexpr int kBefore = 5, kDuring = 10, kAfter = 5;
constexpr int64_t kKernelNs = 2000000;

uint64_t CUPTIAPI tsc_timestamp() { return __rdtsc(); }

std::mutex g_mu;
std::vector<std::pair<uint8_t*, size_t>> g_ready;  // completed buffers, read when the session ends
int g_unknown_buffers = 0;
std::vector<uint8_t*> g_given;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 256 * 1024;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
  std::lock_guard<std::mutex> lock(g_mu);
  g_given.push_back(*buffer);
}

// Like Kineto: a buffer it did not hand out is an error, logged and left alone.
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  bool mine = false;
  for (uint8_t* b : g_given) mine = mine || b == buffer;
  if (!mine) {
    ++g_unknown_buffers;
    fprintf(stderr, "kineto-like: bufferCompleted called with unknown buffer\n");
    return;
  }
  g_ready.emplace_back(buffer, valid);
}

int g_launch_callbacks = 0;
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  // Its own correlation-data slot, written at the entry and read back at the exit.
  if (d->callbackSite == CUPTI_API_ENTER) *d->correlationData = 0x6b696e65746fULL;
  else if (*d->correlationData == 0x6b696e65746fULL) ++g_launch_callbacks;
}

void check(CUptiResult r, const char* what) {
  if (r != CUPTI_SUCCESS) fprintf(stderr, "kineto-like: %s failed: %d\n", what, int(r));
}

}  // namespace

int main(int argc, char** argv) {
  const bool legacy = argc > 1 && strcmp(argv[1], "legacy") == 0;
  const bool no_session = argc > 1 && strcmp(argv[1], "none") == 0;
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z10kinetoworkv");
  auto pause = [](long ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
  };
  auto run = [&](int n, long gap_ms) {
    for (int i = 0; i < n; ++i) {
      simtest::launch(kernel, kKernelNs);
      cudaStreamSynchronize(nullptr);
      if (gap_ms) pause(gap_ms);
    }
  };
  run(kBefore, 0);
  pause(300);

  bool gpu = !no_session;
  CUpti_SubscriberHandle subscriber = nullptr;
  if (legacy) {
    CUptiResult r = cuptiSubscribe(&subscriber, on_callback, nullptr);
    if (r != CUPTI_SUCCESS) {
      fprintf(stderr, "kineto-like: CUPTI initialization failed - CUDA profiler activities will be missing\n");
      gpu = false;
    } else {
      check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
            "cuptiEnableCallback");
    }
  }
  // The session, with its clock readings for converting TSC ticks back.
  const uint64_t start_mono = simtest::mono_ns(), start_tsc = __rdtsc();
  if (gpu) {
    check(cuptiActivityRegisterTimestampCallback(tsc_timestamp), "cuptiActivityRegisterTimestampCallback");
    check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMSET})
      check(cuptiActivityEnable(k), "cuptiActivityEnable");
  }
  run(kDuring, 40);
  if (gpu) {
    check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMSET})
      check(cuptiActivityDisable(k), "cuptiActivityDisable");
  }
  const uint64_t end_mono = simtest::mono_ns(), end_tsc = __rdtsc();
  if (subscriber) check(cuptiUnsubscribe(subscriber), "cuptiUnsubscribe");

  // Its profile: kernels in the session, their length in its own clock (TSC ticks back to ns).
  const double ticks_per_ns = double(end_tsc - start_tsc) / double(end_mono - start_mono);
  int kernels = 0, right_length = 0, inside = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& [buffer, valid] : g_ready) {
      CUpti_Activity* r = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
        ++kernels;
        const double length_ns = double(k->end - k->start) / ticks_per_ns;
        right_length += length_ns > kKernelNs * 0.95 && length_ns < kKernelNs * 1.05;
        inside += k->start >= start_tsc && k->end <= end_tsc;
      }
    }
  }
  printf("session start=%llu end=%llu\n", (unsigned long long)start_mono, (unsigned long long)end_mono);
  printf("profile kernels=%d expected=%d right_length=%d inside=%d launch_callbacks=%d unknown_buffers=%d gpu=%d\n",
         kernels, kDuring, right_length, inside, g_launch_callbacks, g_unknown_buffers, gpu ? 1 : 0);
  fflush(stdout);
  pause(300);
  run(kAfter, 0);
  return 0;
}
