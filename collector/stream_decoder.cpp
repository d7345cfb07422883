// collector/stream_decoder.cpp: see stream_decoder.h.
#include "collector/stream_decoder.h"

#include <gapwatch/recording_format.h>

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

}  // namespace

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
