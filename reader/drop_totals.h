// reader/drop_totals.h: the latest drop total of every (source, id) pair of a stream.
//
// Recorders send cumulative totals when they change (EventBatch.drops) and the final ones in
// Goodbye.drops, so the latest value seen is the answer even when a batch in between was lost.
#pragma once

#include "reader/events.h"

#include <cstdint>
#include <map>
#include <utility>

namespace gapwatch {

class DropTotals {
 public:
  void update(const DropCount& count) { latest_[{count.source, count.id}] = count.dropped; }

  // Sum of the latest totals of one source over all its ids (threads, devices).
  uint64_t total(v1::DropSource source) const {
    uint64_t sum = 0;
    for (const auto& [key, dropped] : latest_) {
      if (key.first == source) sum += dropped;
    }
    return sum;
  }

  const std::map<std::pair<v1::DropSource, uint64_t>, uint64_t>& all() const { return latest_; }

 private:
  std::map<std::pair<v1::DropSource, uint64_t>, uint64_t> latest_;
};

}  // namespace gapwatch
