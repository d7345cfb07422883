// analysis/time_ordered_consumer.h: what every analysis stage of the engine implements.
//
// The engine (analysis_pipeline.h) reads one process's recording in a single streaming pass. Events
// arrive out of order (each thread's ring is drained separately; CUPTI hands device records over
// late, in buffers), so the pipeline holds them in a bounded reordering window and releases them
// to the stages merged in time order: by start time (a marker by its time), an API or NCCL call
// before a device activity that starts at the same nanosecond. A stage therefore sees, when an
// activity starting at t arrives, every call that started before t, including the one that queued
// it. Memory must not grow with the length of the recording: a stage keeps only what it still
// needs (recent calls per thread, open intervals, fixed-size histograms), apart from names and
// per-call-site tables.
#pragma once

#include <cstdint>

#include "reader/events.h"
#include "reader/string_table.h"

namespace gapwatch::analysis {

class TimeOrderedConsumer {
 public:
  virtual ~TimeOrderedConsumer() = default;
  virtual void onApiCall(const ApiCallEvent&) {}
  virtual void onActivity(const DeviceActivityEvent&) {}
  virtual void onNcclCall(const NcclCallEvent&) {}
  virtual void onMarker(const MarkerEvent&) {}
  // What a host thread was doing (ops, data loading, annotations): a trace's CPU side.
  virtual void onHostRange(const HostRangeEvent&) {}
  // A sample of the launching thread's Python stack, by the time it was read: a live recording's
  // evidence of what the host was doing outside CUDA calls.
  virtual void onPythonSample(const PythonSampleEvent&) {}
  // The string table as it stands (names resolve once their definition has arrived).
  virtual void setStrings(const StringTable*) {}
  // No more events: close open intervals.
  virtual void finish() {}
};

}  // namespace gapwatch::analysis
