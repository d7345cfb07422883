// export/perfetto_encoder.h: the few messages of Perfetto's trace schema (perfetto/trace/
// trace_packet.proto and track_event/*.proto, as published) that the exporter writes, encoded by
// hand with proto/gapwatch/wire_primitives.h.
//
// Hand-written instead of generated from Perfetto's .proto files: the exporter needs five
// messages and a dozen fields, so a copy of Perfetto's schema (and a second libprotobuf code
// generation step) would be more to keep than these lines. The field numbers below are the
// schema's; tests/export/perfetto_export_test.py parses every packet with Perfetto's own Python
// classes, which catches a wrong number or wire type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gapwatch::exporter::perfetto {

// TrackEvent.Type
enum class EventType : uint32_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3 };

// One field appended to a message being built in `out`.
void putVarint(std::string& out, uint32_t field, uint64_t value);
void putFixed64(std::string& out, uint32_t field, uint64_t value);
void putBytes(std::string& out, uint32_t field, std::string_view bytes);
// A string field: Perfetto's readers want UTF-8, and a name from outside need not be (each invalid
// byte as U+FFFD, gapwatch/utf8_text.h).
void putString(std::string& out, uint32_t field, std::string_view text);

// Field numbers, by message (Perfetto's trace schema).
namespace field {
inline constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
inline constexpr uint32_t kTimestamp = 8;
inline constexpr uint32_t kTrustedPacketSequenceId = 10;
inline constexpr uint32_t kTrackEvent = 11;
inline constexpr uint32_t kSequenceFlags = 13;
inline constexpr uint32_t kTimestampClockId = 58;
inline constexpr uint32_t kTrackDescriptor = 60;
// TrackDescriptor
inline constexpr uint32_t kTrackUuid = 1;
inline constexpr uint32_t kTrackName = 2;
inline constexpr uint32_t kTrackProcess = 3;
inline constexpr uint32_t kTrackThread = 4;
inline constexpr uint32_t kTrackParentUuid = 5;
// ProcessDescriptor
inline constexpr uint32_t kProcessPid = 1;
inline constexpr uint32_t kProcessName = 6;
// ThreadDescriptor
inline constexpr uint32_t kThreadPid = 1;
inline constexpr uint32_t kThreadTid = 2;
inline constexpr uint32_t kThreadName = 5;
// TrackEvent
inline constexpr uint32_t kEventDebugAnnotations = 4;
inline constexpr uint32_t kEventType = 9;
inline constexpr uint32_t kEventTrackUuid = 11;
inline constexpr uint32_t kEventCategories = 22;
inline constexpr uint32_t kEventName = 23;
inline constexpr uint32_t kEventFlowIds = 47;
inline constexpr uint32_t kEventTerminatingFlowIds = 48;
// DebugAnnotation
inline constexpr uint32_t kAnnotationUintValue = 3;
inline constexpr uint32_t kAnnotationStringValue = 6;
inline constexpr uint32_t kAnnotationName = 10;
}  // namespace field

// BuiltinClock (perfetto/common/builtin_clock.proto): TracePacket.timestamp_clock_id's values.
inline constexpr uint32_t kBuiltinClockRealtime = 1;
inline constexpr uint32_t kBuiltinClockMonotonic = 3;
inline constexpr uint32_t kBuiltinClockMonotonicRaw = 4;
inline constexpr uint32_t kBuiltinClockBoottime = 6;

// TracePacket.sequence_flags: the first packet clears the sequence's (empty) incremental state,
// the others say they belong to it, which trace processor wants of TrackEvent packets.
inline constexpr uint64_t kSequenceIncrementalStateCleared = 1;
inline constexpr uint64_t kSequenceNeedsIncrementalState = 2;

}  // namespace gapwatch::exporter::perfetto
