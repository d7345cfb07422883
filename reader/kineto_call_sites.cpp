// reader/kineto_call_sites.cpp: see kineto_call_sites.h.
#include "reader/kineto_call_sites.h"

#include "reader/ordered_appends.h"

#include <algorithm>

namespace gapwatch {

bool KinetoCallSites::outerFirst(const Range& a, const Range& b) {
  // Outer before inner at one start, so that walking back meets the inner range first. A child
  // that starts in its parent's microsecond is often written first (Kineto writes a range when it
  // ends): the order must be checked on the whole key, not the start alone.
  return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
}

void KinetoCallSites::onPythonFunction(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns, std::string_view name) {
  if (count_ >= kMaxRanges) {
    capped_ = true;
    return;
  }
  auto [it, added] = name_ids_.try_emplace(std::string(name), static_cast<uint32_t>(names_.size()));
  if (added) names_.emplace_back(name);
  Thread& thread = threads_[thread_id];
  thread.ranges.push_back({start_ns, std::max(start_ns, end_ns), it->second});
  noteAppended(thread.ranges, thread.in_order, outerFirst);
  ++count_;
}

KinetoCallSites::Thread* KinetoCallSites::sortedThread(uint32_t thread_id) {
  auto it = threads_.find(thread_id);
  if (it == threads_.end()) return nullptr;
  Thread& thread = it->second;
  const std::size_t moved = putInOrder(thread.ranges, thread.in_order, outerFirst);
  reordered_ += moved;
  const std::size_t from = thread.ranges.size() - moved;
  if (moved > 0 && from < thread.parents.size()) {
    // The parents of the ranges before `from` still hold; the sweep's stack after them is the
    // chain from the last of them out to its outermost parent.
    thread.parents.resize(from);
    thread.open.clear();
    for (int64_t at = static_cast<int64_t>(from) - 1; at >= 0; at = thread.parents[static_cast<std::size_t>(at)]) {
      thread.open.push_back(static_cast<int32_t>(at));
    }
    std::reverse(thread.open.begin(), thread.open.end());
  }
  return &thread;
}

int64_t KinetoCallSites::innermost(const Thread& thread, uint64_t start_ns, uint64_t end_ns) const {
  const auto after = std::upper_bound(thread.ranges.begin(), thread.ranges.end(), start_ns,
                                      [](uint64_t t, const Range& r) { return t < r.start_ns; });
  std::size_t walked = 0;
  for (auto r = after; r != thread.ranges.begin() && walked < kMaxWalk; ++walked) {
    --r;
    // Ranges nest, so the first one met that holds the call is the innermost that does.
    if (r->end_ns >= end_ns) return r - thread.ranges.begin();
  }
  return -1;
}

const std::string* KinetoCallSites::siteOf(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns) {
  Thread* thread = sortedThread(thread_id);
  if (!thread) return nullptr;
  const int64_t at = innermost(*thread, start_ns, end_ns);
  return at < 0 ? nullptr : &names_[thread->ranges[static_cast<std::size_t>(at)].name];
}

void KinetoCallSites::sweepParents(Thread& thread) {
  for (std::size_t i = thread.parents.size(); i < thread.ranges.size(); ++i) {
    // An open range that ends before this one does not hold it, nor (ranges nest, and later ones
    // start later) any range after it.
    while (!thread.open.empty() && thread.ranges[static_cast<std::size_t>(thread.open.back())].end_ns < thread.ranges[i].end_ns)
      thread.open.pop_back();
    thread.parents.push_back(thread.open.empty() ? -1 : thread.open.back());
    thread.open.push_back(static_cast<int32_t>(i));
  }
}

namespace {

// "torch/_tensor.py(30): item" as the recorder's "item\ttorch/_tensor.py\t30\n"; another name is
// a function with no file and line.
void appendFrame(std::string& out, std::string_view name) {
  const std::size_t colon = name.find("): ");
  const std::size_t open = colon == std::string_view::npos ? std::string_view::npos : name.rfind('(', colon);
  std::string_view line = open == std::string_view::npos ? std::string_view() : name.substr(open + 1, colon - open - 1);
  const bool digits = !line.empty() && line.size() <= 9 &&
                      std::all_of(line.begin(), line.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  std::string_view function = name, file, number = "0";
  if (digits) function = name.substr(colon + 3), file = name.substr(0, open), number = line;
  // A tab or newline inside a name would break the text's lines: such names keep their place
  // with spaces instead.
  const auto put = [&](std::string_view text) {
    for (char ch : text) out.push_back(ch == '\t' || ch == '\n' ? ' ' : ch);
  };
  put(function);
  out.push_back('\t');
  put(file);
  out.push_back('\t');
  out.append(number);
  out.push_back('\n');
}

}  // namespace

std::string KinetoCallSites::stackOf(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns) {
  std::string text;
  Thread* thread = sortedThread(thread_id);
  if (!thread) return text;
  int64_t at = innermost(*thread, start_ns, end_ns);
  if (at >= 0) sweepParents(*thread);
  for (std::size_t frames = 0; at >= 0; ++frames) {
    if (frames == kMaxStackFrames) {
      text += "...\t\t0\n";
      break;
    }
    appendFrame(text, names_[thread->ranges[static_cast<std::size_t>(at)].name]);
    at = thread->parents[static_cast<std::size_t>(at)];
  }
  return text;
}

}  // namespace gapwatch
