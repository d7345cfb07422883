// nccl_comm_cache.h: which NCCL communicators the recorder already has the rank and size of.
//
// Every hooked NCCL call asks it (nccl_hooks.cpp), on the user's thread, so the lookup takes no
// lock and touches a bounded number of slots: a fixed open-addressed set of handles, each probe
// window kProbe slots long. A communicator not found is asked its rank and size once (off this
// set's hands), then remembered; a destroyed one is forgotten (its slot becomes a tombstone) before
// NCCL frees it (nccl_hooks.cpp), so that a new communicator at the same address is asked again. A tombstone is taken again by the
// next communicator whose window holds it: a job that creates and destroys communicators all along
// (a communicator per phase, per pipeline stage) keeps its live ones cached, however many lifetimes
// it goes through. A window with no free slot (more live communicators hashing there than it has
// slots, which no job has) leaves the communicator uncached: asked again on each call, slower,
// still right.
//
// Threads: any, at once. Two threads remembering one communicator may put it in two slots;
// forget() clears every copy.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gapwatch {

template <size_t kSlots = 1024, size_t kProbe = 16>
class NcclCommCache {
  static_assert(kProbe <= kSlots, "a window longer than the table");

 public:
  // True when `handle` is remembered. `probes`, when given, is how many slots the lookup read.
  bool known(uint64_t handle, size_t* probes = nullptr) const {
    size_t i = slot(handle), n = 0;
    bool found = false;
    for (; n < kProbe; ++n, i = next(i)) {
      const uint64_t v = slots_[i].load(std::memory_order_acquire);
      if (v == handle) {
        found = true;
        ++n;
        break;
      }
      if (v == kEmpty) {
        ++n;
        break;
      }
    }
    if (probes) *probes = n;
    return found;
  }

  // Remembers `handle` (not 0, not kTombstone) in the first free slot of its window: a tombstone
  // or an empty slot, whichever comes first. False when the window has none.
  bool remember(uint64_t handle) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      size_t i = slot(handle), free_slot = kSlots;
      uint64_t free_value = 0;
      for (size_t n = 0; n < kProbe; ++n, i = next(i)) {
        const uint64_t v = slots_[i].load(std::memory_order_acquire);
        if (v == handle) return true;
        if ((v == kTombstone || v == kEmpty) && free_slot == kSlots) free_slot = i, free_value = v;
        if (v == kEmpty) break;  // the handle is in no later slot
      }
      if (free_slot == kSlots) return false;
      uint64_t expected = free_value;
      if (slots_[free_slot].compare_exchange_strong(expected, handle, std::memory_order_acq_rel)) return true;
      // Another thread took that slot first: look again.
    }
    return false;
  }

  // Forgets `handle`: every slot holding it becomes a tombstone.
  void forget(uint64_t handle) {
    if (handle == kEmpty || handle == kTombstone) return;
    size_t i = slot(handle);
    for (size_t n = 0; n < kProbe; ++n, i = next(i)) {
      uint64_t expected = handle;
      if (slots_[i].compare_exchange_strong(expected, kTombstone, std::memory_order_acq_rel)) continue;
      if (expected == kEmpty) return;
    }
  }

  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kTombstone = 1;  // never a communicator's address

 private:
  static size_t slot(uint64_t handle) { return size_t((handle >> 4) * 0x9e3779b97f4a7c15ull >> 40) % kSlots; }
  static size_t next(size_t i) { return i + 1 == kSlots ? 0 : i + 1; }

  std::atomic<uint64_t> slots_[kSlots] = {};
};

}  // namespace gapwatch
