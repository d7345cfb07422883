#include "pinned_host_ranges.h"

namespace gapwatch {

// A writer makes the counter odd, changes entries, makes it even again; a reader that saw the same
// even value before and after its scan read no change in progress (the fences order the relaxed
// entry loads between the two counter loads).
void PinnedHostRanges::begin_change() {
  sequence_.store(sequence_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

void PinnedHostRanges::end_change() {
  sequence_.store(sequence_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

bool PinnedHostRanges::add(const void* base, size_t bytes) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  if (!b || !bytes || b + bytes < b) return true;  // nothing a copy could name
  std::lock_guard<std::mutex> lock(write_mu_);
  const size_t n = count_.load(std::memory_order_relaxed);
  if (n == kCapacity) {
    full_drops_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  begin_change();
  begin_[n].store(b, std::memory_order_relaxed);
  end_[n].store(b + bytes, std::memory_order_relaxed);
  count_.store(n + 1, std::memory_order_relaxed);
  end_change();
  return true;
}

void PinnedHostRanges::remove(const void* base) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  if (!b) return;
  std::lock_guard<std::mutex> lock(write_mu_);
  const size_t n = count_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    if (begin_[i].load(std::memory_order_relaxed) != b) continue;
    // The last entry moves into the hole: live entries stay dense.
    begin_change();
    begin_[i].store(begin_[n - 1].load(std::memory_order_relaxed), std::memory_order_relaxed);
    end_[i].store(end_[n - 1].load(std::memory_order_relaxed), std::memory_order_relaxed);
    count_.store(n - 1, std::memory_order_relaxed);
    end_change();
    return;
  }
}

void PinnedHostRanges::clear() {
  std::lock_guard<std::mutex> lock(write_mu_);
  begin_change();
  count_.store(0, std::memory_order_relaxed);
  end_change();
}

bool PinnedHostRanges::pinned(const void* p, size_t bytes) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!a) return false;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t before = sequence_.load(std::memory_order_acquire);
    if (before & 1) continue;  // a change is being written: look again
    size_t n = count_.load(std::memory_order_relaxed);
    if (n > kCapacity) n = kCapacity;
    bool inside = false;
    for (size_t i = 0; i < n && !inside; ++i) {
      const uintptr_t b = begin_[i].load(std::memory_order_relaxed);
      const uintptr_t e = end_[i].load(std::memory_order_relaxed);
      inside = a >= b && a < e && bytes <= e - a;
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (sequence_.load(std::memory_order_relaxed) == before) return inside;
  }
  return false;  // changing under every look: not known pinned
}

namespace {
// Constant-initialized static storage: there before any callback can come, and nothing to
// destroy at exit (every member is trivially destructible), so a call made late in exit is safe.
constinit PinnedHostRanges g_table;
}  // namespace

PinnedHostRanges& pinned_host_ranges() { return g_table; }

}  // namespace gapwatch
