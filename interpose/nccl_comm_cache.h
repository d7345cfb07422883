// nccl_comm_cache.h: which NCCL communicators the recorder already has the rank and size of, read
// without a lock on every hooked NCCL call (nccl_hooks.cpp): a fixed open-addressed set of
// handles; a destroyed communicator's slot becomes a tombstone, so a new one at the same address
// is asked again. Moved out of nccl_hooks.cpp unchanged, to be tested alone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gapwatch {

template <size_t kSlots = 1024, size_t kProbe = 16>
class NcclCommCache {
 public:
  bool known(uint64_t handle, size_t* probes = nullptr) const {
    size_t n = 0;
    bool found = false;
    for (size_t i = slot(handle); n < kSlots; i = (i + 1) % kSlots) {
      uint64_t v = slots_[i].load(std::memory_order_acquire);
      ++n;
      if (v == handle) { found = true; break; }
      if (v == 0) break;
    }
    if (probes) *probes = n;
    return found;
  }
  bool remember(uint64_t handle) {
    for (size_t i = slot(handle), n = 0; n < kSlots; ++n, i = (i + 1) % kSlots) {
      uint64_t expected = 0;
      if (slots_[i].compare_exchange_strong(expected, handle, std::memory_order_acq_rel) || expected == handle)
        return true;
    }
    return false;
  }
  void forget(uint64_t handle) {
    if (!handle) return;
    for (size_t i = slot(handle), n = 0; n < kSlots; ++n, i = (i + 1) % kSlots) {
      uint64_t expected = handle;
      if (slots_[i].compare_exchange_strong(expected, kTombstone, std::memory_order_acq_rel) || expected == 0)
        return;
    }
  }
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kTombstone = 1;
 private:
  static size_t slot(uint64_t handle) { return size_t((handle >> 4) * 0x9e3779b97f4a7c15ull >> 54) % kSlots; }
  std::atomic<uint64_t> slots_[kSlots] = {};
};

}  // namespace gapwatch
