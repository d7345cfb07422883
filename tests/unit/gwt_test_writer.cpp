// tests/unit/gwt_test_writer.cpp: see gwt_test_writer.h.
#include "gwt_test_writer.h"

#include "reader/batch_encoder.h"

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

v1::EventBatch encodeBatch(const BatchContents& in) {
  DecodedBatch batch;
  batch.sequence = in.sequence;
  batch.base_time_ns = in.base_time_ns;
  batch.strings = in.strings;
  batch.api_calls = in.api_calls;
  batch.activities = in.activities;
  batch.nccl_calls = in.nccl_calls;
  batch.markers = in.markers;
  batch.host_ranges = in.host_ranges;
  batch.python_samples = in.python_samples;
  batch.drops = in.drops;
  return encodeEventBatch(batch);
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
