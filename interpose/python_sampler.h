// python_sampler.h: what the launching thread's Python was doing while it stayed out of CUDA.
//
// Host time between kernels is most of the idle time of real jobs, and what decides its fix is
// what the host was doing: waiting for the DataLoader, in framework code, in the user's own
// per-step Python. A PyTorch trace says so with its host events; a live recording has only the
// CUDA calls. So the flusher thread reads the Python stack of the thread that launches the
// device's work, every period (GAPWATCH_PY_SAMPLE_MS, default 10 ms), but only while that thread
// has been outside CUDA calls for longer than a threshold (GAPWATCH_PY_SAMPLE_AFTER_MS, default
// 1 ms): nothing is read while the thread is inside CUDA (a sync, a copy), or between the
// launches of a thread that keeps launching. The library cannot know in-process whether the
// device is idle then (CUPTI hands its records over later, in buffers), so a sample taken while
// the device was still busy with queued work is kept and used by no gap (the analysis only splits
// idle time); a GPU-bound job's launching thread waits inside CUDA and is not sampled.
//
// Why the flusher and not a thread of its own: the flusher already wakes every 5 ms to look at
// the rings' fill levels, and a timed wake-up is most of what a sample costs (42 us of CPU on the
// virtual machines the benchmarks ran on, docs/performance.md); a sample adds about 20 us of reads
// to a wake-up that happens anyway. A flush round (a few ms at most) delays the samples due in it.
//
// Which thread: the last thread with a Python thread state that launched work (PyTorch's forward
// runs on the Python thread, its backward on the autograd engine's C++ threads, which have no
// Python and are never the one sampled). Other threads, and subinterpreters, are out of scope.
//
// Threads and safety: the sampled thread runs while its stack is read, so every read of its
// memory goes through process_vm_readv (python_stack.h): a torn or freed frame costs that sample,
// counted under DROP_SOURCE_PYTHON_SAMPLE, never a fault. Launching threads call note_launch()
// (a thread-local compare on every launch; a mutex only when the launching thread changes). The
// flusher posts the stacks into the recorder's mailbox like a blocking call's and queues the
// samples (bounded), then takes them with its next batch (take()); a full queue or mailbox is a
// counted drop.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gapwatch {

class EventRing;
class Recorder;
struct PythonReadState;

// One sample, as the flusher turns it into a PythonSample.
struct PythonSampleRecord {
  uint32_t thread_id = 0;
  uint64_t ticks = 0;         // host_clock.h
  uint32_t stack_number = 0;  // the recorder's mailbox number; 0: the stack could not be read
};

class PythonSampler {
 public:
  // Why samples were lost, by DropCounter id of DROP_SOURCE_PYTHON_SAMPLE (events.proto).
  static constexpr uint32_t kMissChanged = 5;
  static constexpr uint32_t kMissUnreadable = 6;
  static constexpr uint32_t kMissQueueFull = 7;
  static constexpr uint32_t kMissFreeThreaded = 8;    // as DROP_SOURCE_PYTHON_STACK numbers it
  static constexpr uint32_t kMissLayoutMismatch = 9;  // as DROP_SOURCE_PYTHON_STACK numbers it
  static constexpr uint32_t kMissKinds = 10;

  PythonSampler(Recorder& recorder, uint64_t period_ns, uint64_t threshold_ns);
  ~PythonSampler();
  PythonSampler(const PythonSampler&) = delete;
  PythonSampler& operator=(const PythonSampler&) = delete;

  // The flusher, once a period: samples the launching thread if it has been outside CUDA for the
  // threshold. Samples nothing until the flusher has given it the threshold in host ticks
  // (set_threshold_ticks: the tick rate is known from the second calibration on).
  void poll();
  void set_threshold_ticks(uint64_t ticks) { threshold_ticks_.store(ticks, std::memory_order_relaxed); }
  uint64_t threshold_ns() const { return threshold_ns_; }
  // At exit: one line at GAPWATCH_LOG=info with what the walks cost.
  void log_summary() const;

  // Hot path, at each launch of a thread whose ring is `ring`: makes it the sampled thread when
  // it is not already and it runs Python.
  void note_launch(EventRing* ring) {
    if (__builtin_expect(ring == launcher_ring_.load(std::memory_order_relaxed), 1)) return;
    note_new_launcher(ring);
  }

  // Flusher: the samples taken since the last call, appended to `out`.
  void take(std::vector<PythonSampleRecord>* out);
  uint64_t period_ns() const { return period_ns_; }
  uint64_t missed(uint32_t id) const { return id < kMissKinds ? misses_[id].load(std::memory_order_relaxed) : 0; }
  uint64_t samples_taken() const { return taken_.load(std::memory_order_relaxed); }

 private:
  struct Launcher {
    EventRing* ring = nullptr;
    uint32_t tid = 0;             // the ring's owner when it launched: a reused ring is not its
    unsigned long pthread = 0;    // pthread_self(), what its PyThreadState names as its thread
    const void* tstate = nullptr;
  };
  void note_new_launcher(EventRing* ring);
  void sample_once(const Launcher& launcher, uint64_t threshold_ticks);
  void count(uint32_t id) {
    if (id < kMissKinds) misses_[id].fetch_add(1, std::memory_order_relaxed);
  }

  Recorder& recorder_;
  const uint64_t period_ns_;
  const uint64_t threshold_ns_;
  std::atomic<uint64_t> threshold_ticks_{0};

  PythonReadState* read_state_ = nullptr;  // the flusher's (python_stack.h)

  std::atomic<EventRing*> launcher_ring_{nullptr};
  std::mutex launcher_mu_;  // guards launcher_; never held with another lock
  Launcher launcher_;

  std::mutex queue_mu_;  // guards queue_; never held with another lock
  std::vector<PythonSampleRecord> queue_;  // capacity reserved at start: never grows
  static constexpr size_t kQueueCapacity = 4096;

  std::atomic<uint64_t> misses_[kMissKinds] = {};
  std::atomic<uint64_t> taken_{0};
  uint64_t walks_ = 0, walk_ns_ = 0;  // flusher only (then the exit path): the CPU of the walks


};

}  // namespace gapwatch
