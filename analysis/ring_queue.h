// analysis/ring_queue.h: a FIFO in one ring buffer, for the engine's per-event queues.
//
// std::deque allocates and frees a block every few hundred bytes as a queue slides along, which
// on the engine's path (every call goes through a few queues) adds up; this keeps one power-of-two
// array, grown by doubling and never shrunk: its memory is the longest the queue ever was.
// Elements are indexed from the front, so a sorted queue can be binary searched.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace gapwatch::analysis {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  T& operator[](std::size_t i) { return items_[(head_ + i) & mask_]; }
  const T& operator[](std::size_t i) const { return items_[(head_ + i) & mask_]; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(const T& item) {
    if (size_ == items_.size()) grow();
    items_[(head_ + size_) & mask_] = item;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }
  // Removes every element for which `drop` is true, keeping the others in order; `keep(item)` is
  // called on each one kept, front to back (to refresh a running value such as a prefix maximum).
  template <typename Drop, typename Keep>
  void eraseIf(Drop drop, Keep keep) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      T& item = (*this)[i];
      if (drop(item)) continue;
      if (kept != i) (*this)[kept] = std::move(item);
      keep((*this)[kept]);
      ++kept;
    }
    size_ = kept;
  }

 private:
  void grow() {
    std::vector<T> bigger(items_.empty() ? 16 : items_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    items_.swap(bigger);
    head_ = 0;
    mask_ = items_.size() - 1;
  }

  std::vector<T> items_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
};

}  // namespace gapwatch::analysis
