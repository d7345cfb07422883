// tests/fuzz/frame_decoder_fuzz.cpp: libFuzzer target for reader/frame_decoder.* (FrameDecoder).
//
// Input: a stream of `<varint length><Frame>` (or a whole .gwt file, whose header is skipped).
// The bytes are decoded three ways: appended at once; appended in chunks of random sizes (1 byte
// to a few KiB, drawn from the input's hash), pulling frames whenever more bytes are needed; and
// in chunks with a FrameBytesTaker that takes every other non-empty frame. All three must agree on
// every frame (its offset and bytes) and on how the stream ends: corrupt at the same offset, or
// the same whole-frame end and pending bytes. Offsets must rise and stay inside the input.

#include "fuzz_check.h"

#include "reader/frame_decoder.h"

#include <google/protobuf/stubs/logging.h>

#include <string>
#include <vector>

namespace {

using gapwatch::FrameDecoder;

struct Outcome {
  std::vector<std::pair<uint64_t, std::string>> frames;  // offset, serialized frame or taken bytes
  bool corrupt = false;
  uint64_t corruption_offset = 0;
  uint64_t whole_frames_end = 0;
  std::size_t pending = 0;
  uint64_t decoded = 0;
  uint64_t skipped = 0;
};

class AlternateTaker final : public gapwatch::FrameBytesTaker {
 public:
  bool takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) override {
    FUZZ_CHECK(!frame.empty(), "a taker is offered only non-empty frames");
    take_ = !take_;
    if (!take_) return false;
    // What the frame's bytes parse to, if they do: the same text the other runs record.
    gapwatch::v1::Frame parsed;
    if (!parsed.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
      take_ = false;  // it must be refused by the decoder then, as in the other runs
      return false;
    }
    if (parsed.body_case() == gapwatch::v1::Frame::BODY_NOT_SET) {
      take_ = false;  // the other runs skip it: leave it to the decoder, which does too
      return false;
    }
    taken.emplace_back(offset, parsed.SerializeAsString());
    return true;
  }
  std::vector<std::pair<uint64_t, std::string>> taken;

 private:
  bool take_ = false;
};

// Drains the decoder; false when it needs more bytes.
bool drain(FrameDecoder& decoder, Outcome& out, AlternateTaker* taker, uint64_t stream_end) {
  for (;;) {
    const FrameDecoder::Status status = decoder.next();
    switch (status) {
      case FrameDecoder::Status::kFrame:
      case FrameDecoder::Status::kFrameTaken: {
        const uint64_t offset = decoder.frameOffset();
        FUZZ_CHECK(out.frames.empty() || offset > out.frames.back().first, "frame offsets rise");
        FUZZ_CHECK(offset < stream_end, "a frame starts inside the stream");
        FUZZ_CHECK(decoder.wholeFramesEnd() <= stream_end, "frames end inside the stream");
        if (status == FrameDecoder::Status::kFrame) {
          FUZZ_CHECK(decoder.frame().body_case() != gapwatch::v1::Frame::BODY_NOT_SET, "empty frames are skipped");
          out.frames.emplace_back(offset, decoder.frame().SerializeAsString());
        } else {
          FUZZ_CHECK(taker && !taker->taken.empty() && taker->taken.back().first == offset,
                     "kFrameTaken follows a take");
          out.frames.push_back(taker->taken.back());
        }
        break;
      }
      case FrameDecoder::Status::kNeedMoreBytes:
        return false;
      case FrameDecoder::Status::kCorrupt:
        FUZZ_CHECK(!decoder.corruption().empty(), "a corrupt stream says why");
        FUZZ_CHECK(decoder.next() == FrameDecoder::Status::kCorrupt, "corruption is for good");
        return true;
    }
  }
}

void finish(const FrameDecoder& decoder, Outcome& out) {
  out.corrupt = !decoder.corruption().empty();
  out.corruption_offset = decoder.corruptionOffset();
  out.whole_frames_end = decoder.wholeFramesEnd();
  out.pending = decoder.pendingBytes();
  out.decoded = decoder.framesDecoded();
  out.skipped = decoder.framesSkipped();
}

Outcome decodeAtOnce(std::span<const uint8_t> bytes, uint64_t offset) {
  Outcome out;
  FrameDecoder decoder(offset);
  decoder.append(bytes);
  drain(decoder, out, nullptr, offset + bytes.size());
  finish(decoder, out);
  return out;
}

Outcome decodeInChunks(std::span<const uint8_t> bytes, uint64_t offset, uint64_t seed, AlternateTaker* taker) {
  Outcome out;
  FrameDecoder decoder(offset);
  decoder.setTaker(taker);
  gapwatch::fuzz::SplitMix rng(seed);
  std::size_t position = 0;
  bool done = false;
  while (!done && position < bytes.size()) {
    const uint64_t r = rng.next();
    const std::size_t limit = (r & 3) == 0 ? 1 : (r & 3) == 1 ? 16 : (r & 3) == 2 ? 300 : 5000;
    const std::size_t n = std::min<std::size_t>(bytes.size() - position, 1 + (r >> 8) % limit);
    decoder.append(bytes.subspan(position, n));
    position += n;
    done = drain(decoder, out, taker, offset + bytes.size());
  }
  finish(decoder, out);
  return out;
}

void checkSame(const Outcome& a, const Outcome& b, const char* what) {
  FUZZ_CHECK(a.frames == b.frames, what);
  FUZZ_CHECK(a.corrupt == b.corrupt, what);
  FUZZ_CHECK(a.decoded == b.decoded, what);
  FUZZ_CHECK(a.skipped == b.skipped, what);
  if (a.corrupt) {
    FUZZ_CHECK(a.corruption_offset == b.corruption_offset, what);
  } else {
    FUZZ_CHECK(a.whole_frames_end == b.whole_frames_end, what);
    FUZZ_CHECK(a.pending == b.pending, what);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static google::protobuf::LogSilencer quiet;  // libprotobuf logs every string that is not UTF-8
  uint64_t offset = 0;
  const std::span<const uint8_t> bytes = gapwatch::fuzz::framesOf(std::span(data, size), offset);
  const uint64_t seed = gapwatch::fuzz::seedOf(bytes);

  const Outcome once = decodeAtOnce(bytes, offset);
  FUZZ_CHECK(once.frames.size() == once.decoded, "every decoded frame was returned");
  if (!once.corrupt) {
    FUZZ_CHECK(once.whole_frames_end + once.pending == offset + bytes.size(), "every byte is accounted for");
  } else {
    FUZZ_CHECK(once.corruption_offset >= offset && once.corruption_offset < offset + bytes.size(),
               "the corrupt frame is inside the stream");
  }
  checkSame(once, decodeInChunks(bytes, offset, seed, nullptr), "chunked decode differs from one-shot decode");
  AlternateTaker taker;
  checkSame(once, decodeInChunks(bytes, offset, seed ^ 1, &taker), "decode with a taker differs");
  return 0;
}
