// analysis/analysis_stage.h: one stage of the analysis engine.
//
// A stage sees one process's events in time order (it is a TimeOrderedConsumer, fed by
// analysis_pipeline.h) and, once the pipeline has called finish(), writes its own part of the
// result into the shared ProcessAnalysis. Each stage owns one part (device idle, sync points,
// launches, NCCL, steps), so new stages are added to the pipeline without touching the others.
#pragma once

#include "analysis/analysis_result.h"
#include "analysis/time_ordered_consumer.h"

#include <gapwatch/v1/stream.pb.h>

#include <string>

namespace gapwatch::analysis {

// What the pipeline knows about the recording before any event arrives (from Hello), so stages
// can decide what they may claim (e.g. nothing about device idle without a device timeline).
struct RecordingFacts {
  bool device_timeline = true;       // Hello.probes includes cupti_activity
  uint64_t process_start_ns = 0;     // Hello's start time on the recording clock (0 if unknown)
  bool kineto_trace = false;         // Hello.source: a PyTorch profiler trace (no process start)
  // Hello.probes includes python_sampler: the launching thread's Python was sampled while it
  // stayed outside CUDA calls, so host time without a sample is unknown for want of a sample.
  bool python_sampler = false;
  // Who the process was (Hello), for stages that name it (an exporter); rank -1 = not given.
  uint32_t pid = 0;
  int32_t rank = -1;
  std::string host;
  v1::ClockDomain clock = v1::CLOCK_DOMAIN_UNSPECIFIED;  // Hello.clock: what every time is on
};

class AnalysisStage : public TimeOrderedConsumer {
 public:
  // Called once, before the first event.
  virtual void begin(const RecordingFacts& /*facts*/) {}
  // Called after finish(): write this stage's part of the result. Must not touch other parts.
  virtual void contribute(ProcessAnalysis& result) = 0;
  // While the stream goes on (the collector's live view): write what this stage can say of the
  // events released to it so far, without finishing anything. Only the running totals a live view
  // shows (idle by cause, gaps, sync counts, launches, NCCL time, steps); the default writes
  // nothing. The final numbers are contribute()'s, after finish().
  virtual void snapshot(ProcessAnalysis& /*result*/) const {}
};

}  // namespace gapwatch::analysis
