// frame_encoder.h: encodes the recorder's frames (gapwatch.v1.Frame) for the file or the socket.
//
// Flusher thread only. Each call appends one whole frame, `<varint length><Frame>`, to `out`;
// docs/recording-format.md is the specification.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gapwatch/wire_schema.h>

namespace gapwatch {

struct HelloInfo {
  uint32_t pid = 0;
  std::string host;
  bool has_rank = false, has_local_rank = false, has_world_size = false;
  int32_t rank = 0, local_rank = 0, world_size = 0;
  std::vector<std::string> command_line;
  std::vector<uint32_t> probes;  // wire::Probe values
  uint32_t cupti_version = 0;
  uint32_t cuda_driver_version = 0;
  uint64_t start_time_ns = 0;
  uint64_t process_start_ns = 0;
  uint64_t start_unix_ns = 0;
  std::string cupti_unavailable;  // why CUPTI is not in use (empty when it is)
};

struct StringDefinition {
  uint32_t id;
  uint32_t kind;  // wire::StringKind
  std::string text;
};

struct DropCount {
  uint32_t source;  // wire::DropSource
  uint64_t id;
  uint64_t dropped;
};

struct GoodbyeInfo {
  uint64_t end_time_ns = 0;
  uint32_t exit_reason = wire::ExitReason::kNormal;
  bool has_exit_status = false;  // written only when known: absent reads as "unknown"
  int32_t exit_status = 0;
  uint64_t batches = 0, api_calls = 0, activities = 0, nccl_calls = 0;
  uint64_t events_dropped = 0, cupti_records_dropped = 0;
  std::vector<DropCount> drops;
};

// Heartbeat: the process is alive, and what it is waiting in (gapwatch.v1.Heartbeat). The names
// are strings with static storage (API names) or CUPTI's kernel names; nullptr = not known.
struct CallInProgressFields {
  uint32_t thread_id = 0;
  uint64_t start_ns = 0;
  uint64_t correlation_id = 0;
  const char* api_name = nullptr;
};
struct UnfinishedLaunchFields {
  uint64_t correlation_id = 0;
  uint64_t launch_ns = 0;
  const char* kernel_name = nullptr;
  uint32_t thread_id = 0;
};
struct HeartbeatInfo {
  uint64_t time_ns = 0;
  std::vector<CallInProgressFields> calls;
  std::vector<UnfinishedLaunchFields> unfinished;
};

// The events of a batch as the schema has them (gapwatch.v1.ApiCall, DeviceActivity, NcclCall),
// with absolute times in nanoseconds and absolute correlation ids: the encoder applies the delta
// rules. Only the fields the recorder fills are here. Enum-valued fields hold wire:: values.

// ApiCall. cbid and domain are left out: two more fields on every launch would break the
// 16-bytes-per-event budget, and the interned API name says which call it was. The recorder does
// not know a call's stream or device (yet).
struct ApiCallFields {
  uint8_t kind = 0;
  uint8_t copy_kind = 0;
  uint8_t src_memory = 0;
  uint8_t dst_memory = 0;
  bool blocked = false;
  uint32_t thread_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t correlation_id = 0;
  uint64_t bytes = 0;
  int32_t return_code = 0;
  uint32_t api_name_id = 0;   // interned STRING_KIND_API_NAME, 0 = none
  uint32_t call_site_id = 0;  // interned STRING_KIND_CALL_SITE, 0 = not recorded
  uint32_t python_stack_id = 0;  // interned STRING_KIND_PYTHON_STACK, 0 = none
};

// DeviceActivity, decoded from CUPTI's records on its buffer thread.
struct DeviceActivityFields {
  uint8_t kind = 0;
  uint8_t copy_kind = 0;
  uint8_t src_memory = 0;
  uint8_t dst_memory = 0;
  uint8_t sync_kind = 0;
  uint32_t device = 0;
  uint32_t name_id = 0;   // interned STRING_KIND_KERNEL_NAME, kernels only
  uint32_t graph_id = 0;
  uint64_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t correlation_id = 0;
  uint64_t bytes = 0;
};

// NcclCall.
struct NcclCallFields {
  uint8_t op = 0;
  uint8_t data_type = 0;
  uint32_t thread_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t comm_id = 0;     // the communicator's small id, 0 = none
  uint64_t bytes = 0;
  uint64_t count = 0;
  int32_t peer = 0;
  int32_t rank = -1;        // -1 with nranks 0: unknown (the communicator predates recording)
  int32_t nranks = 0;
  uint64_t stream = 0;
  int32_t return_code = 0;
  uint32_t group_depth = 0;
};

// What one batch carries; the events are in the order the flusher drained them.
// gapwatch.v1.ActivityApiSpan.
struct ActivityApiSpanFields {
  uint32_t state = 0;  // wire::ActivityApiState
  uint64_t start_ns = 0, end_ns = 0;
  std::string client;
};

// gapwatch.v1.PythonSample: the sampler's (python_sampler.h).
struct PythonSampleFields {
  uint32_t thread_id = 0;
  uint64_t time_ns = 0;
  uint32_t python_stack_id = 0;  // interned STRING_KIND_PYTHON_STACK, 0 = could not be read
  uint64_t period_ns = 0;
};
struct BatchContent {
  uint64_t sequence = 0;
  std::vector<ActivityApiSpanFields> activity_api_spans;
  std::vector<StringDefinition> strings;
  std::vector<ApiCallFields> api_calls;
  std::vector<DeviceActivityFields> activities;
  std::vector<NcclCallFields> nccl_calls;
  std::vector<DropCount> drops;
  std::vector<PythonSampleFields> python_samples;
};

class FrameEncoder {
 public:
  void hello(const HelloInfo& info, std::string& out);
  void batch(const BatchContent& batch, std::string& out);
  void goodbye(const GoodbyeInfo& info, std::string& out);
  void heartbeat(const HeartbeatInfo& info, std::string& out);

 private:
  template <wire::Field Body>
  void frame(std::string& out);
  std::string body_, message_, item_;  // reused buffers: no allocation once warm
};

}  // namespace gapwatch
