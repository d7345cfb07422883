// reader/kineto_call_sites.cpp: see kineto_call_sites.h.
#include "reader/kineto_call_sites.h"

#include <algorithm>

namespace gapwatch {

void KinetoCallSites::onPythonFunction(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns, std::string_view name) {
  if (count_ >= kMaxRanges) {
    capped_ = true;
    return;
  }
  auto [it, added] = name_ids_.try_emplace(std::string(name), static_cast<uint32_t>(names_.size()));
  if (added) names_.emplace_back(name);
  Thread& thread = threads_[thread_id];
  if (!thread.ranges.empty() && start_ns < thread.ranges.back().start_ns) thread.sorted = false;
  thread.ranges.push_back({start_ns, std::max(start_ns, end_ns), it->second});
  ++count_;
}

const std::string* KinetoCallSites::siteOf(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns) {
  auto it = threads_.find(thread_id);
  if (it == threads_.end()) return nullptr;
  Thread& thread = it->second;
  if (!thread.sorted) {
    // Outer before inner at one start, so that walking back meets the inner range first.
    std::sort(thread.ranges.begin(), thread.ranges.end(), [](const Range& a, const Range& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    thread.sorted = true;
  }
  const auto after = std::upper_bound(thread.ranges.begin(), thread.ranges.end(), start_ns,
                                      [](uint64_t t, const Range& r) { return t < r.start_ns; });
  std::size_t walked = 0;
  for (auto r = after; r != thread.ranges.begin() && walked < kMaxWalk; ++walked) {
    --r;
    // Ranges nest, so the first one met that holds the call is the innermost that does.
    if (r->end_ns >= end_ns) return &names_[r->name];
  }
  return nullptr;
}

}  // namespace gapwatch
