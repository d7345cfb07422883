// analysis/capture_tracker.h: which calls a thread makes inside a stream capture.
//
// A launch (or async copy, memset, event record, stream wait) made while its thread captures a
// stream is put into a graph, not run: CUPTI fires its callbacks, but no kernel ever comes of it
// (research/cupti-field-notes.md, section 5). Counting it as a launch would count work that never
// happened. A capture runs, on the capturing thread, from the begin call's return to the end
// call's entry; captures may nest. Calls must come in their thread's order (the reorder window's
// output, or one thread's calls as its ring recorded them).
#pragma once

#include "analysis/flat_u64_map.h"
#include "reader/stream_decoder.h"

#include <cstdint>

namespace gapwatch::analysis {

class CaptureTracker {
 public:
  // Tracks the thread's captures; true for a call made inside one.
  bool captured(const ApiCallEvent& call);

 private:
  struct Capture {
    uint32_t depth = 0;    // captures begun and not ended on the thread
    uint64_t from_ns = 0;  // the outermost begin's return
  };
  FlatU64Map<Capture> captures_;  // threads inside a stream capture
};

}  // namespace gapwatch::analysis
