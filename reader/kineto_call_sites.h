// reader/kineto_call_sites.h: where in Python a CUDA call of a Kineto trace was made.
//
// A trace written with `with_stack=True` holds `python_function` events: one range per Python
// frame ("train.py(88): train_step"), nested on the thread that ran it. A runtime call's call site
// is the innermost such range on its thread that holds the call, which is what the recorder's
// call sites are for a recording: the report then says which line a sync came from. The trace
// writes the Python ranges in its CPU block, before the device block's calls, so they are held
// per thread and looked up by time (sorted once per block, binary search, a bounded walk back).
// Memory: the Python ranges, capped at kMaxRanges (beyond it, later ones are not kept and their
// calls get no call site; `capped()` says so).
//
// The whole stack of a call (stackOf) is the innermost range and the ranges around it, in the
// recorder's STRING_KIND_PYTHON_STACK text, so a trace's calls are presented as a recording's are
// (the user's frame named, library frames folded). Each range's parent (the nearest earlier range
// that holds it) comes from one sweep over the sorted ranges with a stack of the open ones,
// continued where it stopped when more ranges arrive in order: linear in the ranges.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gapwatch {

class KinetoCallSites {
 public:
  static constexpr uint64_t kMaxRanges = 4'000'000;  // about 130 MB with their parents
  // How far back the lookup walks from the latest range that starts before the call: ranges
  // that end before the call (siblings) are passed over, up to this many.
  static constexpr std::size_t kMaxWalk = 256;

  void onPythonFunction(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns, std::string_view name);
  // The name of the innermost Python range of `thread_id` that holds [start_ns, end_ns], or
  // nullptr when none does (or the trace has no Python ranges).
  const std::string* siteOf(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns);
  // The call's whole Python stack, innermost first, as "function\tfile\tline\n" lines (a
  // name that is not "file(line): function", as "<built-in method ...>" or "nn.Module: Linear_0",
  // is a frame with no file, folded as library code); empty when no range holds the call. Deeper
  // than kMaxStackFrames, the rest is cut with a "...\t\t0" line, as the recorder cuts.
  std::string stackOf(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns);
  static constexpr std::size_t kMaxStackFrames = 128;

  uint64_t ranges() const { return count_; }
  // Ranges sorted or merged into order so far: 0 when each thread's are written in order.
  uint64_t reordered() const { return reordered_; }
  bool capped() const { return capped_; }

 private:
  struct Range {
    uint64_t start_ns, end_ns;
    uint32_t name;
  };
  struct Thread {
    std::vector<Range> ranges;
    // parents[i]: index of ranges[i]'s parent or -1, for the first parents.size() ranges; `open`
    // the sweep's stack after them. Both are cut back to where a sort moved the ranges.
    std::vector<int32_t> parents;
    std::vector<int32_t> open;
    std::size_t in_order = 0;  // the first in_order ranges are in order (reader/ordered_appends.h)
  };
  static bool outerFirst(const Range& a, const Range& b);
  Thread* sortedThread(uint32_t thread_id);
  // Index of the innermost range of `thread` that holds [start_ns, end_ns], or -1.
  int64_t innermost(const Thread& thread, uint64_t start_ns, uint64_t end_ns) const;
  static void sweepParents(Thread& thread);
  uint64_t reordered_ = 0;
  std::unordered_map<uint32_t, Thread> threads_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  uint64_t count_ = 0;
  bool capped_ = false;
};

}  // namespace gapwatch
