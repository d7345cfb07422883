// tests/unit/gwt_test_writer.h: builds .gwt recordings byte by byte for the reader's tests and the
// CLI's fixture files, with libprotobuf doing the serialising.
//
// GwtBytes writes the file header and `<varint length><Frame>` frames and remembers where every
// frame ends, so tests can cut a file at any offset and know what a reader must keep.
// encodeBatch() is the recorder's side of the delta rules (events.proto), from absolute events
// (reader/batch_encoder.h, which `gapwatch import` writes with too).
#pragma once

#include "reader/events.h"

#include <gapwatch/recording_format.h>
#include <gapwatch/v1/stream.pb.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gapwatch::test {

class GwtBytes {
 public:
  // The 12-byte header with `format_version`.
  explicit GwtBytes(uint32_t format_version = kFileFormatVersion);

  GwtBytes& frame(const v1::Frame& frame);
  GwtBytes& hello(const v1::Hello& hello);
  GwtBytes& batch(const v1::EventBatch& batch);
  GwtBytes& goodbye(const v1::Goodbye& goodbye);
  // A length prefix and `body`, whatever it holds.
  GwtBytes& rawFrame(std::string_view body);
  // Bytes as they are: a bad length prefix, garbage.
  GwtBytes& raw(std::string_view bytes);

  const std::string& bytes() const { return bytes_; }
  std::span<const uint8_t> span() const {
    return {reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size()};
  }
  // Offsets just past the header and past each frame: the places a file may end cleanly.
  const std::vector<std::size_t>& boundaries() const { return boundaries_; }

  // Writes the bytes to `path`; throws std::runtime_error if it cannot.
  void writeTo(const std::string& path) const;

 private:
  std::string bytes_;
  std::vector<std::size_t> boundaries_;
};

// A protobuf base-128 varint.
std::string varint(uint64_t value);

// A Hello as a recorder on a machine with CUPTI writes it: wire version current, pid, host, the
// runtime-callback and activity probes, start times.
v1::Hello makeHello(uint32_t pid = 4242, uint64_t start_time_ns = 1'000'000'000);

// The contents of one batch with absolute values, and its wire form.
struct BatchContents {
  uint64_t sequence = 0;
  uint64_t base_time_ns = 0;
  std::vector<StringDefinition> strings;
  std::vector<ApiCallEvent> api_calls;
  std::vector<DeviceActivityEvent> activities;
  std::vector<NcclCallEvent> nccl_calls;
  std::vector<MarkerEvent> markers;
  std::vector<HostRangeEvent> host_ranges;
  std::vector<PythonSampleEvent> python_samples;
  std::vector<DropCount> drops;
};
// Applies the delta rules as a recorder does: running time and correlation deltas per list, and
// thread_id 0 when the thread is the same as the previous element's.
v1::EventBatch encodeBatch(const BatchContents& contents);

// Shorthands for the events the tests use most.
DeviceActivityEvent kernel(uint32_t device, uint64_t stream, uint64_t start_ns, uint64_t end_ns,
                           uint64_t correlation_id = 0, uint32_t name_id = 0);
ApiCallEvent apiCall(v1::ApiKind kind, uint32_t thread_id, uint64_t start_ns, uint64_t end_ns,
                     bool blocked = false, uint64_t correlation_id = 0);

}  // namespace gapwatch::test
