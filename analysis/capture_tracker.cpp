// analysis/capture_tracker.cpp: see capture_tracker.h.
#include "analysis/capture_tracker.h"

namespace gapwatch::analysis {

bool CaptureTracker::captured(const ApiCallEvent& call) {
  switch (call.kind) {
    case v1::API_KIND_CAPTURE_BEGIN: {
      auto [capture, first] = captures_.tryEmplace(call.thread_id, Capture{});
      if (capture->depth++ == 0) capture->from_ns = call.end_ns;
      return false;
    }
    case v1::API_KIND_CAPTURE_END:
      if (Capture* capture = captures_.find(call.thread_id)) {
        if (--capture->depth == 0) captures_.erase(call.thread_id);
      }
      return false;
    case v1::API_KIND_LAUNCH:
    case v1::API_KIND_GRAPH_LAUNCH:
    case v1::API_KIND_MEMCPY_ASYNC:
    case v1::API_KIND_MEMSET_ASYNC:
    case v1::API_KIND_EVENT_RECORD:
    case v1::API_KIND_STREAM_WAIT_EVENT: {
      if (captures_.empty()) return false;
      const Capture* capture = captures_.find(call.thread_id);
      return capture && call.start_ns >= capture->from_ns;
    }
    default:
      return false;
  }
}

}  // namespace gapwatch::analysis
