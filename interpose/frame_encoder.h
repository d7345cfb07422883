// frame_encoder.h: encodes the recorder's frames (gapwatch.v1.Frame) for the file or the socket.
//
// Flusher thread only. Each call appends one whole frame, `<varint length><Frame>`, to `out`;
// docs/recording-format.md is the specification.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "raw_event.h"

namespace gapwatch {

struct HelloInfo {
  uint32_t pid = 0;
  std::string host;
  bool has_rank = false, has_local_rank = false, has_world_size = false;
  int32_t rank = 0, local_rank = 0, world_size = 0;
  std::vector<std::string> command_line;
  std::vector<uint32_t> probes;  // gapwatch.v1.Probe values
  uint32_t cupti_version = 0;
  uint32_t cuda_driver_version = 0;
  uint64_t start_time_ns = 0;
  uint64_t process_start_ns = 0;
  uint64_t start_unix_ns = 0;
  std::string cupti_unavailable;  // why CUPTI is not in use (empty when it is)
};

struct StringDefinition {
  uint32_t id;
  uint32_t kind;  // gapwatch.v1.StringKind
  std::string text;
};

struct DropCount {
  uint32_t source;  // gapwatch.v1.DropSource
  uint64_t id;
  uint64_t dropped;
};

struct GoodbyeInfo {
  uint64_t end_time_ns = 0;
  uint32_t exit_reason = 1;  // EXIT_REASON_NORMAL
  uint64_t batches = 0, api_calls = 0, activities = 0, nccl_calls = 0;
  uint64_t events_dropped = 0, cupti_records_dropped = 0;
  std::vector<DropCount> drops;
};

struct NcclRankInfo {
  int32_t rank = -1;  // -1: unknown (the communicator was made before recording began)
  int32_t nranks = 0;
};

// What one batch carries; the events are in the order the flusher drained them.
struct BatchContent {
  uint64_t sequence = 0;
  std::vector<StringDefinition> strings;
  std::vector<RawEvent> api_calls;    // EventType::kApiCall; api_name already interned into peer
  std::vector<uint32_t> api_call_sites;  // parallel to api_calls: interned call site, 0 = none
  std::vector<RawEvent> activities;   // EventType::kActivity
  std::vector<RawEvent> nccl_calls;   // EventType::kNcclCall; comm id interned into correlation
  std::vector<NcclRankInfo> nccl_ranks;  // parallel to nccl_calls: the communicator's rank and size
  std::vector<DropCount> drops;
};

class FrameEncoder {
 public:
  void hello(const HelloInfo& info, std::string& out);
  void batch(const BatchContent& batch, std::string& out);
  void goodbye(const GoodbyeInfo& info, std::string& out);

 private:
  void frame(uint32_t body_field, std::string& out);
  std::string body_, message_, item_;  // reused buffers: no allocation once warm
};

}  // namespace gapwatch
