// analysis/flat_u64_map.h: a hash map from 64-bit integer keys (correlation ids, thread
// ids) to small values, for the engine's per-event lookups.
//
// std::unordered_map allocates a node per insertion and frees it per erase, which on the engine's
// path (every launch is added, found and erased once) costs more than the analysis itself. This
// one keeps its entries in one array: open addressing with linear probing, Fibonacci hashing (ids
// that grow by one still spread), deletion by shifting the following entries back (no tombstones,
// so lookups stay short however many ids come and go). It grows when half full and never
// shrinks: its memory is the most entries it ever held at once.
//
// Pointers to values stay valid only until the next insertion or erase. Iteration order is
// unspecified: use it only where the order does not matter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gapwatch::analysis {

template <typename Value>
class FlatU64Map {
 public:
  std::size_t size() const { return size_ + (has_zero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }

  Value* find(uint64_t key) {
    if (key == 0) return has_zero_ ? &zero_value_ : nullptr;
    const std::size_t i = slotOf(key);
    return i == kNoSlot ? nullptr : &slots_[i].value;
  }
  const Value* find(uint64_t key) const { return const_cast<FlatU64Map*>(this)->find(key); }
  bool contains(uint64_t key) const { return find(key) != nullptr; }

  // Inserts (key, value) unless the key is present; returns the value in the map and whether it
  // was inserted.
  std::pair<Value*, bool> tryEmplace(uint64_t key, const Value& value) {
    if (key == 0) {
      if (has_zero_) return {&zero_value_, false};
      has_zero_ = true;
      zero_value_ = value;
      return {&zero_value_, true};
    }
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.key == key) return {&slot.value, false};
      if (slot.key == 0) {
        slot.key = key;
        slot.value = value;
        ++size_;
        return {&slot.value, true};
      }
    }
  }

  // The value of `key`, default-constructed when new.
  Value& operator[](uint64_t key) { return *tryEmplace(key, Value{}).first; }

  bool erase(uint64_t key) {
    if (key == 0) {
      const bool had = has_zero_;
      has_zero_ = false;
      zero_value_ = Value{};
      return had;
    }
    const std::size_t i = slotOf(key);
    if (i == kNoSlot) return false;
    eraseAt(i);
    return true;
  }

  // Erases `key` when pred(its value) holds: one probe where find() then erase() take two.
  // Returns whether it erased.
  template <typename Pred>
  bool eraseIf(uint64_t key, Pred&& pred) {
    if (key == 0) return has_zero_ && pred(static_cast<const Value&>(zero_value_)) && erase(0);
    const std::size_t i = slotOf(key);
    if (i == kNoSlot || !pred(static_cast<const Value&>(slots_[i].value))) return false;
    eraseAt(i);
    return true;
  }

  void clear() {
    slots_.assign(slots_.size(), Slot{});
    size_ = 0;
    has_zero_ = false;
    zero_value_ = Value{};
  }

  // fn(key, value) for every entry, in no particular order. fn must not insert or erase.
  template <typename Fn>
  void forEach(Fn&& fn) {
    if (has_zero_) fn(uint64_t{0}, zero_value_);
    for (Slot& slot : slots_) {
      if (slot.key != 0) fn(slot.key, slot.value);
    }
  }
  template <typename Fn>
  void forEach(Fn&& fn) const {
    if (has_zero_) fn(uint64_t{0}, zero_value_);
    for (const Slot& slot : slots_) {
      if (slot.key != 0) fn(slot.key, slot.value);
    }
  }

  // Erases every entry for which pred(key, value) is true.
  template <typename Pred>
  void eraseWhere(Pred&& pred) {
    if (has_zero_ && pred(uint64_t{0}, zero_value_)) erase(0);
    std::vector<uint64_t> doomed;
    for (Slot& slot : slots_) {
      if (slot.key != 0 && pred(slot.key, slot.value)) doomed.push_back(slot.key);
    }
    for (uint64_t key : doomed) erase(key);
  }

 private:
  struct Slot {
    uint64_t key = 0;  // 0: free (key 0 lives in zero_value_)
    Value value{};
  };

  static constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);

  // The slot holding `key` (not 0), or kNoSlot.
  std::size_t slotOf(uint64_t key) const {
    if (slots_.empty()) return kNoSlot;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return i;
      if (slots_[i].key == 0) return kNoSlot;
    }
  }

  // Backward shift: moves up each following entry that may sit at the freed slot (its home is not
  // cyclically in (hole, j]), so that every probe sequence stays unbroken; no tombstones.
  void eraseAt(std::size_t i) {
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (stays) continue;
      slots_[hole] = std::move(slots_[j]);
      hole = j;
    }
    slots_[hole].key = 0;
    slots_[hole].value = Value{};
    --size_;
  }

  std::size_t home(uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void grow() {
    const std::size_t capacity = slots_.empty() ? 16 : slots_.size() * 2;
    std::vector<Slot> old(capacity);
    old.swap(slots_);
    mask_ = capacity - 1;
    shift_ = 64;
    for (std::size_t c = capacity; c > 1; c >>= 1) --shift_;
    for (Slot& slot : old) {
      if (slot.key == 0) continue;
      std::size_t i = home(slot.key);
      while (slots_[i].key != 0) i = (i + 1) & mask_;
      slots_[i] = std::move(slot);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t size_ = 0;  // entries in slots_
  bool has_zero_ = false;
  Value zero_value_{};
};

}  // namespace gapwatch::analysis
