// raw_event.h: what a user thread writes into its ring for one event, as cheaply as it can.
//
// A ring is a plain array of fixed 80-byte slots (RawEvent), and each event type has its own view
// of a slot: the hot path fills the fields of its own record and nothing is reused for another
// meaning. What the wire needs but the user's thread should not spend time on (the thread id,
// nanoseconds from ticks, interned names, communicator ids) is added by the flusher, which
// translates each record into the schema-shaped fields of frame_encoder.h, once per type.
// Enum-valued fields hold gapwatch.v1 values (<gapwatch/wire_schema.h>).
#pragma once

#include <stdint.h>

#include <gapwatch/wire_schema.h>

namespace gapwatch {

// Which view of a slot is in use; the first byte of every record.
enum class EventType : uint8_t { kApiCall = 1, kNcclCall = 3 };

enum EventFlags : uint8_t {
  kFlagBlocked = 1 << 0,  // the call waits for the device by its documented semantics
  // An async copy that only enqueues: device to device, or its host side known pinned
  // (cuda_api_map.cpp, async_copy). It gets no Python stack. Not sent: the flusher reads
  // kFlagBlocked alone.
  kFlagEnqueuesOnly = 1 << 1,
};

// One CUDA API call, from a CUPTI callback or a runtime symbol hook.
struct ApiCallRecord {
  EventType type;       // EventType::kApiCall
  uint8_t kind;         // wire::ApiKind
  uint8_t domain;       // wire::ApiDomain
  uint8_t copy_kind;    // wire::CopyKind
  uint8_t src_memory;   // wire::MemoryKind
  uint8_t dst_memory;   // wire::MemoryKind
  uint8_t flags;        // EventFlags
  uint32_t cbid;        // CUPTI callback id in `domain`
  uint64_t start_ticks; // host_clock.h ticks
  uint64_t end_ticks;
  uint64_t correlation; // CUPTI correlation id; 0 without CUPTI
  uint64_t bytes;
  int32_t return_code;
  // The thread's Python stack at the call (Recorder::post_python_stack's number), 0 = none. In
  // what was padding: the slot stays 80 bytes.
  uint32_t python_stack;
  const char* api_name;   // a string with static storage (CUPTI's functionName, a hook's literal)
  const void* call_site;  // the return address in the caller of the hooked runtime function
  // Launches: the kernel's name as CUPTI's callback gives it (symbolName), else nullptr. Read by
  // the flusher only while the launch has no device record, for the heartbeat.
  const char* symbol_name;
};

// One NCCL host call, from a symbol hook.
struct NcclCallRecord {
  EventType type;        // EventType::kNcclCall
  uint8_t op;            // wire::NcclOp
  uint8_t data_type;     // wire::NcclDataType
  uint32_t group_depth;  // ncclGroupStart nesting at the call
  uint64_t start_ticks;  // host_clock.h ticks
  uint64_t end_ticks;
  const void* comm;      // the ncclComm_t; the flusher turns it into a small communicator id
  uint64_t stream;       // the cudaStream_t value
  uint64_t count;        // element count as passed to NCCL (the schema's uint64, whole)
  uint64_t bytes;
  int32_t peer;          // root or peer rank; -1 when the op has none
  int32_t return_code;
};

// The first byte of every record, readable whichever view a slot holds (the records are
// standard-layout and share this initial member).
struct RecordHeader {
  EventType type;
};

// A ring slot. Its size is fixed, so the ring's geometry (slots per ring from
// GAPWATCH_RING_BYTES) does not depend on which record is the largest.
// `storage` comes first so that RawEvent{} zeroes the whole slot.
union RawEvent {
  uint64_t storage[10];
  RecordHeader header;
  ApiCallRecord api;
  NcclCallRecord nccl;
};
static_assert(sizeof(ApiCallRecord) <= 80 && sizeof(NcclCallRecord) <= 80, "a record must fit a slot");
static_assert(sizeof(RawEvent) == 80, "RawEvent is the ring's slot: keep it small and fixed");

}  // namespace gapwatch
