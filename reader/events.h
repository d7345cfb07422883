// reader/events.h: the events of a recording as analyses see them, with absolute values.
//
// The wire form (proto/gapwatch/v1/events.proto) carries running deltas of times and correlation
// ids and "thread 0 = same as before"; stream_decoder.h undoes those and hands out these plain
// structs, so no analysis ever sees a delta. Times are nanoseconds on the clock Hello.clock names.
// Enum fields keep the schema's types; a value a newer recorder added stays as its number.
#pragma once

#include <gapwatch/v1/events.pb.h>

#include <cstdint>
#include <string>

namespace gapwatch {

// One host-side CUDA API call.
struct ApiCallEvent {
  v1::ApiKind kind = v1::API_KIND_UNSPECIFIED;
  uint32_t thread_id = 0;  // 0 only when the recorder never named the thread
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t correlation_id = 0;
  uint64_t stream = 0;
  uint64_t bytes = 0;
  v1::CopyKind copy_kind = v1::COPY_KIND_UNSPECIFIED;
  v1::MemoryKind src_memory = v1::MEMORY_KIND_UNSPECIFIED;
  v1::MemoryKind dst_memory = v1::MEMORY_KIND_UNSPECIFIED;
  bool blocked = false;
  int32_t return_code = 0;
  uint32_t api_name_id = 0;
  uint32_t device = 0;
  uint32_t call_site_id = 0;
  uint32_t cbid = 0;
  v1::ApiDomain domain = v1::API_DOMAIN_UNSPECIFIED;
  // Last, so that the positional initialisers written before it existed still mean what they say.
  uint32_t python_stack_id = 0;  // STRING_KIND_PYTHON_STACK; 0 = none

  bool operator==(const ApiCallEvent&) const = default;
};

// Work the device ran (kernel, copy, memset) or a synchronisation record.
struct DeviceActivityEvent {
  v1::ActivityKind kind = v1::ACTIVITY_KIND_UNSPECIFIED;
  uint32_t device = 0;
  uint64_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t correlation_id = 0;
  uint32_t name_id = 0;
  uint64_t bytes = 0;
  v1::CopyKind copy_kind = v1::COPY_KIND_UNSPECIFIED;
  v1::MemoryKind src_memory = v1::MEMORY_KIND_UNSPECIFIED;
  v1::MemoryKind dst_memory = v1::MEMORY_KIND_UNSPECIFIED;
  uint32_t graph_id = 0;
  v1::SyncKind sync_kind = v1::SYNC_KIND_UNSPECIFIED;
  // A wait's event, where the source names it (events.proto): the recording call's correlation id
  // (0: not known) and its stream (0: not known).
  uint64_t event_record_correlation_id = 0;
  uint64_t event_record_stream = 0;

  bool operator==(const DeviceActivityEvent&) const = default;
};

// One NCCL host call.
struct NcclCallEvent {
  v1::NcclOp op = v1::NCCL_OP_UNSPECIFIED;
  uint32_t thread_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t comm_id = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  v1::NcclDataType data_type = v1::NCCL_DATA_TYPE_UNSPECIFIED;
  int32_t peer = 0;
  int32_t rank = 0;
  int32_t nranks = 0;
  uint64_t stream = 0;
  int32_t return_code = 0;
  uint32_t group_depth = 0;

  bool operator==(const NcclCallEvent&) const = default;
};

// A point in time on a user thread (steps, NVTX ranges and marks).
struct MarkerEvent {
  v1::MarkerKind kind = v1::MARKER_KIND_UNSPECIFIED;
  uint32_t thread_id = 0;
  uint64_t time_ns = 0;
  uint32_t name_id = 0;
  uint64_t step = 0;

  bool operator==(const MarkerEvent&) const = default;
};

// A span of host work on one thread (gapwatch.v1.HostRange): an op, a data-loading range, an
// annotation. The evidence that splits host time between kernels.
struct HostRangeEvent {
  v1::HostRangeKind kind = v1::HOST_RANGE_KIND_UNSPECIFIED;
  uint32_t thread_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t name_id = 0;

  bool operator==(const HostRangeEvent&) const = default;
};

// A sample of the Python stack of the thread that launches a device's work, taken while it stayed
// outside CUDA calls (gapwatch.v1.PythonSample): what the host was doing then, when no trace says.
struct PythonSampleEvent {
  uint32_t thread_id = 0;
  uint64_t time_ns = 0;
  uint32_t python_stack_id = 0;  // STRING_KIND_PYTHON_STACK; 0 = the stack could not be read
  uint64_t period_ns = 0;        // it speaks for at most this long before and after time_ns

  bool operator==(const PythonSampleEvent&) const = default;
};

// A cumulative drop total, as sent in EventBatch.drops and Goodbye.drops.
struct DropCount {
  v1::DropSource source = v1::DROP_SOURCE_UNSPECIFIED;
  uint64_t id = 0;
  uint64_t dropped = 0;

  bool operator==(const DropCount&) const = default;
};

// How the recorder stood with CUPTI's activity API while another client used it
// (gapwatch.v1.ActivityApiSpan); end_ns 0 = still open when last reported.
struct ActivityApiSpan {
  v1::ActivityApiState state = v1::ACTIVITY_API_STATE_UNSPECIFIED;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string client;

  bool operator==(const ActivityApiSpan&) const = default;
};

// One string definition, (kind, id) -> text.
struct StringDefinition {
  v1::StringKind kind = v1::STRING_KIND_UNSPECIFIED;
  uint32_t id = 0;
  std::string text;

  bool operator==(const StringDefinition&) const = default;
};

// The end of an event, start + duration. Saturates instead of wrapping, so that a hostile or
// broken duration can never make an event end before it starts.
inline uint64_t eventEnd(uint64_t start_ns, uint64_t duration_ns) {
  const uint64_t end = start_ns + duration_ns;
  return end < start_ns ? UINT64_MAX : end;
}

}  // namespace gapwatch
