// tests/unit/recording_in_memory.h: a whole recording held in memory, every event in a vector, for
// tests that look at the decoded events more than once. The product never does this: its
// analyses are visitors on one pass, in bounded memory (analysis/run_analysis.h).
#pragma once

#include "reader/byte_source.h"
#include "reader/drop_totals.h"
#include "reader/events.h"
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"
#include "reader/string_table.h"

#include <gapwatch/v1/stream.pb.h>

#include <optional>
#include <string>
#include <vector>

namespace gapwatch::test {

// Everything one stream (one process) carried, in stream order.
struct ProcessRecording {
  std::optional<v1::Hello> hello;
  std::optional<v1::Goodbye> goodbye;  // absent: the recording ended early or was truncated
  StringTable strings;                 // final definitions
  std::vector<ApiCallEvent> api_calls;
  std::vector<DeviceActivityEvent> activities;
  std::vector<NcclCallEvent> nccl_calls;
  std::vector<MarkerEvent> markers;
  std::vector<HostRangeEvent> host_ranges;
  std::vector<PythonSampleEvent> python_samples;
  DropTotals drops;  // latest totals from batches, then Goodbye's final ones
  StreamHealth health;
};

struct LoadedRecording {
  ProcessRecording recording;  // what came before any error
  ReadResult read;
};

LoadedRecording loadRecording(ByteSource& source);
LoadedRecording loadRecordingFile(const std::string& path);

}  // namespace gapwatch::test
