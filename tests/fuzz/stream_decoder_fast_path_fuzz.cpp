// tests/fuzz/stream_decoder_fast_path_fuzz.cpp: libFuzzer target for the batch fast path of
// reader/stream_decoder.cpp (StreamDecoder::takeFrameBytes, which decodes batch frames without
// libprotobuf), checked against libprotobuf's parse of the same bytes.
//
// Input: frames as `<varint length><frame bytes>` (or a whole .gwt file, whose header is
// skipped); a length past the end takes what is left. Unlike the frame decoder, nothing stops at a
// frame libprotobuf refuses: every frame goes to two StreamDecoders, one offered the bytes first
// (then, if it leaves them, the parsed frame), the other only the parsed frame, as
// tests/unit/stream_decoder_fast_path_test.cpp does with generated frames. The fast path must
// never take a frame libprotobuf refuses or skips, and both decoders must produce the same
// batches, string tables, Hello and Goodbye calls, errors and stream health.

#include "fuzz_check.h"

#include "reader/stream_decoder.h"
#include "stream_compare.h"

#include <gapwatch/v1/stream.pb.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace gapwatch;
using test::healthFields;
using test::tableOf;
using test::sameBatch;

// Keeps what a decoder passed on: the log of Hello and Goodbye calls, the latest batch, and the
// table size after each batch (the number of batches is bounded by the input's size).
class Capture final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t offset) override {
    log.push_back("hello " + hello.SerializeAsString() + " " + std::to_string(offset));
  }
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override {
    log.push_back("goodbye " + goodbye.SerializeAsString() + " " + std::to_string(offset));
  }
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override {
    last = batch;
    ++batches;
    table_sizes.push_back(strings.size());
  }
  std::vector<std::string> log;
  DecodedBatch last;
  std::size_t batches = 0;
  std::vector<std::size_t> table_sizes;
};

// The next `<varint length><bytes>` of `input` from `position`; false at the end.
bool nextFrame(std::span<const uint8_t> input, std::size_t& position, std::span<const uint8_t>& frame) {
  if (position >= input.size()) return false;
  uint64_t length = 0;
  for (unsigned shift = 0; position < input.size() && shift < 64; shift += 7) {
    const uint8_t byte = input[position++];
    length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) break;
  }
  const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(length, input.size() - position));
  frame = input.subspan(position, n);
  position += n;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static google::protobuf::LogSilencer quiet;  // libprotobuf logs every string that is not UTF-8
  uint64_t stream_offset = 0;
  const std::span<const uint8_t> input = gapwatch::fuzz::framesOf(std::span(data, size), stream_offset);

  Capture fast_out, parsed_out;
  StreamDecoder fast(fast_out), parsed(parsed_out);
  std::size_t position = 0;
  std::span<const uint8_t> bytes;
  while (true) {
    const uint64_t offset = stream_offset + position;
    if (!nextFrame(input, position, bytes)) break;

    v1::Frame frame;
    const bool parses = frame.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    // What the frame decoder would hand on: it skips empty frames and frames with no known body.
    const bool delivered = parses && !bytes.empty() && frame.body_case() != v1::Frame::BODY_NOT_SET;
    std::optional<ReadError> parsed_error;
    if (delivered) parsed_error = parsed.onFrame(frame, offset);

    const bool took = !bytes.empty() && fast.takeFrameBytes(bytes, offset);
    if (took) {
      FUZZ_CHECK(delivered, "the fast path took a frame libprotobuf refuses or skips");
      FUZZ_CHECK(frame.body_case() == v1::Frame::kBatch, "the fast path took a frame that is not a batch");
      FUZZ_CHECK(!parsed_error, "the fast path took a frame the parsed path refuses");
    } else if (delivered) {
      const std::optional<ReadError> fast_error = fast.onFrame(frame, offset);
      FUZZ_CHECK(fast_error.has_value() == parsed_error.has_value(), "the two decoders disagree on an error");
      if (fast_error) FUZZ_CHECK(fast_error->message == parsed_error->message, "different error messages");
    }
    FUZZ_CHECK(fast_out.batches == parsed_out.batches, "different number of batches");
    if (fast_out.batches > 0) FUZZ_CHECK(sameBatch(fast_out.last, parsed_out.last), "different batch contents");
    FUZZ_CHECK(fast_out.table_sizes == parsed_out.table_sizes, "different string table sizes");
    FUZZ_CHECK(healthFields(fast.health()) == healthFields(parsed.health()), "different stream health");
  }
  FUZZ_CHECK(fast_out.log == parsed_out.log, "different Hello or Goodbye calls");
  FUZZ_CHECK(tableOf(fast.strings()) == tableOf(parsed.strings()), "different string tables");
  return 0;
}
