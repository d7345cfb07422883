// tests/unit/gwt_test_writer.cpp: see gwt_test_writer.h.
#include "gwt_test_writer.h"

#include <gapwatch/wire_primitives.h>

#include <fstream>
#include <stdexcept>

namespace gapwatch::test {

std::string varint(uint64_t value) {
  std::string out;
  wire::appendVarint(out, value);
  return out;
}

GwtBytes::GwtBytes(uint32_t format_version) {
  bytes_.assign(reinterpret_cast<const char*>(kFileMagic), sizeof(kFileMagic));
  for (int i = 0; i < 4; ++i) bytes_ += static_cast<char>((format_version >> (8 * i)) & 0xff);
  boundaries_.push_back(bytes_.size());
}

GwtBytes& GwtBytes::frame(const v1::Frame& frame) { return rawFrame(frame.SerializeAsString()); }

GwtBytes& GwtBytes::hello(const v1::Hello& hello) {
  v1::Frame f;
  *f.mutable_hello() = hello;
  return frame(f);
}

GwtBytes& GwtBytes::batch(const v1::EventBatch& batch) {
  v1::Frame f;
  *f.mutable_batch() = batch;
  return frame(f);
}

GwtBytes& GwtBytes::goodbye(const v1::Goodbye& goodbye) {
  v1::Frame f;
  *f.mutable_goodbye() = goodbye;
  return frame(f);
}

GwtBytes& GwtBytes::rawFrame(std::string_view body) {
  bytes_ += varint(body.size());
  bytes_ += body;
  boundaries_.push_back(bytes_.size());
  return *this;
}

GwtBytes& GwtBytes::raw(std::string_view bytes) {
  bytes_ += bytes;
  return *this;
}

void GwtBytes::writeTo(const std::string& path) const {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
  if (!file) throw std::runtime_error("cannot write " + path);
}

v1::Hello makeHello(uint32_t pid, uint64_t start_time_ns) {
  v1::Hello hello;
  hello.set_wire_version(kWireVersion);
  hello.set_pid(pid);
  hello.set_host("testhost");
  hello.add_command_line("python");
  hello.add_command_line("train.py");
  hello.set_clock(v1::CLOCK_DOMAIN_MONOTONIC);
  hello.add_probes(v1::PROBE_CUPTI_RUNTIME_CALLBACKS);
  hello.add_probes(v1::PROBE_CUPTI_ACTIVITY);
  hello.set_library_version(kLibraryVersion);
  hello.set_start_time_ns(start_time_ns);
  hello.set_process_start_ns(start_time_ns > 500'000'000 ? start_time_ns - 500'000'000 : 0);
  return hello;
}

namespace {

// The running values of one list, the writer's side.
class DeltaWriter {
 public:
  explicit DeltaWriter(uint64_t base_time_ns) : time_(base_time_ns) {}

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

v1::EventBatch encodeBatch(const BatchContents& in) {
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
  for (const DropCount& d : in.drops) {
    v1::DropCounter* c = out.add_drops();
    c->set_source(d.source);
    c->set_id(d.id);
    c->set_dropped(d.dropped);
  }
  return out;
}

DeviceActivityEvent kernel(uint32_t device, uint64_t stream, uint64_t start_ns, uint64_t end_ns,
                           uint64_t correlation_id, uint32_t name_id) {
  DeviceActivityEvent e;
  e.kind = v1::ACTIVITY_KIND_KERNEL;
  e.device = device;
  e.stream = stream;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.correlation_id = correlation_id;
  e.name_id = name_id;
  return e;
}

ApiCallEvent apiCall(v1::ApiKind kind, uint32_t thread_id, uint64_t start_ns, uint64_t end_ns,
                     bool blocked, uint64_t correlation_id) {
  ApiCallEvent e;
  e.kind = kind;
  e.thread_id = thread_id;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.blocked = blocked;
  e.correlation_id = correlation_id;
  return e;
}

}  // namespace gapwatch::test
