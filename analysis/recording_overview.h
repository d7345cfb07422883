// analysis/recording_overview.h: what `gapwatch report` says about a recording besides the analysis:
// who the process was (Hello), how the recording ended (Goodbye, truncation), how many events of
// each kind it held, its host-side span and what was lost in transport.
//
// The analysis engine (analysis_pipeline.h) measures the device; this visitor rides along on the
// same single pass (ProcessAnalyser, run_analysis.h) and keeps a few counters only, so reading a
// recording of any length still takes bounded memory.
#pragma once

#include "analysis/capture_tracker.h"
#include "reader/drop_totals.h"
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"

#include <gapwatch/v1/stream.pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::analysis {

struct RecordingOverview {
  std::optional<v1::Hello> hello;
  std::optional<v1::Goodbye> goodbye;
  StreamHealth health;
  ReadSummary read;

  uint64_t api_calls = 0;
  uint64_t launches = 0;    // kernel and graph launches, not those made inside a stream capture
  uint64_t activities = 0;  // every device activity record, synchronisation records included
  uint64_t nccl_calls = 0;
  uint64_t markers = 0;
  uint64_t step_markers = 0;  // STEP_BEGIN markers

  // Host-side span: Hello's start (or the first event) to Goodbye's end (or the last event's end).
  uint64_t span_start_ns = 0;
  uint64_t span_end_ns = 0;

  uint64_t transport_events_dropped = 0;  // in batches the recorder could not write or send

  // A process read from several files (reader/recording_parts.h): their names, in the order read,
  // parallel to health.parts; empty for one file.
  std::vector<std::string> part_files;

  uint64_t spanNs() const { return span_end_ns > span_start_ns ? span_end_ns - span_start_ns : 0; }
};

class RecordingOverviewBuilder final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;
  // Without a Goodbye, the recording ends at its last heartbeat if that is later than its events.
  void onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) override;

  RecordingOverview finish(const ReadSummary& read, const StreamHealth& health);

 private:
  void noteTime(uint64_t start_ns, uint64_t end_ns);

  RecordingOverview overview_;
  DropTotals drops_;
  CaptureTracker captures_;
  uint64_t first_event_ns_ = UINT64_MAX;
  uint64_t last_event_ns_ = 0;
  uint64_t last_heartbeat_ns_ = 0;
};

// How the recording ended, in words: "ended normally (exit status 0)", "ended early: no Goodbye
// (...)", "truncated: ...".
std::string endingText(const RecordingOverview& overview);

// A process read from several files (part_files): where one ends and the next begins, in words:
// "one process in 2 files, read as one: A (batches 0 to 41), then B (batches 40 to 97; 2 also in
// the part before, read once)"; "" for one file. `name` turns a path into the text shown.
std::string partsText(const RecordingOverview& overview, const std::function<std::string(const std::string&)>& name);

// The same as a label for scripts: "normal", "signal", "exec", "stopped", "internal_error",
// "no_goodbye", "truncated", or the reason's schema label.
std::string endingLabel(const RecordingOverview& overview);

}  // namespace gapwatch::analysis
