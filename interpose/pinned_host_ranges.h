// pinned_host_ranges.h: which host memory is page-locked (pinned), so that an async copy whose host
// side is pinned (which only enqueues) is told from one whose host side is pageable (which can wait
// for the copy, or for the stream, before it returns): only the latter gets a Python stack walk
// (recorder.h, attach_python_stack; docs/design/python-stacks.md).
//
// Pinned: from the successful exit of cudaHostAlloc, cudaMallocHost, cuMemHostAlloc, cuMemAllocHost
// (the returned pointer and the size asked) or cudaHostRegister, cuMemHostRegister (the range
// given), until the exit of cudaFreeHost, cuMemFreeHost, cudaHostUnregister or cuMemHostUnregister of
// its base. Memory pinned before recording started, or while the table was full, is not in it: it
// counts as pageable, and its copies are walked as before (never a stack missing where a copy
// waits; a walk too many at worst).
//
// Threads: user threads only, inside their CUDA calls' exit callbacks or symbol hooks.
//  - add() and remove(): the rare calls above; serialized by a mutex (never held with another
//    gapwatch lock, never on a launch or a copy), each change bracketed by a sequence counter.
//  - pinned(): every async copy's exit (never a launch's); no lock, no allocation, no system call:
//    reads the sequence counter, binary-searches the live entries (relaxed atomic loads), and reads
//    the counter again (a seqlock); if a change ran meanwhile, it retries a few times, then answers
//    "not known pinned" (a walk, as before).
// Fixed capacity: kCapacity entries in static storage, the live ones dense at the front and sorted
// by start (a caching host allocator such as PyTorch's keeps tens to hundreds of blocks). A full
// table drops the new range (counted in full_drops()).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <mutex>

namespace gapwatch {

class PinnedHostRanges {
 public:
  static constexpr size_t kCapacity = 1024;

  // [base, base + bytes) is pinned. Returns false when the table is full (the range stays unknown).
  bool add(const void* base, size_t bytes);
  // The range that starts at `base` is pinned no more (its free or unregistration returned).
  void remove(const void* base);
  // Whether [p, p + bytes) lies inside one range known pinned. A zero-byte copy: whether p does.
  bool pinned(const void* p, size_t bytes) const;

  size_t size() const { return count_.load(std::memory_order_relaxed); }
  uint64_t full_drops() const { return full_drops_.load(std::memory_order_relaxed); }
  // Forgets every range (tests).
  void clear();

 private:
  void begin_change();
  void end_change();
  // The first of the n live entries that starts after a (n when none does).
  size_t first_after(uintptr_t a, size_t n) const;

  std::mutex write_mu_;                 // add/remove/clear
  std::atomic<uint64_t> sequence_{0};   // odd while a change is being written
  std::atomic<size_t> count_{0};        // live entries: [0, count_)
  std::atomic<uintptr_t> begin_[kCapacity] = {};
  std::atomic<uintptr_t> end_[kCapacity] = {};
  std::atomic<uint64_t> full_drops_{0};
};

// The process's table (the injected library's one).
PinnedHostRanges& pinned_host_ranges();

}  // namespace gapwatch
