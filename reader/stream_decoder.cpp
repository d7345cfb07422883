// reader/stream_decoder.cpp: see stream_decoder.h.
#include "reader/stream_decoder.h"

#include <gapwatch/recording_format.h>
#include <gapwatch/wire_primitives.h>
#include <gapwatch/wire_schema.h>

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
                  allSingularVarints(wire::DropCounter::kFields),
              "the fast path reads event messages as varint fields only");
static_assert(wire::ApiCall::kFieldCount == 17 && wire::DeviceActivity::kFieldCount == 13 &&
                  wire::NcclCall::kFieldCount == 14 && wire::Marker::kFieldCount == 5 &&
                  wire::DropCounter::kFieldCount == 3 && wire::StringDef::kFieldCount == 3 &&
                  wire::EventBatch::kFieldCount == 8,
              "a field was added to or removed from a batch message: update the fast path's switches");
static_assert(wire::ApiCall::kMaxFieldNumber < (1u << 11) && wire::EventBatch::kMaxFieldNumber < (1u << 11),
              "readTag reads tags of at most two bytes");
static_assert(batch::kSequenceField.wire_type == wire::WireType::kVarint &&
                  batch::kBaseTimeNsField.wire_type == wire::WireType::kVarint &&
                  wire::StringDef::kTextField.type == wire::FieldType::kString,
              "the batch's sequence and base time are varints, a string's text is a string");

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
  def.kind = enumValue<v1::StringKind>(kind);
  def.id = u32(id);
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
  out.drops.clear();
  uint64_t sequence = 0, base_time_ns = 0;
  // The running values start at base_time_ns; a batch whose base time comes after its first event
  // (no recorder writes one) is left to libprotobuf rather than decoded in two passes.
  bool events_started = false;
  RunningValues api(0), activity(0), nccl(0), marker(0);
  const auto startEvents = [&] {
    if (events_started) return;
    events_started = true;
    api = activity = nccl = marker = RunningValues(base_time_ns);
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
        // Fields are set straight into the event (absent ones stay 0); the running values after
        // the message. A switch per field: a recorder writes the fields of each message in the
        // same order, which the indirect branch predictor learns.
        ApiCallEvent& e = out.api_calls.emplace_back();
        uint64_t thread = 0, start_delta = 0, duration = 0, correlation_delta = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case wire::ApiCall::kKind: e.kind = enumValue<v1::ApiKind>(v); return true;
            case wire::ApiCall::kThreadId: thread = v; return true;
            case wire::ApiCall::kStartDeltaNs: start_delta = v; return true;
            case wire::ApiCall::kDurationNs: duration = v; return true;
            case wire::ApiCall::kCorrelationDelta: correlation_delta = v; return true;
            case wire::ApiCall::kStream: e.stream = v; return true;
            case wire::ApiCall::kBytes: e.bytes = v; return true;
            case wire::ApiCall::kCopyKind: e.copy_kind = enumValue<v1::CopyKind>(v); return true;
            case wire::ApiCall::kSrcMemory: e.src_memory = enumValue<v1::MemoryKind>(v); return true;
            case wire::ApiCall::kDstMemory: e.dst_memory = enumValue<v1::MemoryKind>(v); return true;
            case wire::ApiCall::kBlocked: e.blocked = v != 0; return true;
            case wire::ApiCall::kReturnCode: e.return_code = i32(v); return true;
            case wire::ApiCall::kApiNameId: e.api_name_id = u32(v); return true;
            case wire::ApiCall::kDevice: e.device = u32(v); return true;
            case wire::ApiCall::kCallSiteId: e.call_site_id = u32(v); return true;
            case wire::ApiCall::kCbid: e.cbid = u32(v); return true;
            case wire::ApiCall::kDomain: e.domain = enumValue<v1::ApiDomain>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.thread_id = api.nextThread(u32(thread));
        e.start_ns = api.nextTime(zigZag(start_delta));
        e.end_ns = eventEnd(e.start_ns, duration);
        e.correlation_id = api.nextCorrelation(zigZag(correlation_delta));
        break;
      }
      case kActivitiesTag: {
        DeviceActivityEvent& e = out.activities.emplace_back();
        uint64_t start_delta = 0, duration = 0, correlation_delta = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case wire::DeviceActivity::kKind: e.kind = enumValue<v1::ActivityKind>(v); return true;
            case wire::DeviceActivity::kDevice: e.device = u32(v); return true;
            case wire::DeviceActivity::kStream: e.stream = v; return true;
            case wire::DeviceActivity::kStartDeltaNs: start_delta = v; return true;
            case wire::DeviceActivity::kDurationNs: duration = v; return true;
            case wire::DeviceActivity::kCorrelationDelta: correlation_delta = v; return true;
            case wire::DeviceActivity::kNameId: e.name_id = u32(v); return true;
            case wire::DeviceActivity::kBytes: e.bytes = v; return true;
            case wire::DeviceActivity::kCopyKind: e.copy_kind = enumValue<v1::CopyKind>(v); return true;
            case wire::DeviceActivity::kSrcMemory: e.src_memory = enumValue<v1::MemoryKind>(v); return true;
            case wire::DeviceActivity::kDstMemory: e.dst_memory = enumValue<v1::MemoryKind>(v); return true;
            case wire::DeviceActivity::kGraphId: e.graph_id = u32(v); return true;
            case wire::DeviceActivity::kSyncKind: e.sync_kind = enumValue<v1::SyncKind>(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.start_ns = activity.nextTime(zigZag(start_delta));
        e.end_ns = eventEnd(e.start_ns, duration);
        e.correlation_id = activity.nextCorrelation(zigZag(correlation_delta));
        break;
      }
      case kNcclCallsTag: {
        NcclCallEvent& e = out.nccl_calls.emplace_back();
        uint64_t thread = 0, start_delta = 0, duration = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case wire::NcclCall::kOp: e.op = enumValue<v1::NcclOp>(v); return true;
            case wire::NcclCall::kThreadId: thread = v; return true;
            case wire::NcclCall::kStartDeltaNs: start_delta = v; return true;
            case wire::NcclCall::kDurationNs: duration = v; return true;
            case wire::NcclCall::kCommId: e.comm_id = u32(v); return true;
            case wire::NcclCall::kBytes: e.bytes = v; return true;
            case wire::NcclCall::kCount: e.count = v; return true;
            case wire::NcclCall::kDataType: e.data_type = enumValue<v1::NcclDataType>(v); return true;
            case wire::NcclCall::kPeer: e.peer = i32(v); return true;
            case wire::NcclCall::kRank: e.rank = i32(v); return true;
            case wire::NcclCall::kNranks: e.nranks = i32(v); return true;
            case wire::NcclCall::kStream: e.stream = v; return true;
            case wire::NcclCall::kReturnCode: e.return_code = i32(v); return true;
            case wire::NcclCall::kGroupDepth: e.group_depth = u32(v); return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.thread_id = nccl.nextThread(u32(thread));
        e.start_ns = nccl.nextTime(zigZag(start_delta));
        e.end_ns = eventEnd(e.start_ns, duration);
        break;
      }
      case kMarkersTag: {
        MarkerEvent& e = out.markers.emplace_back();
        uint64_t thread = 0, time_delta = 0;
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case wire::Marker::kKind: e.kind = enumValue<v1::MarkerKind>(v); return true;
            case wire::Marker::kThreadId: thread = v; return true;
            case wire::Marker::kTimeDeltaNs: time_delta = v; return true;
            case wire::Marker::kNameId: e.name_id = u32(v); return true;
            case wire::Marker::kStep: e.step = v; return true;
            default: return false;
          }
        });
        if (!ok) return false;
        startEvents();
        e.thread_id = marker.nextThread(u32(thread));
        e.time_ns = marker.nextTime(zigZag(time_delta));
        break;
      }
      case kDropsTag: {
        DropCount& d = out.drops.emplace_back();
        const bool ok = readVarintFields(field, field_end, end, [&](uint32_t number, uint64_t v) {
          switch (number) {
            case wire::DropCounter::kSource: d.source = enumValue<v1::DropSource>(v); return true;
            case wire::DropCounter::kId: d.id = v; return true;
            case wire::DropCounter::kDropped: d.dropped = v; return true;
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
        return false;  // an unknown field, or a known one with another wire type
    }
  }
  out.sequence = sequence;
  out.base_time_ns = base_time_ns;
  return true;
}

bool StreamDecoder::takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) {
  if (!parseBatchFrame(frame)) return false;
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

  out.drops.clear();
  for (const v1::DropCounter& d : in.drops()) {
    out.drops.push_back({d.source(), d.id(), d.dropped()});
  }

  visitor_.onBatch(out, strings_);
}

}  // namespace gapwatch
