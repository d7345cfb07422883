// Field numbers and types come from <gapwatch/wire_schema.h>, generated from
// proto/gapwatch/v1/{stream,events}.proto; ProtoWriter checks each field's type at compile time.
// The round-trip test (tests/interpose/frame_encoder_test.cpp) parses what this writes with
// libprotobuf.
#include "frame_encoder.h"

#include <gapwatch/recording_format.h>

#include <algorithm>

#include "proto_writer.h"

namespace gapwatch {
namespace {

namespace api_call = wire::ApiCall;
namespace activity = wire::DeviceActivity;
namespace nccl_call = wire::NcclCall;

// The smallest time in a list: the batch's base, so most deltas are small and positive.
uint64_t base_time(const BatchContent& b) {
  uint64_t base = UINT64_MAX;
  if (!b.api_calls.empty()) base = std::min(base, b.api_calls[0].start_ns);
  if (!b.activities.empty()) base = std::min(base, b.activities[0].start_ns);
  if (!b.nccl_calls.empty()) base = std::min(base, b.nccl_calls[0].start_ns);
  if (!b.python_samples.empty()) base = std::min(base, b.python_samples[0].time_ns);
  return base == UINT64_MAX ? 0 : base;
}

uint64_t duration(uint64_t start_ns, uint64_t end_ns) { return end_ns >= start_ns ? end_ns - start_ns : 0; }

void drop_counter(ProtoWriter& w, const DropCount& d) {
  w.u64<wire::DropCounter::kSourceField>(d.source);
  w.u64<wire::DropCounter::kIdField>(d.id);
  w.u64<wire::DropCounter::kDroppedField>(d.dropped);
}

}  // namespace

template <wire::Field Body>
void FrameEncoder::frame(std::string& out) {
  static_assert(Body.number == wire::Frame::kHello || Body.number == wire::Frame::kBatch ||
                    Body.number == wire::Frame::kGoodbye || Body.number == wire::Frame::kHeartbeat,
                "a frame body is one of Frame's oneof members");
  message_.clear();
  ProtoWriter(message_).bytes<Body>(body_);
  wire::appendVarint(out, message_.size());
  out.append(message_);
}

void FrameEncoder::hello(const HelloInfo& h, std::string& out) {
  namespace hello = wire::Hello;
  body_.clear();
  ProtoWriter w(body_);
  w.u64<hello::kWireVersionField>(kWireVersion);
  w.u64<hello::kPidField>(h.pid);
  w.string<hello::kHostField>(h.host);
  if (h.has_rank) w.optional_i64<hello::kRankField>(h.rank);
  if (h.has_local_rank) w.optional_i64<hello::kLocalRankField>(h.local_rank);
  if (h.has_world_size) w.optional_i64<hello::kWorldSizeField>(h.world_size);
  for (const auto& arg : h.command_line) w.repeated_string<hello::kCommandLineField>(arg);
  // Host times are CLOCK_MONOTONIC, and CUPTI's are put on it (cupti_probe.cpp).
  w.u64<hello::kClockField>(wire::ClockDomain::kMonotonic);
  w.packed<hello::kProbesField>(h.probes, item_);
  w.string<hello::kLibraryVersionField>(kLibraryVersion);
  w.u64<hello::kCuptiVersionField>(h.cupti_version);
  w.u64<hello::kCudaDriverVersionField>(h.cuda_driver_version);
  w.u64<hello::kStartTimeNsField>(h.start_time_ns);
  w.u64<hello::kProcessStartNsField>(h.process_start_ns);
  w.u64<hello::kStartUnixNsField>(h.start_unix_ns);
  w.string<hello::kCuptiUnavailableField>(h.cupti_unavailable);
  frame<wire::Frame::kHelloField>(out);
}

void FrameEncoder::batch(const BatchContent& b, std::string& out) {
  namespace batch = wire::EventBatch;
  body_.clear();
  ProtoWriter w(body_);
  uint64_t base = base_time(b);
  w.u64<batch::kSequenceField>(b.sequence);
  w.u64<batch::kBaseTimeNsField>(base);
  for (const auto& s : b.strings) {
    w.message<batch::kStringsField>(item_, [&](ProtoWriter& m) {
      m.u64<wire::StringDef::kIdField>(s.id);
      m.u64<wire::StringDef::kKindField>(s.kind);
      m.string<wire::StringDef::kTextField>(s.text);
    });
  }
  {
    uint64_t t = base, c = 0;
    uint32_t thread = 0;
    for (const ApiCallFields& e : b.api_calls) {
      w.message<batch::kApiCallsField>(item_, [&](ProtoWriter& m) {
        m.u64<api_call::kKindField>(e.kind);
        if (e.thread_id != thread) m.u64<api_call::kThreadIdField>(e.thread_id);
        m.s64<api_call::kStartDeltaNsField>(int64_t(e.start_ns - t));
        m.u64<api_call::kDurationNsField>(duration(e.start_ns, e.end_ns));
        m.s64<api_call::kCorrelationDeltaField>(int64_t(e.correlation_id - c));
        m.u64<api_call::kBytesField>(e.bytes);
        m.u64<api_call::kCopyKindField>(e.copy_kind);
        m.u64<api_call::kSrcMemoryField>(e.src_memory);
        m.u64<api_call::kDstMemoryField>(e.dst_memory);
        m.boolean<api_call::kBlockedField>(e.blocked);
        m.i64<api_call::kReturnCodeField>(e.return_code);
        m.u64<api_call::kApiNameIdField>(e.api_name_id);
        m.u64<api_call::kCallSiteIdField>(e.call_site_id);
        m.u64<api_call::kPythonStackIdField>(e.python_stack_id);
      });
      t = e.start_ns, c = e.correlation_id, thread = e.thread_id;
    }
  }
  {
    uint64_t t = base, c = 0;
    for (const DeviceActivityFields& e : b.activities) {
      w.message<batch::kActivitiesField>(item_, [&](ProtoWriter& m) {
        m.u64<activity::kKindField>(e.kind);
        m.u64<activity::kDeviceField>(e.device);
        m.u64<activity::kStreamField>(e.stream);
        m.s64<activity::kStartDeltaNsField>(int64_t(e.start_ns - t));
        m.u64<activity::kDurationNsField>(duration(e.start_ns, e.end_ns));
        m.s64<activity::kCorrelationDeltaField>(int64_t(e.correlation_id - c));
        m.u64<activity::kNameIdField>(e.name_id);
        m.u64<activity::kBytesField>(e.bytes);
        m.u64<activity::kCopyKindField>(e.copy_kind);
        m.u64<activity::kSrcMemoryField>(e.src_memory);
        m.u64<activity::kDstMemoryField>(e.dst_memory);
        m.u64<activity::kGraphIdField>(e.graph_id);
        m.u64<activity::kSyncKindField>(e.sync_kind);
      });
      t = e.start_ns, c = e.correlation_id;
    }
  }
  {
    uint64_t t = base;
    uint32_t thread = 0;
    for (const NcclCallFields& e : b.nccl_calls) {
      w.message<batch::kNcclCallsField>(item_, [&](ProtoWriter& m) {
        m.u64<nccl_call::kOpField>(e.op);
        if (e.thread_id != thread) m.u64<nccl_call::kThreadIdField>(e.thread_id);
        m.s64<nccl_call::kStartDeltaNsField>(int64_t(e.start_ns - t));
        m.u64<nccl_call::kDurationNsField>(duration(e.start_ns, e.end_ns));
        m.u64<nccl_call::kCommIdField>(e.comm_id);
        m.u64<nccl_call::kBytesField>(e.bytes);
        m.u64<nccl_call::kCountField>(e.count);
        m.u64<nccl_call::kDataTypeField>(e.data_type);
        m.i64<nccl_call::kPeerField>(e.peer);
        if (e.nranks > 0) m.i64<nccl_call::kRankField>(e.rank), m.i64<nccl_call::kNranksField>(e.nranks);
        m.u64<nccl_call::kStreamField>(e.stream);
        m.i64<nccl_call::kReturnCodeField>(e.return_code);
        m.u64<nccl_call::kGroupDepthField>(e.group_depth);
      });
      t = e.start_ns, thread = e.thread_id;
    }
  }
  {
    uint64_t t = base;
    uint32_t thread = 0;
    for (const PythonSampleFields& e : b.python_samples) {
      w.message<batch::kPythonSamplesField>(item_, [&](ProtoWriter& m) {
        if (e.thread_id != thread) m.u64<wire::PythonSample::kThreadIdField>(e.thread_id);
        m.s64<wire::PythonSample::kTimeDeltaNsField>(int64_t(e.time_ns - t));
        m.u64<wire::PythonSample::kPythonStackIdField>(e.python_stack_id);
        m.u64<wire::PythonSample::kPeriodNsField>(e.period_ns);
      });
      t = e.time_ns, thread = e.thread_id;
    }
  }
  for (const auto& d : b.drops) w.message<batch::kDropsField>(item_, [&](ProtoWriter& m) { drop_counter(m, d); });
  for (const auto& s : b.activity_api_spans)
    w.message<batch::kActivityApiSpansField>(item_, [&](ProtoWriter& m) {
      m.u64<wire::ActivityApiSpan::kStateField>(s.state);
      m.u64<wire::ActivityApiSpan::kStartNsField>(s.start_ns);
      m.u64<wire::ActivityApiSpan::kEndNsField>(s.end_ns);
      m.string<wire::ActivityApiSpan::kClientField>(s.client);
    });
  frame<wire::Frame::kBatchField>(out);
}

void FrameEncoder::goodbye(const GoodbyeInfo& g, std::string& out) {
  namespace goodbye = wire::Goodbye;
  body_.clear();
  ProtoWriter w(body_);
  w.u64<goodbye::kEndTimeNsField>(g.end_time_ns);
  w.u64<goodbye::kExitReasonField>(g.exit_reason);
  if (g.has_exit_status) w.optional_i64<goodbye::kExitStatusField>(g.exit_status);
  w.u64<goodbye::kBatchesField>(g.batches);
  w.u64<goodbye::kApiCallsField>(g.api_calls);
  w.u64<goodbye::kActivitiesField>(g.activities);
  w.u64<goodbye::kNcclCallsField>(g.nccl_calls);
  w.u64<goodbye::kEventsDroppedField>(g.events_dropped);
  w.u64<goodbye::kCuptiRecordsDroppedField>(g.cupti_records_dropped);
  for (const auto& d : g.drops) w.message<goodbye::kDropsField>(item_, [&](ProtoWriter& m) { drop_counter(m, d); });
  frame<wire::Frame::kGoodbyeField>(out);
}

void FrameEncoder::heartbeat(const HeartbeatInfo& h, std::string& out) {
  namespace heartbeat = wire::Heartbeat;
  namespace call = wire::CallInProgress;
  namespace launch = wire::UnfinishedLaunch;
  body_.clear();
  ProtoWriter w(body_);
  w.u64<heartbeat::kTimeNsField>(h.time_ns);
  for (const auto& c : h.calls)
    w.message<heartbeat::kCallsField>(item_, [&](ProtoWriter& m) {
      m.u64<call::kThreadIdField>(c.thread_id);
      m.u64<call::kStartNsField>(c.start_ns);
      m.u64<call::kCorrelationIdField>(c.correlation_id);
      m.string<call::kApiNameField>(c.api_name ? c.api_name : "");
    });
  for (const auto& u : h.unfinished)
    w.message<heartbeat::kUnfinishedField>(item_, [&](ProtoWriter& m) {
      m.u64<launch::kCorrelationIdField>(u.correlation_id);
      m.u64<launch::kLaunchNsField>(u.launch_ns);
      m.string<launch::kKernelNameField>(u.kernel_name ? u.kernel_name : "");
      m.u64<launch::kThreadIdField>(u.thread_id);
    });
  frame<wire::Frame::kHeartbeatField>(out);
}

}  // namespace gapwatch
