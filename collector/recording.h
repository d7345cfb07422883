// collector/recording.h: one process's recording held in memory, every event in a vector.
//
// The storage half of reading (stream_decoder.h is the decode half): RecordingBuilder is a
// RecordingVisitor that keeps everything it is shown. Convenient for tools and tests that want to
// look at events more than once; analyses that must run in bounded memory should be visitors
// themselves instead.
#pragma once

#include "collector/byte_source.h"
#include "collector/drop_totals.h"
#include "collector/events.h"
#include "collector/recording_reader.h"
#include "collector/stream_decoder.h"
#include "collector/string_table.h"

#include <gapwatch/v1/stream.pb.h>

#include <optional>
#include <string>
#include <vector>

namespace gapwatch {

// Everything one stream (one process) carried. Lists are in stream order, not sorted.
struct ProcessRecording {
  std::optional<v1::Hello> hello;
  std::optional<v1::Goodbye> goodbye;  // absent: the recording ended early or was truncated
  StringTable strings;                 // final definitions (a renamed thread has its last name)
  std::vector<ApiCallEvent> api_calls;
  std::vector<DeviceActivityEvent> activities;
  std::vector<NcclCallEvent> nccl_calls;
  std::vector<MarkerEvent> markers;
  DropTotals drops;  // latest totals from batches, then Goodbye's final ones
  StreamHealth health;
};

class RecordingBuilder final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;

  // Hands over what was collected; `decoder` supplies the string table and the stream's health.
  ProcessRecording take(const StreamDecoder& decoder);

 private:
  ProcessRecording recording_;
};

struct LoadedRecording {
  ProcessRecording recording;  // what came before any error
  ReadResult read;
};

// Reads and decodes a whole recording into memory.
LoadedRecording loadRecording(ByteSource& source);
LoadedRecording loadRecordingFile(const std::string& path);

}  // namespace gapwatch
