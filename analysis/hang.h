// analysis/hang.h: a process that died while it waited (SIGKILL, a fatal signal's default action):
// the call it was inside, the kernels it had launched that never finished, and where the recording
// really ends, from the recorder's last Heartbeat (docs/recording-format.md).
//
// A visitor riding the same single pass as the engine: it keeps only the last heartbeat's lists
// (a few entries) and strikes out what later batches show finished, so its memory is bounded.
#pragma once

#include "analysis/analysis_result.h"
#include "reader/stream_decoder.h"

#include <gapwatch/v1/stream.pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::analysis {

class HangTracker final : public RecordingVisitor {
 public:
  void onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;

  // Nothing when the process ended in an orderly way (Goodbye), when no heartbeat came, or when
  // nothing was in progress at the end. `end_ns`: where the recording ends (recording_overview.h).
  std::optional<Hang> finish(uint64_t end_ns) const;

 private:
  bool goodbye_ = false;
  std::vector<HangCall> calls_;
  std::vector<UnfinishedKernel> kernels_;
};

// The device timeline of a process that hung with kernels unfinished runs to the end of the
// recording: the tail after the last finished work is the unfinished kernel's (busy), so the
// window is the hang's, not the few microseconds before it.
void extendWindowsToHang(ProcessAnalysis& process, const Hang& hang);

// The note the report shows: "hung in cudaMemcpy for 60 s waiting for kernel X (launched at
// +1.2 s, never finished)". `start_ns`: the recording's start, for the "+" times.
Finding hangNote(const Hang& hang, uint64_t start_ns);

}  // namespace gapwatch::analysis
