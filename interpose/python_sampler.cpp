// python_sampler.cpp: see python_sampler.h.
#include "python_sampler.h"

#include <pthread.h>

#include <algorithm>
#include <time.h>

#include <memory>

#include "event_ring.h"
#include "host_clock.h"
#include "python_stack.h"
#include "recorder.h"

namespace gapwatch {
namespace {

// Per launching thread: its PyThreadState once found. A thread without Python (a C++ program's,
// the autograd engine's) comes here at every launch, so it pays a countdown, not a clock read:
// it is looked at again after 1, 2, 4, ... launches, at most every 65536, in case it has started
// running Python since (PyGILState_Ensure on a foreign thread).
// initial-exec, as the recorder's own: no __tls_get_addr call on the launch path.
thread_local const void* t_tstate __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local uint32_t t_launches_to_recheck __attribute__((tls_model("initial-exec"))) = 0;
thread_local uint32_t t_recheck_interval __attribute__((tls_model("initial-exec"))) = 1;
constexpr uint32_t kMaxRecheckInterval = 65536;

// DropCounter ids of DROP_SOURCE_PYTHON_SAMPLE for a stack that could not be read (events.proto):
// the PythonStackMiss reasons as DROP_SOURCE_PYTHON_STACK numbers them.
uint32_t miss_id(PythonStackMiss miss) {
  switch (miss) {
    case PythonStackMiss::kUnknownVersion: return 1;
    case PythonStackMiss::kSubinterpreter: return 2;
    case PythonStackMiss::kInvalid: return 4;
    case PythonStackMiss::kUnreadable: return PythonSampler::kMissUnreadable;
    case PythonStackMiss::kChanged: return PythonSampler::kMissChanged;
    case PythonStackMiss::kFreeThreaded: return PythonSampler::kMissFreeThreaded;
    case PythonStackMiss::kLayoutMismatch: return PythonSampler::kMissLayoutMismatch;
    // No interpreter, a thread without Python, or one running no Python code (before its first
    // frame, or at the interpreter's shutdown): nothing was there to read, nothing was missed.
    default: return 0;
  }
}

}  // namespace

PythonSampler::PythonSampler(Recorder& recorder, uint64_t period_ns, uint64_t threshold_ns)
    : recorder_(recorder), period_ns_(period_ns), threshold_ns_(threshold_ns) {
  queue_.reserve(kQueueCapacity);
}

PythonSampler::~PythonSampler() { delete_python_read_state(read_state_); }

void PythonSampler::log_summary() const {
  if (!walks_) return;
  log_line(recorder_.settings(), LogLevel::kInfo,
           "python sampler: %llu samples, %llu walks (%llu found the last stack unchanged), %.1f reads and "
           "%.1f us CPU a walk",
           (unsigned long long)taken_.load(), (unsigned long long)walks_,
           (unsigned long long)python_read_state_unchanged(read_state_),
           double(python_read_state_reads(read_state_)) / double(walks_), double(walk_ns_) / 1e3 / double(walks_));
}

void PythonSampler::note_new_launcher(EventRing* ring) {
  if (!t_tstate) {
    if (t_launches_to_recheck > 0) {
      --t_launches_to_recheck;
      return;
    }
    t_tstate = current_python_thread_state();
    if (!t_tstate) {  // no Python here: the sampled thread stays the one it was
      t_launches_to_recheck = t_recheck_interval;
      t_recheck_interval = std::min(t_recheck_interval * 2, kMaxRecheckInterval);
      return;
    }
  }
  std::lock_guard<std::mutex> lock(launcher_mu_);
  launcher_ = {ring, ring->owner_tid.load(std::memory_order_relaxed), static_cast<unsigned long>(pthread_self()),
               t_tstate};
  launcher_ring_.store(ring, std::memory_order_relaxed);
}

void PythonSampler::take(std::vector<PythonSampleRecord>* out) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  out->insert(out->end(), queue_.begin(), queue_.end());
  queue_.clear();
}

void PythonSampler::poll() {
  if (!read_state_) read_state_ = new_python_read_state();  // the flusher's first poll, not a user thread
  Launcher launcher;
  {
    std::lock_guard<std::mutex> guard(launcher_mu_);
    launcher = launcher_;
  }
  const uint64_t threshold = threshold_ticks_.load(std::memory_order_relaxed);
  if (launcher.ring && threshold) sample_once(launcher, threshold);
}

void PythonSampler::sample_once(const Launcher& launcher, uint64_t threshold_ticks) {
  EventRing& ring = *launcher.ring;
  // The thread exited and its ring went to another: not the thread to sample any more.
  if (ring.owner_tid.load(std::memory_order_relaxed) != launcher.tid) return;
  const uint64_t exit = ring.last_exit_ticks();
  if (ring.inside_call() || exit == 0) return;
  const uint64_t now = host_ticks();
  if (now < exit || now - exit < threshold_ticks) return;
  static char text[kMaxPythonStackText];  // this thread's only: nothing allocated per sample
  PythonStackMiss miss;
  int read_error = 0;
  // The walks' CPU time only when asked for (GAPWATCH_LOG=info): the thread's CPU clock is a
  // system call, two of them a sample.
  const bool timed = recorder_.settings().log >= LogLevel::kInfo;
  timespec t0{}, t1{};
  if (timed) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  const size_t length = capture_other_thread_python_stack(read_state_, launcher.tstate, launcher.pthread, text,
                                                          sizeof text, &miss, &read_error);
  if (timed) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  walk_ns_ += uint64_t((t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec));
  ++walks_;
  // A thread that entered CUDA while it was read was sampled at its call, not in the stretch
  // outside: the sample is not kept (not a miss).
  if (ring.inside_call() || ring.last_exit_ticks() != exit) return;
  uint32_t number = 0;
  if (length == 0) {
    const uint32_t id = miss_id(miss);
    if (id == 0) return;  // the thread runs no Python (any more): nothing was there to read
    count(id);
  } else {
    number = recorder_.post_stack_text(text, length);
    if (number == 0) return count(kMissQueueFull);  // read, but no room to keep it: no sample
  }
  std::lock_guard<std::mutex> lock(queue_mu_);
  if (queue_.size() == queue_.capacity()) return count(kMissQueueFull);
  queue_.push_back({launcher.tid, now, number});
  taken_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace gapwatch
