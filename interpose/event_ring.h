// event_ring.h: one thread's single-producer, single-consumer ring of RawEvents.
//
// The producer is the user's thread (a CUPTI callback or a symbol hook): push() is a bounded,
// wait-free copy into a preallocated slot and one release store. It never allocates, locks or
// makes a system call; a full ring drops the event and counts it. The consumer is the flusher
// thread only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "raw_event.h"

namespace gapwatch {

class EventRing {
 public:
  // `slots` is preallocated by the flusher; capacity must be a power of two.
  EventRing(RawEvent* slots, size_t capacity) : slots_(slots), mask_(capacity - 1) {}

  // Producer side.
  bool push(const RawEvent& e) {
    uint64_t head = head_.load(std::memory_order_relaxed);
    uint64_t tail = tail_.load(std::memory_order_acquire);
    if (head - tail > mask_) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
    }
    slots_[head & mask_] = e;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Producer side, without a copy: a free slot to fill, then publish() it. Returns nullptr (and
  // counts a drop) when the ring is full; a slot not published is simply not used.
  RawEvent* reserve() {
    uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) > mask_) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return nullptr;
    }
    return &slots_[head & mask_];
  }
  void publish() { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // Consumer side: calls f(event) for everything published so far; returns how many.
  template <class F>
  size_t drain(F&& f) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t i = tail; i != head; ++i) f(slots_[i & mask_]);
    tail_.store(head, std::memory_order_release);
    return size_t(head - tail);
  }

  // Consumer side: how many published events wait to be drained.
  size_t fill() const {
    return size_t(head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed));
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Consumer side, once the owner is gone (no producer): the next owner starts from no drops.
  void forget_drops() { dropped_.store(0, std::memory_order_relaxed); }

  // Who may write the ring: nobody (free, to be claimed), its thread, or nobody any more (the
  // thread exited: the flusher drains it, then frees it for the next thread).
  enum State : uint32_t { kFree, kOwned, kGone };
  std::atomic<uint32_t> state{kFree};
  // Set by the producer when it claims the ring, before its first publish(); cleared by the
  // flusher when it frees the ring.
  std::atomic<uint32_t> owner_tid{0};

  // The outermost CUDA call the owner is inside, for the flusher's heartbeat: a program killed
  // while blocked leaves no record of the call otherwise. The owner writes the name and id, then
  // the entry time (release); at the call's exit it clears the time. The flusher reads the time,
  // the fields, and the time again: the same non-zero time both times, and the fields are that
  // call's (host ticks only grow, so a later call cannot look like this one).
  void enter_call(uint64_t start_ticks, const char* name, uint64_t correlation) {
    call_name_.store(name, std::memory_order_relaxed);
    call_correlation_.store(correlation, std::memory_order_relaxed);
    call_start_.store(start_ticks, std::memory_order_release);
  }
  void exit_call() { call_start_.store(0, std::memory_order_relaxed); }
  // The end of the owner's latest recorded call, for the Python sampler (python_sampler.h): how
  // long the thread has been outside CUDA. The owner stores it with each call record.
  void note_exit(uint64_t end_ticks) { last_exit_ticks_.store(end_ticks, std::memory_order_relaxed); }
  uint64_t last_exit_ticks() const { return last_exit_ticks_.load(std::memory_order_relaxed); }
  bool inside_call() const { return call_start_.load(std::memory_order_relaxed) != 0; }
  // Consumer side: the call in progress, or false when none (or it changed while being read).
  bool call_in_progress(uint64_t* start_ticks, const char** name, uint64_t* correlation) const {
    uint64_t start = call_start_.load(std::memory_order_acquire);
    if (!start) return false;
    *name = call_name_.load(std::memory_order_relaxed);
    *correlation = call_correlation_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    *start_ticks = start;
    return call_start_.load(std::memory_order_relaxed) == start;
  }

 private:
  RawEvent* slots_;
  uint64_t mask_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> call_start_{0};
  std::atomic<const char*> call_name_{nullptr};
  std::atomic<uint64_t> call_correlation_{0};
  std::atomic<uint64_t> last_exit_ticks_{0};  // on call_start_'s line: written by the same thread
};

}  // namespace gapwatch
