// reader/ordered_appends.h: a sequence kept in order while its elements are appended nearly in
// order, as a trace's events of one thread are (a CUPTI buffer boundary or a child range written
// before the parent that starts with it puts a few out of place).
//
// The caller keeps `in_order`, how many elements at the front are known to be in order. Appending
// in order keeps them all so (noteAppended, O(1)); putInOrder() sorts only what came since, and
// merges it in from where its first element belongs. A trace written in order then never sorts
// what it already holds: issue 20 found the reader re-sorting every list it held from the start at
// each lookup, quadratic in a trace's collectives and Python ranges.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gapwatch {

// After seq.push_back(x): whether x extends the ordered front.
template <class Sequence, class Less>
void noteAppended(const Sequence& seq, std::size_t& in_order, Less less) {
  const std::size_t n = seq.size();
  if (in_order + 1 == n && (in_order == 0 || !less(seq[n - 1], seq[n - 2]))) in_order = n;
}

// Puts the whole sequence in order (stable: of equal elements, the one appended first stays
// first). Returns how many elements were sorted or merged, from the first one that could move to
// the end: 0 when all were in order.
template <class Sequence, class Less>
std::size_t putInOrder(Sequence& seq, std::size_t& in_order, Less less) {
  const std::size_t n = seq.size();
  if (in_order >= n) {
    in_order = n;
    return 0;
  }
  const auto mid = seq.begin() + static_cast<std::ptrdiff_t>(in_order);
  std::stable_sort(mid, seq.end(), less);
  // Elements of the ordered front that are not after the tail's first stay where they are.
  const auto from = std::upper_bound(seq.begin(), mid, *mid, less);
  std::inplace_merge(from, mid, seq.end(), less);
  in_order = n;
  return static_cast<std::size_t>(seq.end() - from);
}

// After erasing `count` elements from the front.
inline void notePoppedFront(std::size_t& in_order, std::size_t count) { in_order -= std::min(in_order, count); }

}  // namespace gapwatch
