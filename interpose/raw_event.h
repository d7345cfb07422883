// raw_event.h: the fixed-size record every probe writes and the flusher encodes.
//
// One layout for the three event types so a thread's ring is a plain array. Fields are the
// protobuf schema's (proto/gapwatch/v1/events.proto) before delta encoding; enum values are the
// schema's numbers. Host and device times are CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <stdint.h>

namespace gapwatch {

enum class EventType : uint8_t { kApiCall = 1, kActivity = 2, kNcclCall = 3 };

// Values of gapwatch.v1.ApiKind / ActivityKind / NcclOp / CopyKind / MemoryKind / SyncKind.
namespace api_kind {
enum : uint8_t {
  kLaunch = 1, kGraphLaunch = 2, kMemcpy = 3, kMemcpyAsync = 4, kMemset = 5, kMemsetAsync = 6,
  kDeviceSync = 7, kStreamSync = 8, kEventSync = 9, kEventRecord = 10, kStreamWaitEvent = 11,
  kQuery = 12, kMalloc = 13, kFree = 14, kHostAlloc = 15, kHostFree = 16, kModuleLoad = 17, kOther = 18,
};
}
namespace activity_kind {
enum : uint8_t { kKernel = 1, kMemcpy = 2, kMemset = 3, kSync = 4 };
}
namespace copy_kind {
enum : uint8_t { kUnknown = 0, kH2D = 1, kD2H = 2, kD2D = 3, kH2H = 4, kP2P = 5 };
}
namespace api_domain {
enum : uint8_t { kUnknown = 0, kDriver = 1, kRuntime = 2 };
}

enum EventFlags : uint8_t {
  kFlagBlocked = 1 << 0,  // the call waits for the device by its documented semantics
};

struct RawEvent {
  EventType type;
  uint8_t kind;        // ApiKind, ActivityKind or NcclOp
  uint8_t domain;      // api: ApiDomain; activity: SyncKind of a sync record
  uint8_t copy_kind;   // CopyKind
  uint8_t src_memory;  // MemoryKind
  uint8_t dst_memory;  // MemoryKind
  uint8_t flags;       // EventFlags
  uint8_t data_type;   // nccl: NcclDataType
  uint32_t cbid;       // api: CUPTI callback id; activity: graph id
  uint32_t thread;     // api, nccl: Linux tid; activity: device
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t correlation;  // api, activity: CUPTI correlation id; nccl: communicator id
  uint64_t stream;       // activity: CUPTI stream id; nccl: the cudaStream_t value
  uint64_t bytes;
  int32_t return_code;   // api, nccl
  int32_t peer;          // nccl: peer or root; activity: name id (interned kernel name)
  const char* api_name;  // api, nccl: a string with static storage (CUPTI's functionName)
  const void* call_site; // api: the return address in the caller of the hooked runtime function
};
static_assert(sizeof(RawEvent) == 80, "RawEvent is the ring's slot: keep it small and fixed");

}  // namespace gapwatch
