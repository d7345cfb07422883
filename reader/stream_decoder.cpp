// reader/stream_decoder.cpp: see stream_decoder.h.
#include "reader/stream_decoder.h"

#include <gapwatch/recording_format.h>
#include <gapwatch/wire_primitives.h>
#include <gapwatch/wire_schema.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

namespace gapwatch {
namespace {

// The running values of one event list. All arithmetic is unsigned and wraps, which is what the
// writer's `static_cast<int64_t>(t[i] - t[i-1])` undoes exactly, for every input.
class RunningValues {
 public:
  explicit RunningValues(uint64_t base_time_ns) : time_(base_time_ns) {}

  uint64_t nextTime(int64_t delta) { return time_ += static_cast<uint64_t>(delta); }
  uint64_t nextCorrelation(int64_t delta) { return correlation_ += static_cast<uint64_t>(delta); }
  // thread_id 0 repeats the previous element's thread (0 if there was none).
  uint32_t nextThread(uint32_t thread_id) {
    if (thread_id != 0) thread_ = thread_id;
    return thread_;
  }

 private:
  uint64_t time_;
  uint64_t correlation_ = 0;
  uint32_t thread_ = 0;
};

std::optional<ReadError> checkWireVersion(uint32_t version) {
  const std::string range = versionRangeText(kMinWireVersion, kWireVersion);
  if (version == 0) {
    return ReadError{ReadErrorKind::kUnsupportedVersion,
                     "its Hello carries no wire protocol version (0); this gapwatch reads " +
                         range};
  }
  if (version > kWireVersion) {
    return ReadError{ReadErrorKind::kUnsupportedVersion,
                     "wire protocol version " + std::to_string(version) +
                         " is newer than this gapwatch reads " + range + "; use a newer gapwatch"};
  }
  if (version < kMinWireVersion) {
    return ReadError{ReadErrorKind::kUnsupportedVersion,
                     "wire protocol version " + std::to_string(version) +
                         " is older than this gapwatch reads " + range + "; use an older gapwatch"};
  }
  return std::nullopt;
}

// ---- The fast path's wire reading ----------------------------------------------------------------
// Each helper returns false for any input that libprotobuf might read otherwise than the helper
// does (or might refuse), so that such a frame is left to libprotobuf. What is accepted is read
// exactly as libprotobuf 3.x reads it: value varints of up to 10 bytes taken modulo 2^64 (32-bit
// fields keep the low 32 bits), tags of one or two bytes, lengths of up to four bytes.

// A value varint. `load_end` bounds the memory that may be read (the frame's end), `end` the
// field's message: with 8 readable bytes the varint is decoded without a branch per byte, which
// on multi-byte times and durations saves most of the parse.
inline bool readVarint(const uint8_t*& p, const uint8_t* end, const uint8_t* load_end, uint64_t& value) {
  if (p < end && *p < 0x80) {  // one byte: kinds, ids, small deltas
    value = *p++;
    return true;
  }
  if constexpr (std::endian::native == std::endian::little) {
    if (load_end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, sizeof word);
      const uint64_t stops = ~word & 0x8080808080808080ull;  // bytes without the continuation bit
      if (stops != 0) {
        const unsigned bits = static_cast<unsigned>(std::countr_zero(stops)) + 1;  // 8 per byte
        const std::size_t bytes = bits / 8;
        if (bytes > static_cast<std::size_t>(end - p)) return false;
        uint64_t x = bits == 64 ? word : word & ((uint64_t{1} << bits) - 1);
        // Pack the 7-bit groups: pairs, then quads, then all eight.
        x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
        x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
        x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
        value = x;
        p += bytes;
        return true;
      }
    }
  }
  uint64_t result = 0;
  for (unsigned i = 0; i < 10; ++i) {
    if (p + i >= end) return false;
    const uint8_t byte = p[i];
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);  // the 10th byte keeps its low bit only
    if (byte < 0x80) {
      p += i + 1;
      value = result;
      return true;
    }
  }
  return false;  // an eleventh byte: libprotobuf refuses it
}

// A field's tag (field number << 3 | wire type), in one or two bytes.
inline bool readTag(const uint8_t*& p, const uint8_t* end, uint32_t& tag) {
  if (p >= end) return false;
  if (p[0] < 0x80) {
    tag = *p++;
    return true;
  }
  if (p + 1 >= end || p[1] >= 0x80) return false;
  tag = (p[0] & 0x7fu) | (static_cast<uint32_t>(p[1]) << 7);
  p += 2;
  return true;
}

// The length of a length-delimited field, which must lie within [p, end).
inline bool readLength(const uint8_t*& p, const uint8_t* end, std::size_t& length) {
  uint32_t result = 0;
  for (unsigned i = 0; i < 4; ++i) {
    if (p + i >= end) return false;
    const uint8_t byte = p[i];
    result |= static_cast<uint32_t>(byte & 0x7f) << (7 * i);
    if (byte < 0x80) {
      p += i + 1;
      if (result > static_cast<std::size_t>(end - p)) return false;
      length = result;
      return true;
    }
  }
  return false;
}

// Reads the fields of one message, all varints, handing (field number, value) to `set`, which
// returns false for a field the message does not have. Any other wire type, or a malformed
// field, fails: libprotobuf would keep an unknown field, and the frame is left to it.
template <typename Set>
inline bool readVarintFields(const uint8_t* p, const uint8_t* end, const uint8_t* load_end, Set&& set) {
  while (p < end) {
    uint32_t tag;
    uint64_t value;
    if (!readTag(p, end, tag) || (tag & 7) != 0 || !readVarint(p, end, load_end, value)) return false;
    if (!set(tag >> 3, value)) return false;
  }
  return true;
}

inline int64_t zigZag(uint64_t n) { return wire::zigZagDecode(n); }
inline uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }
inline int32_t i32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }
template <typename Enum>
Enum enumValue(uint64_t v) {  // an open enum keeps any 32-bit value, as libprotobuf stores it
  return static_cast<Enum>(i32(v));
}

// A varint field's value as the field's declared type. Each takes the field's schema entry and
// checks that type at compile time: a field whose type changes in the .proto (uint32 to sint32,
// say) stops this file compiling instead of being misread on the fast path only.
template <wire::Field F>
uint32_t asUint32(uint64_t v) {
  static_assert(F.type == wire::FieldType::kUint32, "not a uint32 field");
  return u32(v);
}
template <wire::Field F>
uint64_t asUint64(uint64_t v) {
  static_assert(F.type == wire::FieldType::kUint64, "not a uint64 field");
  return v;
}
template <wire::Field F>
int32_t asInt32(uint64_t v) {
  static_assert(F.type == wire::FieldType::kInt32, "not an int32 field");
  return i32(v);
}
template <wire::Field F>
int64_t asSint64(uint64_t v) {
  static_assert(F.type == wire::FieldType::kSint64, "not a sint64 field");
  return zigZag(v);
}
template <wire::Field F>
bool asBool(uint64_t v) {
  static_assert(F.type == wire::FieldType::kBool, "not a bool field");
  return v != 0;
}
template <typename Enum, wire::Field F>
Enum asEnum(uint64_t v) {
  static_assert(F.type == wire::FieldType::kEnum, "not an enum field");
  return enumValue<Enum>(v);
}

// The fast path's view of the schema, all from <gapwatch/wire_schema.h>: a field renumbered in a
// .proto changes these, and a field removed or renamed stops this file compiling.
namespace batch = wire::EventBatch;
constexpr uint32_t kFrameBatchTag = wire::tag(wire::Frame::kBatchField);
constexpr uint32_t kSequenceTag = wire::tag(batch::kSequenceField);
constexpr uint32_t kBaseTimeTag = wire::tag(batch::kBaseTimeNsField);
constexpr uint32_t kStringsTag = wire::tag(batch::kStringsField);
constexpr uint32_t kApiCallsTag = wire::tag(batch::kApiCallsField);
constexpr uint32_t kActivitiesTag = wire::tag(batch::kActivitiesField);
constexpr uint32_t kNcclCallsTag = wire::tag(batch::kNcclCallsField);
constexpr uint32_t kMarkersTag = wire::tag(batch::kMarkersField);
constexpr uint32_t kDropsTag = wire::tag(batch::kDropsField);
constexpr uint32_t kPythonSamplesTag = wire::tag(batch::kPythonSamplesField);
constexpr uint32_t kStringIdTag = wire::tag(wire::StringDef::kIdField);
constexpr uint32_t kStringKindTag = wire::tag(wire::StringDef::kKindField);
constexpr uint32_t kStringTextTag = wire::tag(wire::StringDef::kTextField);

// What the code below assumes of the schema, checked where the compiler can: every field of the
// event messages is a varint (readVarintFields takes nothing else), the tags fit the one or two
// bytes readTag reads, and the switches name every field (a new field must be added here, or the
// fast path would leave every batch that carries it to libprotobuf).
template <std::size_t N>
constexpr bool allSingularVarints(const wire::Field (&fields)[N]) {
  for (const wire::Field& f : fields)
    if (f.wire_type != wire::WireType::kVarint || f.repeated) return false;
  return true;
}
static_assert(allSingularVarints(wire::ApiCall::kFields) && allSingularVarints(wire::DeviceActivity::kFields) &&
                  allSingularVarints(wire::NcclCall::kFields) && allSingularVarints(wire::Marker::kFields) &&
                  allSingularVarints(wire::DropCounter::kFields) && allSingularVarints(wire::PythonSample::kFields),
              "the fast path reads event messages as varint fields only");
static_assert(wire::ApiCall::kFieldCount == 18 && wire::DeviceActivity::kFieldCount == 15 &&
                  wire::NcclCall::kFieldCount == 14 && wire::Marker::kFieldCount == 5 &&
                  wire::DropCounter::kFieldCount == 3 && wire::StringDef::kFieldCount == 3 &&
                  wire::PythonSample::kFieldCount == 4 && wire::EventBatch::kFieldCount == 11,
              "a field was added to or removed from a batch message: update the fast path's switches");
// EventBatch.activity_api_spans (a few per recording, with a string) and host_ranges (only in
// recordings imported from a trace, in the batches of its CPU side) are not read here: a batch
// that carries one goes to libprotobuf, through the default case below.
static_assert(wire::ApiCall::kMaxFieldNumber < (1u << 11) && wire::EventBatch::kMaxFieldNumber < (1u << 11),
              "readTag reads tags of at most two bytes");
static_assert(batch::kSequenceField.type == wire::FieldType::kUint64 &&
                  batch::kBaseTimeNsField.type == wire::FieldType::kUint64 &&
                  wire::StringDef::kTextField.type == wire::FieldType::kString &&
                  !wire::StringDef::kTextField.repeated,
              "the batch's sequence and base time are uint64s, a string's text one string");

bool readStringDef(const uint8_t* p, const uint8_t* end, const uint8_t* load_end, StringDefinition& def) {
  uint64_t id = 0, kind = 0;
  const uint8_t* text = nullptr;
  std::size_t text_length = 0;
  while (p < end) {
    uint32_t tag;
    if (!readTag(p, end, tag)) return false;
    if (tag == kStringIdTag) {
      if (!readVarint(p, end, load_end, id)) return false;
    } else if (tag == kStringKindTag) {
      if (!readVarint(p, end, load_end, kind)) return false;
    } else if (tag == kStringTextTag) {
      if (!readLength(p, end, text_length)) return false;
      text = p;
      p += text_length;
      // Every occurrence is checked (libprotobuf checks each, though the last one wins).
      for (std::size_t i = 0; i < text_length; ++i) {
        if (text[i] >= 0x80) return false;
      }
    } else {
      return false;
    }
  }
  def.kind = asEnum<v1::StringKind, wire::StringDef::kKindField>(kind);
  def.id = asUint32<wire::StringDef::kIdField>(id);
  if (text) def.text.assign(reinterpret_cast<const char*>(text), text_length);
  else def.text.clear();
  return true;
}

}  // namespace

bool StreamDecoder::parseBatchFrame(std::span<const uint8_t> frame) {
  const uint8_t* p = frame.data();
  const uint8_t* const frame_end = p + frame.size();
  // A Frame whose only field is one batch.
  uint32_t tag;
  std::size_t length;
  if (!readTag(p, frame_end, tag) || tag != kFrameBatchTag) return false;
  if (!readLength(p, frame_end, length) || p + length != frame_end) return false;
  const uint8_t* const end = frame_end;

  DecodedBatch& out = batch_;
  out.strings.clear();
  out.api_calls.clear();
  out.activities.clear();
  out.nccl_calls.clear();
  out.markers.clear();
  out.host_ranges.clear();
  out.python_samples.clear();
  out.drops.clear();
  out.activity_api_spans.clear();
  uint64_t sequence = 0, base_time_ns = 0;
  // The running values start at base_time_ns; a batch whose base time comes after its first event
  // (no recorder writes one) is left to libprotobuf rather than decoded in two passes.
  bool events_started = false;
  RunningValues api(0), activity(0), nccl(0), marker(0), sample(0);
  const auto startEvents = [&] {
    if (events_started) return;
    events_started = true;
    api = activity = nccl = marker = sample = RunningValues(base_time_ns);
  };

  while (p < end) {
    if (!readTag(p, end, tag)) return false;
    if (tag == kSequenceTag) {
      if (!readVarint(p, end, end, sequence)) return false;
      continue;
    }
    if (tag == kBaseTimeTag) {
      if (events_started || !readVarint(p, end, end, base_time_ns)) return false;
      continue;
    }
    if (!readLength(p, end, length)) return false;
    const uint8_t* const field = p;
    const uint8_t* const field_end = p + length;
    p = field_end;
    switch (tag) {
      case kApiCallsTag: {
        namespace f = wire::ApiCall;
        // Fields are set straight into the event (absent ones stay 0); the running values after
        // the message. A switch per field: a recorder writes the fields of each message in the
        // same order, which the indirect branch predictor learns.
        ApiCallEvent& e = out.api_calls.emplace_back();
        uint32_t thread = 0;
        int64_t start_delta = 0, correlation_delta = 0;
        uint64_t duration = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case f::kKind: e.kind = asEnum<v1::ApiKind, f::kKindField>(v); return true;
            case f::kThreadId: thread = asUint32<f::kThreadIdField>(v); return true;
            case f::kStartDeltaNs: start_delta = asSint64<f::kStartDeltaNsField>(v); return true;
            case f::kDurationNs: duration = asUint64<f::kDurationNsField>(v); return true;
            case f::kCorrelationDelta: correlation_delta = asSint64<f::kCorrelationDeltaField>(v); return true;
            case f::kStream: e.stream = asUint64<f::kStreamField>(v); return true;
            case f::kBytes: e.bytes = asUint64<f::kBytesField>(v); return true;
            case f::kCopyKind: e.copy_kind = asEnum<v1::CopyKind, f::kCopyKindField>(v); return true;
            case f::kSrcMemory: e.src_memory = asEnum<v1::MemoryKind, f::kSrcMemoryField>(v); return true;
            case f::kDstMemory: e.dst_memory = asEnum<v1::MemoryKind, f::kDstMemoryField>(v); return true;
            case f::kBlocked: e.blocked = asBool<f::kBlockedField>(v); return true;
            case f::kReturnCode: e.return_code = asInt32<f::kReturnCodeField>(v); return true;
            case f::kApiNameId: e.api_name_id = asUint32<f::kApiNameIdField>(v); return true;
            case f::kDevice: e.device = asUint32<f::kDeviceField>(v); return true;
            case f::kCallSiteId: e.call_site_id = asUint32<f::kCallSiteIdField>(v); return true;
            case f::kPythonStackId: e.python_stack_id = asUint32<f::kPythonStackIdField>(v); return true;
            case f::kCbid: e.cbid = asUint32<f::kCbidField>(v); return true;
            case f::kDomain: e.domain = asEnum<v1::ApiDomain, f::kDomainField>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.thread_id = api.nextThread(thread);
        e.start_ns = api.nextTime(start_delta);
        e.end_ns = eventEnd(e.start_ns, duration);
        e.correlation_id = api.nextCorrelation(correlation_delta);
        break;
      }
      case kActivitiesTag: {
        namespace f = wire::DeviceActivity;
        DeviceActivityEvent& e = out.activities.emplace_back();
        int64_t start_delta = 0, correlation_delta = 0;
        uint64_t duration = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case f::kKind: e.kind = asEnum<v1::ActivityKind, f::kKindField>(v); return true;
            case f::kDevice: e.device = asUint32<f::kDeviceField>(v); return true;
            case f::kStream: e.stream = asUint64<f::kStreamField>(v); return true;
            case f::kStartDeltaNs: start_delta = asSint64<f::kStartDeltaNsField>(v); return true;
            case f::kDurationNs: duration = asUint64<f::kDurationNsField>(v); return true;
            case f::kCorrelationDelta: correlation_delta = asSint64<f::kCorrelationDeltaField>(v); return true;
            case f::kNameId: e.name_id = asUint32<f::kNameIdField>(v); return true;
            case f::kBytes: e.bytes = asUint64<f::kBytesField>(v); return true;
            case f::kCopyKind: e.copy_kind = asEnum<v1::CopyKind, f::kCopyKindField>(v); return true;
            case f::kSrcMemory: e.src_memory = asEnum<v1::MemoryKind, f::kSrcMemoryField>(v); return true;
            case f::kDstMemory: e.dst_memory = asEnum<v1::MemoryKind, f::kDstMemoryField>(v); return true;
            case f::kGraphId: e.graph_id = asUint32<f::kGraphIdField>(v); return true;
            case f::kSyncKind: e.sync_kind = asEnum<v1::SyncKind, f::kSyncKindField>(v); return true;
            case f::kEventRecordCorrelationId:
              e.event_record_correlation_id = asUint64<f::kEventRecordCorrelationIdField>(v);
              return true;
            case f::kEventRecordStream: e.event_record_stream = asUint64<f::kEventRecordStreamField>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.start_ns = activity.nextTime(start_delta);
        e.end_ns = eventEnd(e.start_ns, duration);
        e.correlation_id = activity.nextCorrelation(correlation_delta);
        break;
      }
      case kNcclCallsTag: {
        namespace f = wire::NcclCall;
        NcclCallEvent& e = out.nccl_calls.emplace_back();
        uint32_t thread = 0;
        int64_t start_delta = 0;
        uint64_t duration = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case f::kOp: e.op = asEnum<v1::NcclOp, f::kOpField>(v); return true;
            case f::kThreadId: thread = asUint32<f::kThreadIdField>(v); return true;
            case f::kStartDeltaNs: start_delta = asSint64<f::kStartDeltaNsField>(v); return true;
            case f::kDurationNs: duration = asUint64<f::kDurationNsField>(v); return true;
            case f::kCommId: e.comm_id = asUint32<f::kCommIdField>(v); return true;
            case f::kBytes: e.bytes = asUint64<f::kBytesField>(v); return true;
            case f::kCount: e.count = asUint64<f::kCountField>(v); return true;
            case f::kDataType: e.data_type = asEnum<v1::NcclDataType, f::kDataTypeField>(v); return true;
            case f::kPeer: e.peer = asInt32<f::kPeerField>(v); return true;
            case f::kRank: e.rank = asInt32<f::kRankField>(v); return true;
            case f::kNranks: e.nranks = asInt32<f::kNranksField>(v); return true;
            case f::kStream: e.stream = asUint64<f::kStreamField>(v); return true;
            case f::kReturnCode: e.return_code = asInt32<f::kReturnCodeField>(v); return true;
            case f::kGroupDepth: e.group_depth = asUint32<f::kGroupDepthField>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.thread_id = nccl.nextThread(thread);
        e.start_ns = nccl.nextTime(start_delta);
        e.end_ns = eventEnd(e.start_ns, duration);
        break;
      }
      case kMarkersTag: {
        namespace f = wire::Marker;
        MarkerEvent& e = out.markers.emplace_back();
        uint32_t thread = 0;
        int64_t time_delta = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case f::kKind: e.kind = asEnum<v1::MarkerKind, f::kKindField>(v); return true;
            case f::kThreadId: thread = asUint32<f::kThreadIdField>(v); return true;
            case f::kTimeDeltaNs: time_delta = asSint64<f::kTimeDeltaNsField>(v); return true;
            case f::kNameId: e.name_id = asUint32<f::kNameIdField>(v); return true;
            case f::kStep: e.step = asUint64<f::kStepField>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.thread_id = marker.nextThread(thread);
        e.time_ns = marker.nextTime(time_delta);
        break;
      }
      case kPythonSamplesTag: {
        // Every batch of a live recording with the sampler on carries some: read here, not left
        // to libprotobuf.
        namespace f = wire::PythonSample;
        PythonSampleEvent& e = out.python_samples.emplace_back();
        uint32_t thread = 0;
        int64_t time_delta = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case f::kThreadId: thread = asUint32<f::kThreadIdField>(v); return true;
            case f::kTimeDeltaNs: time_delta = asSint64<f::kTimeDeltaNsField>(v); return true;
            case f::kPythonStackId: e.python_stack_id = asUint32<f::kPythonStackIdField>(v); return true;
            case f::kPeriodNs: e.period_ns = asUint64<f::kPeriodNsField>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.thread_id = sample.nextThread(thread);
        e.time_ns = sample.nextTime(time_delta);
        break;
      }
      case kDropsTag: {
        namespace f = wire::DropCounter;
        DropCount& d = out.drops.emplace_back();
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case f::kSource: d.source = asEnum<v1::DropSource, f::kSourceField>(v); return true;
            case f::kId: d.id = asUint64<f::kIdField>(v); return true;
            case f::kDropped: d.dropped = asUint64<f::kDroppedField>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        break;
      }
      case kStringsTag:
        if (!readStringDef(field, field_end, end, out.strings.emplace_back())) return false;
        break;
      default:
        // An unknown field, or a known one with another wire type; host_ranges too (only traces
        // carry them, in few batches).
        return false;
    }
  }
  out.sequence = sequence;
  out.base_time_ns = base_time_ns;
  return true;
}

void StreamDecoder::beginPart() {
  health_.parts.emplace_back();
  in_later_part_ = true;
  last_sequence_before_part_ = next_sequence_;
}

void StreamDecoder::notePartBatch(uint64_t sequence) {
  StreamHealth::Part& part = health_.parts.back();
  if (part.batches == 0) part.first_sequence = sequence;
  part.last_sequence = std::max(part.last_sequence, sequence);
  ++part.batches;
}

bool StreamDecoder::duplicateBatch(uint64_t sequence, uint64_t events) {
  if (!in_later_part_) {
    notePartBatch(sequence);
    return false;
  }
  StreamHealth::Part& part = health_.parts.back();
  const bool first_of_part = part.batches == 0;
  notePartBatch(sequence);
  if (health_.batches == 0 || sequence >= next_sequence_) {
    if (first_of_part && sequence > last_sequence_before_part_) part.missing_before = sequence - last_sequence_before_part_;
    return false;
  }
  ++part.duplicate_batches;
  part.duplicate_events += events;
  return true;
}

bool StreamDecoder::takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) {
  if (!parseBatchFrame(frame)) return false;
  if (duplicateBatch(batch_.sequence, batch_.api_calls.size() + batch_.activities.size() + batch_.nccl_calls.size() +
                                          batch_.markers.size() + batch_.host_ranges.size() +
                                          batch_.python_samples.size()))
    return true;
  // From here on exactly what onFrame and decodeBatch do with the parsed frame.
  if (health_.has_goodbye) ++health_.frames_after_goodbye;
  if (!health_.has_hello) ++health_.frames_before_hello;
  trackSequence(batch_.sequence);
  ++health_.batches;
  batch_.frame_offset = offset;
  // Definitions first: the batch's events may use them.
  for (const StringDefinition& def : batch_.strings) strings_.define(def.kind, def.id, def.text);
  visitor_.onBatch(batch_, strings_);
  return true;
}

std::optional<ReadError> StreamDecoder::onFrame(const v1::Frame& frame, uint64_t offset) {
  if (frame.has_goodbye()) health_.parts.back().goodbye = true;
  if (frame.has_batch()) {
    const v1::EventBatch& b = frame.batch();
    if (duplicateBatch(b.sequence(), uint64_t(b.api_calls_size()) + b.activities_size() + b.nccl_calls_size() +
                                         b.markers_size() + b.host_ranges_size() + b.python_samples_size()))
      return std::nullopt;
  }
  if (in_later_part_ && frame.has_hello() && health_.has_hello) return std::nullopt;  // the part's copy
  // Both parts end with the Goodbye when the collector wrote it but its receipt came too late.
  if (in_later_part_ && frame.has_goodbye() && health_.has_goodbye) return std::nullopt;
  if (health_.has_goodbye) ++health_.frames_after_goodbye;
  switch (frame.body_case()) {
    case v1::Frame::kHello:
      if (health_.has_hello) {
        ++health_.extra_hellos;
        return std::nullopt;
      }
      if (auto error = checkWireVersion(frame.hello().wire_version())) {
        error->offset = offset;
        return error;
      }
      health_.has_hello = true;
      visitor_.onHello(frame.hello(), offset);
      return std::nullopt;
    case v1::Frame::kBatch:
      if (!health_.has_hello) ++health_.frames_before_hello;
      decodeBatch(frame.batch(), offset);
      return std::nullopt;
    case v1::Frame::kGoodbye:
      if (!health_.has_hello) ++health_.frames_before_hello;
      // A second Goodbye is counted as a frame after the first one (above) and passed on: its
      // totals are the later, and so the better, answer.
      health_.has_goodbye = true;
      visitor_.onGoodbye(frame.goodbye(), offset);
      return std::nullopt;
    case v1::Frame::kHeartbeat:
      if (!health_.has_hello) ++health_.frames_before_hello;
      visitor_.onHeartbeat(frame.heartbeat(), offset);
      return std::nullopt;
    case v1::Frame::kStatusRequest:
      return std::nullopt;  // a live view's request to the collector: never part of a recording
    case v1::Frame::BODY_NOT_SET:
      break;  // the frame decoder skips these; nothing to do
  }
  return std::nullopt;
}

void StreamDecoder::trackSequence(uint64_t sequence) {
  if (health_.batches > 0 && sequence < next_sequence_) {
    ++health_.batches_out_of_order;
    return;
  }
  health_.batches_missing += sequence - next_sequence_;
  next_sequence_ = sequence + 1;
}

void StreamDecoder::decodeBatch(const v1::EventBatch& in, uint64_t offset) {
  trackSequence(in.sequence());
  ++health_.batches;

  DecodedBatch& out = batch_;
  out.sequence = in.sequence();
  out.base_time_ns = in.base_time_ns();
  out.frame_offset = offset;

  // Definitions first: the batch's events may use them.
  out.strings.clear();
  for (const v1::StringDef& def : in.strings()) {
    strings_.define(def.kind(), def.id(), def.text());
    out.strings.push_back({def.kind(), def.id(), def.text()});
  }

  out.api_calls.clear();
  RunningValues api(in.base_time_ns());
  for (const v1::ApiCall& c : in.api_calls()) {
    ApiCallEvent& e = out.api_calls.emplace_back();
    e.kind = c.kind();
    e.thread_id = api.nextThread(c.thread_id());
    e.start_ns = api.nextTime(c.start_delta_ns());
    e.end_ns = eventEnd(e.start_ns, c.duration_ns());
    e.correlation_id = api.nextCorrelation(c.correlation_delta());
    e.stream = c.stream();
    e.bytes = c.bytes();
    e.copy_kind = c.copy_kind();
    e.src_memory = c.src_memory();
    e.dst_memory = c.dst_memory();
    e.blocked = c.blocked();
    e.return_code = c.return_code();
    e.api_name_id = c.api_name_id();
    e.device = c.device();
    e.call_site_id = c.call_site_id();
    e.python_stack_id = c.python_stack_id();
    e.cbid = c.cbid();
    e.domain = c.domain();
  }

  out.activities.clear();
  RunningValues activity(in.base_time_ns());
  for (const v1::DeviceActivity& a : in.activities()) {
    DeviceActivityEvent& e = out.activities.emplace_back();
    e.kind = a.kind();
    e.device = a.device();
    e.stream = a.stream();
    e.start_ns = activity.nextTime(a.start_delta_ns());
    e.end_ns = eventEnd(e.start_ns, a.duration_ns());
    e.correlation_id = activity.nextCorrelation(a.correlation_delta());
    e.name_id = a.name_id();
    e.bytes = a.bytes();
    e.copy_kind = a.copy_kind();
    e.src_memory = a.src_memory();
    e.dst_memory = a.dst_memory();
    e.graph_id = a.graph_id();
    e.sync_kind = a.sync_kind();
    e.event_record_correlation_id = a.event_record_correlation_id();
    e.event_record_stream = a.event_record_stream();
  }

  out.nccl_calls.clear();
  RunningValues nccl(in.base_time_ns());
  for (const v1::NcclCall& c : in.nccl_calls()) {
    NcclCallEvent& e = out.nccl_calls.emplace_back();
    e.op = c.op();
    e.thread_id = nccl.nextThread(c.thread_id());
    e.start_ns = nccl.nextTime(c.start_delta_ns());
    e.end_ns = eventEnd(e.start_ns, c.duration_ns());
    e.comm_id = c.comm_id();
    e.bytes = c.bytes();
    e.count = c.count();
    e.data_type = c.data_type();
    e.peer = c.peer();
    e.rank = c.rank();
    e.nranks = c.nranks();
    e.stream = c.stream();
    e.return_code = c.return_code();
    e.group_depth = c.group_depth();
  }

  out.markers.clear();
  RunningValues marker(in.base_time_ns());
  for (const v1::Marker& m : in.markers()) {
    MarkerEvent& e = out.markers.emplace_back();
    e.kind = m.kind();
    e.thread_id = marker.nextThread(m.thread_id());
    e.time_ns = marker.nextTime(m.time_delta_ns());
    e.name_id = m.name_id();
    e.step = m.step();
  }

  out.host_ranges.clear();
  RunningValues host(in.base_time_ns());
  for (const v1::HostRange& r : in.host_ranges()) {
    HostRangeEvent& e = out.host_ranges.emplace_back();
    e.kind = r.kind();
    e.thread_id = host.nextThread(r.thread_id());
    e.start_ns = host.nextTime(r.start_delta_ns());
    e.end_ns = eventEnd(e.start_ns, r.duration_ns());
    e.name_id = r.name_id();
  }

  out.python_samples.clear();
  RunningValues sample(in.base_time_ns());
  for (const v1::PythonSample& p : in.python_samples()) {
    PythonSampleEvent& e = out.python_samples.emplace_back();
    e.thread_id = sample.nextThread(p.thread_id());
    e.time_ns = sample.nextTime(p.time_delta_ns());
    e.python_stack_id = p.python_stack_id();
    e.period_ns = p.period_ns();
  }

  out.drops.clear();
  for (const v1::DropCounter& d : in.drops()) {
    out.drops.push_back({d.source(), d.id(), d.dropped()});
  }

  out.activity_api_spans.clear();
  for (const v1::ActivityApiSpan& s : in.activity_api_spans()) {
    out.activity_api_spans.push_back({s.state(), s.start_ns(), s.end_ns(), s.client()});
  }

  visitor_.onBatch(out, strings_);
}

}  // namespace gapwatch
