// tests/fuzz/kineto_trace_fuzz.cpp: libFuzzer target for reader/kineto_trace.* (a PyTorch profiler
// trace from bytes, through reader/json_splitter.* and reader/gzip_source.*, as `gapwatch report`
// reads a trace file).
//
// The bytes are read three ways: from memory in one piece; through a source that returns them a
// few bytes at a time (sizes drawn from the input's hash), so that every block boundary of the
// splitter falls everywhere; and gzipped first (in two members when the input's hash says so),
// through the streaming inflate. All three may open the trace again (the second, top-level pass
// for metadata after traceEvents). They must give the same result: the same error message, or the
// same events, Hello and Goodbye. An error is one line that starts "Kineto trace: ", and an error
// leaves nothing to show. simdjson's DOM parser, given the whole input, is the oracle for the
// splitter: when it finds a JSON object with one traceEvents array, a read that succeeds counted
// as many elements, and a read that fails did not blame the JSON's structure.

#include "fuzz_check.h"
#include "trickle_source.h"

#include "reader/kineto_trace.h"

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace gapwatch;

// A digest of everything a visitor is handed, so that reads compare without keeping every event.
class Digest final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t offset) override { add("H" + hello.SerializeAsString(), offset); }
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override { add("G" + goodbye.SerializeAsString(), offset); }
  void onBatch(const DecodedBatch& b, const StringTable& strings) override {
    add("B", b.sequence);
    add("", b.base_time_ns);
    add("", strings.size());
    for (const auto& s : b.strings) add(s.text, s.id * 64 + static_cast<uint64_t>(s.kind));
    for (const auto& e : b.api_calls) {
      add("a", e.start_ns ^ e.end_ns * 3 ^ e.correlation_id * 7 ^ e.thread_id * 11 ^ e.kind * 13 ^ e.cbid * 17);
      FUZZ_CHECK(e.end_ns >= e.start_ns, "a call ends before it starts");
    }
    for (const auto& e : b.activities) {
      add("d", e.start_ns ^ e.end_ns * 3 ^ e.correlation_id * 7 ^ e.stream * 11 ^ e.name_id * 13 ^ e.kind * 17);
      FUZZ_CHECK(e.end_ns >= e.start_ns, "an activity ends before it starts");
    }
    for (const auto& e : b.markers) add("m", e.time_ns ^ e.step * 3 ^ e.name_id * 7 ^ e.kind * 11);
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

std::vector<uint8_t> gzip(std::span<const uint8_t> text) {
  z_stream z{};
  FUZZ_CHECK(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
  std::vector<uint8_t> out(deflateBound(&z, text.size()) + 64);
  z.next_in = const_cast<Bytef*>(text.data());
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct Outcome {
  KinetoReadResult result;
  Digest digest;
};

// Reads through `make()`'s source, with the events' sort held to a few in memory so that the
// fuzzer reaches the sorted runs on disk and their merge (kineto_event_sorter.h).
template <typename Make>
void readWith(Make make, Outcome& out) {
  KinetoReadOptions options;
  options.sort_max_in_memory = 7;
  std::unique_ptr<ByteSource> source = make();
  out.result = readKinetoTrace(*source, out.digest, options);
  const KinetoReadResult& r = out.result;
  if (r.read.error) {
    const std::string& m = r.read.error->message;
    FUZZ_CHECK(m.rfind("Kineto trace: ", 0) == 0, "an error starts with Kineto trace:");
    FUZZ_CHECK(m.find('\n') == std::string::npos, "an error is one line");
    FUZZ_CHECK(r.read.summary.frames == 0 && !hasContentToShow(r.read), "an error leaves nothing to show");
  } else {
    FUZZ_CHECK(r.health.has_hello && r.health.has_goodbye, "a clean read has Hello and Goodbye");
  }
}

bool sameOutcome(const Outcome& a, const Outcome& b) {
  if (a.result.read.ok() != b.result.read.ok()) return false;
  if (!a.result.read.ok()) return a.result.read.error->message == b.result.read.error->message;
  const KinetoCounts& x = a.result.counts;
  const KinetoCounts& y = b.result.counts;
  return a.digest.calls == b.digest.calls && a.digest.value == b.digest.value && x.trace_events == y.trace_events &&
         x.kernels == y.kernels && x.api_calls == y.api_calls && x.steps == y.steps;
}

// The elements of the input's one traceEvents array, when simdjson's DOM parser finds the input
// to be a JSON object holding exactly one (-1 otherwise).
int64_t domEventCount(std::span<const uint8_t> bytes) {
  static simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(reinterpret_cast<const char*>(bytes.data()), bytes.size()).get(root) != simdjson::SUCCESS) return -1;
  simdjson::dom::object top;
  if (root.get_object().get(top) != simdjson::SUCCESS) return -1;
  int64_t count = -1;
  int keys = 0;
  for (auto field : top) {
    if (field.key != "traceEvents") continue;
    ++keys;
    simdjson::dom::array events;
    if (field.value.get_array().get(events) != simdjson::SUCCESS) return -1;
    count = static_cast<int64_t>(events.size());
  }
  return keys == 1 ? count : -1;
}

// A message that says the JSON itself is broken (which valid JSON must never get).
bool blamesStructure(const std::string& m) {
  for (const char* what : {"cut short", "expected ", "unexpected character", "brackets do not match", "trailing data",
                           "malformed JSON", "not an array"}) {
    if (m.find(what) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const uint64_t seed = gapwatch::fuzz::seedOf(bytes);

  Outcome whole;
  readWith([bytes]() { return std::make_unique<MemoryByteSource>(bytes); }, whole);

  const int64_t dom_events = domEventCount(bytes);
  if (dom_events >= 0) {
    if (whole.result.read.ok()) {
      FUZZ_CHECK(static_cast<int64_t>(whole.result.counts.trace_events) == dom_events, "element count differs from simdjson's");
    } else {
      FUZZ_CHECK(!blamesStructure(whole.result.read.error->message), "valid JSON refused as malformed");
    }
  }

  Outcome trickled;
  readWith([bytes, seed]() { return std::make_unique<fuzz::TrickleSource>(bytes, seed); }, trickled);
  FUZZ_CHECK(sameOutcome(whole, trickled), "a read in small pieces differs from one in one piece");

  // Gzipped, the same JSON must give the same answer (a text that is not a JSON object is refused
  // with another message, and one that is gzip already is not wrapped again).
  const bool json_object = looksLikeKinetoTrace(bytes.first(std::min<std::size_t>(size, 256))) && !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b);
  if (json_object) {
    std::vector<uint8_t> zipped;
    if (seed & 1) {
      zipped = gzip(bytes);
    } else {
      const std::size_t half = size / 2;
      zipped = gzip(bytes.first(half));
      const std::vector<uint8_t> rest = gzip(bytes.subspan(half));
      zipped.insert(zipped.end(), rest.begin(), rest.end());
    }
    const std::span<const uint8_t> z(zipped);
    Outcome inflated;
    readWith([z, seed]() { return std::make_unique<fuzz::TrickleSource>(z, seed >> 1); }, inflated);
    FUZZ_CHECK(sameOutcome(whole, inflated), "the gzipped trace reads differently");
  }
  return 0;
}
