// collector/live_process.h: one traced process's stream, analysed while it arrives.
//
// The connection hands it every whole frame it writes to the process's .gwt, with the offset that
// frame has in the file, so the analysis sees exactly what `gapwatch report` of that file will
// read: the same frames, the same offsets, the same read summary (the collector writes whole
// frames only, so the file never ends inside one). That is what makes the live report equal the
// offline report of the file, byte for byte (tests/collector/live_report_test.py).
//
// While the stream goes on, snapshot() gives the numbers so far for the live view and the metrics;
// finish() gives the final outcome once, when the connection is over.
//
// Threading: used by the collector's one loop thread only.
#pragma once

#include "analysis/run_analysis.h"
#include "reader/frame_decoder.h"
#include "reader/stream_decoder.h"

#include <cstdint>
#include <map>
#include <span>
#include <utility>

namespace gapwatch::collector {

class LiveProcess final : public FrameBytesTaker, private RecordingVisitor {
 public:
  explicit LiveProcess(const analysis::AnalysisOptions& options);

  // A parsed frame (every frame the fast path did not take), `offset` its offset in the file.
  void onFrame(const v1::Frame& frame, uint64_t offset);
  // The fast path for batch frames (StreamDecoder::takeFrameBytes); the frame then is not parsed.
  bool takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) override;

  // API calls, device activities, NCCL calls and markers received.
  uint64_t events() const { return events_; }
  // The process's own drop counters: the latest cumulative totals its batches and Goodbye sent.
  uint64_t drops() const;

  // The numbers so far (AnalysisPipeline::snapshot()).
  analysis::ProcessAnalysis snapshot() const { return analyser_.snapshot(); }

  // Once the stream is over: what reading the .gwt would find. `file_bytes`: the file's size
  // (header included); `frames`, `skipped_frames`: as the reader counts them. Call once.
  std::pair<ReadResult, analysis::ProcessOutcome> finish(uint64_t file_bytes, uint64_t frames, uint64_t skipped_frames);

 private:
  // RecordingVisitor: counts, then hands everything to the analyser.
  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;
  void onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) override;

  analysis::ProcessAnalyser analyser_;
  StreamDecoder decoder_;
  uint64_t events_ = 0;
  std::map<std::pair<int, uint64_t>, uint64_t> drops_;  // latest cumulative total per (source, id)
};

}  // namespace gapwatch::collector
