// collector/live_process.cpp: see live_process.h.
#include "collector/live_process.h"

#include <gapwatch/recording_format.h>

namespace gapwatch::collector {

LiveProcess::LiveProcess(const analysis::AnalysisOptions& options) : analyser_(options), decoder_(*this) {}

void LiveProcess::onFrame(const v1::Frame& frame, uint64_t offset) {
  // The connection has checked the Hello's version already, so this cannot refuse it.
  (void)decoder_.onFrame(frame, offset);
}

bool LiveProcess::takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) {
  return decoder_.takeFrameBytes(frame, offset);
}

uint64_t LiveProcess::drops() const {
  uint64_t total = 0;
  for (const auto& [key, dropped] : drops_) total += dropped;
  return total;
}

void LiveProcess::onHello(const v1::Hello& hello, uint64_t offset) { analyser_.onHello(hello, offset); }

void LiveProcess::onBatch(const DecodedBatch& batch, const StringTable& strings) {
  events_ += uint64_t(batch.api_calls.size()) + uint64_t(batch.activities.size()) + uint64_t(batch.nccl_calls.size()) +
             uint64_t(batch.markers.size());
  for (const DropCount& d : batch.drops) drops_[{int(d.source), d.id}] = d.dropped;
  analyser_.onBatch(batch, strings);
}

void LiveProcess::onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) {
  for (const auto& d : goodbye.drops()) drops_[{int(d.source()), d.id()}] = d.dropped();
  analyser_.onGoodbye(goodbye, offset);
}

void LiveProcess::onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) {
  analyser_.onHeartbeat(heartbeat, offset);
}

std::pair<ReadResult, analysis::ProcessOutcome> LiveProcess::finish(uint64_t file_bytes, uint64_t frames,
                                                                    uint64_t skipped_frames) {
  // What readRecording() reports for a file of whole frames (reader/recording_reader.cpp).
  ReadResult read;
  read.summary.format_version = kFileFormatVersion;
  read.summary.bytes_read = file_bytes;
  read.summary.frames = frames;
  read.summary.skipped_frames = skipped_frames;
  analysis::ProcessOutcome outcome = analyser_.finish(read, decoder_.health());
  return {std::move(read), std::move(outcome)};
}

}  // namespace gapwatch::collector
