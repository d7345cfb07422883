// reader/batch_encoder.cpp: see batch_encoder.h.
#include "reader/batch_encoder.h"

namespace gapwatch {
namespace {

// The running values of one list.
class DeltaWriter {
 public:
  explicit DeltaWriter(uint64_t base_time_ns) : time_(base_time_ns) {}

  // Unsigned wrap-around then a cast: a list need not be sorted, so a delta may be negative.
  int64_t timeDelta(uint64_t t) {
    const auto delta = static_cast<int64_t>(t - time_);
    time_ = t;
    return delta;
  }
  int64_t correlationDelta(uint64_t c) {
    const auto delta = static_cast<int64_t>(c - correlation_);
    correlation_ = c;
    return delta;
  }
  uint32_t thread(uint32_t t) {
    const uint32_t written = t == thread_ ? 0 : t;
    thread_ = t;
    return written;
  }

 private:
  uint64_t time_;
  uint64_t correlation_ = 0;
  uint32_t thread_ = 0;
};

}  // namespace

v1::EventBatch encodeEventBatch(const DecodedBatch& in) {
  v1::EventBatch out;
  out.set_sequence(in.sequence);
  out.set_base_time_ns(in.base_time_ns);
  for (const StringDefinition& s : in.strings) {
    v1::StringDef* def = out.add_strings();
    def->set_id(s.id);
    def->set_kind(s.kind);
    def->set_text(s.text);
  }
  DeltaWriter api(in.base_time_ns);
  for (const ApiCallEvent& e : in.api_calls) {
    v1::ApiCall* c = out.add_api_calls();
    c->set_kind(e.kind);
    c->set_thread_id(api.thread(e.thread_id));
    c->set_start_delta_ns(api.timeDelta(e.start_ns));
    c->set_duration_ns(e.end_ns - e.start_ns);
    c->set_correlation_delta(api.correlationDelta(e.correlation_id));
    c->set_stream(e.stream);
    c->set_bytes(e.bytes);
    c->set_copy_kind(e.copy_kind);
    c->set_src_memory(e.src_memory);
    c->set_dst_memory(e.dst_memory);
    c->set_blocked(e.blocked);
    c->set_return_code(e.return_code);
    c->set_api_name_id(e.api_name_id);
    c->set_device(e.device);
    c->set_call_site_id(e.call_site_id);
    if (e.python_stack_id) c->set_python_stack_id(e.python_stack_id);
    c->set_cbid(e.cbid);
    c->set_domain(e.domain);
  }
  DeltaWriter activity(in.base_time_ns);
  for (const DeviceActivityEvent& e : in.activities) {
    v1::DeviceActivity* a = out.add_activities();
    a->set_kind(e.kind);
    a->set_device(e.device);
    a->set_stream(e.stream);
    a->set_start_delta_ns(activity.timeDelta(e.start_ns));
    a->set_duration_ns(e.end_ns - e.start_ns);
    a->set_correlation_delta(activity.correlationDelta(e.correlation_id));
    a->set_name_id(e.name_id);
    a->set_bytes(e.bytes);
    a->set_copy_kind(e.copy_kind);
    a->set_src_memory(e.src_memory);
    a->set_dst_memory(e.dst_memory);
    a->set_graph_id(e.graph_id);
    a->set_sync_kind(e.sync_kind);
    a->set_event_record_correlation_id(e.event_record_correlation_id);
    a->set_event_record_stream(e.event_record_stream);
  }
  DeltaWriter nccl(in.base_time_ns);
  for (const NcclCallEvent& e : in.nccl_calls) {
    v1::NcclCall* c = out.add_nccl_calls();
    c->set_op(e.op);
    c->set_thread_id(nccl.thread(e.thread_id));
    c->set_start_delta_ns(nccl.timeDelta(e.start_ns));
    c->set_duration_ns(e.end_ns - e.start_ns);
    c->set_comm_id(e.comm_id);
    c->set_bytes(e.bytes);
    c->set_count(e.count);
    c->set_data_type(e.data_type);
    c->set_peer(e.peer);
    c->set_rank(e.rank);
    c->set_nranks(e.nranks);
    c->set_stream(e.stream);
    c->set_return_code(e.return_code);
    c->set_group_depth(e.group_depth);
  }
  DeltaWriter marker(in.base_time_ns);
  for (const MarkerEvent& e : in.markers) {
    v1::Marker* m = out.add_markers();
    m->set_kind(e.kind);
    m->set_thread_id(marker.thread(e.thread_id));
    m->set_time_delta_ns(marker.timeDelta(e.time_ns));
    m->set_name_id(e.name_id);
    m->set_step(e.step);
  }
  DeltaWriter host(in.base_time_ns);
  for (const HostRangeEvent& e : in.host_ranges) {
    v1::HostRange* r = out.add_host_ranges();
    r->set_kind(e.kind);
    r->set_thread_id(host.thread(e.thread_id));
    r->set_start_delta_ns(host.timeDelta(e.start_ns));
    r->set_duration_ns(e.end_ns - e.start_ns);
    r->set_name_id(e.name_id);
  }
  DeltaWriter sample(in.base_time_ns);
  for (const PythonSampleEvent& e : in.python_samples) {
    v1::PythonSample* p = out.add_python_samples();
    p->set_thread_id(sample.thread(e.thread_id));
    p->set_time_delta_ns(sample.timeDelta(e.time_ns));
    p->set_python_stack_id(e.python_stack_id);
    p->set_period_ns(e.period_ns);
  }
  for (const DropCount& d : in.drops) {
    v1::DropCounter* c = out.add_drops();
    c->set_source(d.source);
    c->set_id(d.id);
    c->set_dropped(d.dropped);
  }
  for (const ActivityApiSpan& s : in.activity_api_spans) {
    v1::ActivityApiSpan* span = out.add_activity_api_spans();
    span->set_state(s.state);
    span->set_start_ns(s.start_ns);
    span->set_end_ns(s.end_ns);
    span->set_client(s.client);
  }
  return out;
}

}  // namespace gapwatch
