// tests/fuzz/recording_reader_fuzz.cpp: libFuzzer target for reader/recording_reader.* (a whole
// .gwt file from bytes, read with readRecording into a StreamDecoder, as `gapwatch report` reads).
//
// The bytes are read twice: from memory in one piece with the StreamDecoder's batch fast path,
// and through a source that returns them a few bytes at a time (sizes drawn from the input's
// hash) with the fast path off (every frame parsed by libprotobuf). Both reads must give the same
// result (error kind, message and offset; the summary but bytes_read, which after an error depends
// on how much the source had handed over), the same events, string table and stream health. The
// result must also be self-consistent: an error message is one line, a truncated read drops the
// file's tail, a clean read counts every byte.

#include "fuzz_check.h"
#include "trickle_source.h"

#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"
#include "stream_compare.h"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace gapwatch;
using test::healthFields;
using test::tableOf;

// A digest of everything a visitor is handed, so two reads compare without keeping every event.
class Digest final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t offset) override { add("H" + hello.SerializeAsString(), offset); }
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override { add("G" + goodbye.SerializeAsString(), offset); }
  void onBatch(const DecodedBatch& b, const StringTable& strings) override {
    add("B", b.frame_offset);
    add("", b.sequence);
    add("", b.base_time_ns);
    add("", strings.size());
    for (const auto& s : b.strings) add(s.text, s.id * 64 + static_cast<uint64_t>(s.kind));
    for (const auto& e : b.api_calls) add("a", e.start_ns ^ e.end_ns * 3 ^ e.correlation_id * 7 ^ e.thread_id * 11 ^ e.bytes * 13);
    for (const auto& e : b.activities) add("d", e.start_ns ^ e.end_ns * 3 ^ e.correlation_id * 7 ^ e.stream * 11 ^ e.name_id * 13);
    for (const auto& e : b.nccl_calls) add("n", e.start_ns ^ e.end_ns * 3 ^ e.thread_id * 7 ^ e.bytes * 11);
    for (const auto& e : b.markers) add("m", e.time_ns ^ e.step * 3 ^ e.name_id * 7);
    for (const auto& e : b.python_samples)
      add("p", e.time_ns ^ e.period_ns * 3 ^ e.python_stack_id * 7 ^ e.thread_id * 11);
    for (const auto& d : b.drops) add("x", d.id ^ d.dropped * 3);
  }
  uint64_t value = 1469598103934665603ull;
  uint64_t calls = 0;

 private:
  void add(const std::string& text, uint64_t number) {
    ++calls;
    for (unsigned char c : text) value = (value ^ c) * 1099511628211ull;
    value = (value ^ number) * 1099511628211ull;
  }
};

// Passes parsed frames on, never the bytes: the StreamDecoder without its fast path.
class ParsedOnly final : public FrameSink {
 public:
  explicit ParsedOnly(StreamDecoder& decoder) : decoder_(decoder) {}
  std::optional<ReadError> onFrame(const v1::Frame& frame, uint64_t offset) override {
    return decoder_.onFrame(frame, offset);
  }

 private:
  StreamDecoder& decoder_;
};

// bytes_read is left out: after an error it depends on how much the source had handed over.
auto summaryFields(const ReadSummary& s) {
  return std::make_tuple(s.format_version, s.frames, s.skipped_frames, s.truncated, s.truncated_at,
                         s.dropped_bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static google::protobuf::LogSilencer quiet;  // libprotobuf logs every string that is not UTF-8
  const std::span<const uint8_t> bytes(data, size);

  Digest fast_digest;
  StreamDecoder fast(fast_digest);
  MemoryByteSource memory(bytes);
  const ReadResult fast_result = readRecording(memory, fast);

  Digest parsed_digest;
  StreamDecoder parsed(parsed_digest);
  ParsedOnly parsed_sink(parsed);
  fuzz::TrickleSource trickle(bytes, gapwatch::fuzz::seedOf(bytes));
  const ReadResult parsed_result = readRecording(trickle, parsed_sink);

  FUZZ_CHECK(summaryFields(fast_result.summary) == summaryFields(parsed_result.summary), "different summaries");
  FUZZ_CHECK(fast_result.ok() == parsed_result.ok(), "one read failed, the other did not");
  if (!fast_result.ok()) {
    const ReadError& a = *fast_result.error;
    const ReadError& b = *parsed_result.error;
    FUZZ_CHECK(a.kind == b.kind && a.offset == b.offset, "different errors");
    // A length prefix over the frame limit is refused as soon as the bytes so far prove it, so
    // its message says "frame length of at least N" or "frame length N" depending on where the
    // source's reads ended (both true); every other message must be the same.
    const auto tooLong = [](const std::string& m) { return m.find("is over the 16 MiB frame limit") != std::string::npos; };
    FUZZ_CHECK(a.message == b.message || (a.kind == ReadErrorKind::kCorrupt && tooLong(a.message) && tooLong(b.message)),
               "different error messages");
    FUZZ_CHECK(!a.message.empty() && a.message.find('\n') == std::string::npos, "an error is one line");
    FUZZ_CHECK(a.offset <= size, "an error's offset is inside the file");
  }
  FUZZ_CHECK(fast_digest.calls == parsed_digest.calls && fast_digest.value == parsed_digest.value,
             "the visitor saw different content");
  FUZZ_CHECK(healthFields(fast.health()) == healthFields(parsed.health()), "different stream health");
  FUZZ_CHECK(tableOf(fast.strings()) == tableOf(parsed.strings()), "different string tables");

  const ReadSummary& s = fast_result.summary;
  FUZZ_CHECK(s.bytes_read <= size, "read more bytes than there are");
  if (fast_result.ok()) {
    FUZZ_CHECK(s.bytes_read == size, "a clean read reads every byte");
    if (s.truncated) {
      FUZZ_CHECK(s.dropped_bytes > 0 && s.truncated_at + s.dropped_bytes == size, "truncation drops the tail");
      FUZZ_CHECK(truncationNotice(s).find('\n') == std::string::npos, "the notice is one line");
    }
  }
  (void)hasContentToShow(fast_result);
  return 0;
}
