// tests/unit/recording_reader_test.cpp: the .gwt reader follows docs/recording-format.md's reader
// rules: header and magic, version range, frames up to the last whole one, truncation is a
// notice and not an error, corrupt frames stop the read with their offset, and no input crashes.

#include <catch2/catch.hpp>

#include "reader/byte_source.h"
#include "reader/frame_decoder.h"
#include "recording_in_memory.h"
#include "reader/recording_reader.h"
#include "gwt_test_writer.h"

#include <gapwatch/recording_format.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace gapwatch;
using test::GwtBytes;
using test::LoadedRecording;
using test::ProcessRecording;
using test::loadRecording;
using test::loadRecordingFile;

// Remembers the offset and body of every frame it is given.
class FrameCollector final : public FrameSink {
 public:
  std::optional<ReadError> onFrame(const v1::Frame& frame, uint64_t offset) override {
    offsets.push_back(offset);
    bodies.push_back(frame.body_case());
    return std::nullopt;
  }
  std::vector<uint64_t> offsets;
  std::vector<v1::Frame::BodyCase> bodies;
};

ReadResult readBytes(std::string_view bytes, FrameSink& sink) {
  MemoryByteSource source({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  return readRecording(source, sink);
}

ReadResult readBytes(std::string_view bytes) {
  FrameCollector sink;
  return readBytes(bytes, sink);
}

// A small recording of every frame kind: Hello, two batches, Goodbye.
GwtBytes smallRecording() {
  GwtBytes gwt;
  gwt.hello(test::makeHello());
  test::BatchContents first;
  first.base_time_ns = 1'000'000'000;
  first.strings = {{v1::STRING_KIND_KERNEL_NAME, 1, "_Z4stepv"}};
  first.api_calls = {test::apiCall(v1::API_KIND_LAUNCH, 7, 1'000'000'100, 1'000'000'900, false, 1)};
  first.activities = {test::kernel(0, 7, 1'000'001'000, 1'000'003'000, 1, 1)};
  gwt.batch(test::encodeBatch(first));
  test::BatchContents second = first;
  second.sequence = 1;
  second.strings.clear();
  gwt.batch(test::encodeBatch(second));
  v1::Goodbye goodbye;
  goodbye.set_exit_reason(v1::EXIT_REASON_NORMAL);
  goodbye.set_batches(2);
  gwt.goodbye(goodbye);
  return gwt;
}

std::string headerWithVersion(uint32_t version) {
  return GwtBytes(version).bytes();
}

}  // namespace

TEST_CASE("a whole recording is read frame by frame, each at its offset") {
  const GwtBytes gwt = smallRecording();
  FrameCollector sink;
  const ReadResult result = readBytes(gwt.bytes(), sink);

  REQUIRE(result.ok());
  CHECK_FALSE(result.summary.truncated);
  CHECK(result.summary.format_version == kFileFormatVersion);
  CHECK(result.summary.frames == 4);
  CHECK(result.summary.bytes_read == gwt.bytes().size());
  const std::vector<std::size_t>& ends = gwt.boundaries();
  REQUIRE(sink.offsets.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(sink.offsets[i] == ends[i]);
  CHECK(sink.bodies == std::vector<v1::Frame::BodyCase>{v1::Frame::kHello, v1::Frame::kBatch,
                                                         v1::Frame::kBatch, v1::Frame::kGoodbye});
}

TEST_CASE("a recording cut at every byte offset keeps its whole frames and says it is truncated") {
  const GwtBytes gwt = smallRecording();
  const std::string& full = gwt.bytes();
  const std::vector<std::size_t>& boundaries = gwt.boundaries();

  for (std::size_t cut = 0; cut <= full.size(); ++cut) {
    CAPTURE(cut);
    const std::string_view bytes(full.data(), cut);
    const LoadedRecording loaded = [&] {
      MemoryByteSource source({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
      return loadRecording(source);
    }();
    const ReadResult& result = loaded.read;

    if (cut == 0) {
      REQUIRE(result.error);
      CHECK(result.error->kind == ReadErrorKind::kEmpty);
      continue;
    }
    if (cut < kFileHeaderBytes) {
      REQUIRE(result.error);
      CHECK(result.error->kind == ReadErrorKind::kNotRecording);
      continue;
    }
    REQUIRE(result.ok());
    // The last clean end at or before the cut: everything up to it is kept.
    const std::size_t kept_end = *(std::upper_bound(boundaries.begin(), boundaries.end(), cut) - 1);
    const auto whole_frames =
        static_cast<uint64_t>(std::upper_bound(boundaries.begin(), boundaries.end(), cut) -
                              boundaries.begin() - 1);
    CHECK(result.summary.frames == whole_frames);
    CHECK(result.summary.truncated == (cut != kept_end));
    if (result.summary.truncated) {
      CHECK(result.summary.truncated_at == kept_end);
      CHECK(result.summary.dropped_bytes == cut - kept_end);
    }
    CHECK(loaded.recording.health.has_goodbye == (cut == full.size()));
    CHECK(loaded.recording.hello.has_value() == (whole_frames >= 1));
  }
}

TEST_CASE("an empty file is refused as empty") {
  const ReadResult result = readBytes("");
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kEmpty);
  CHECK(result.error->message == "empty file (0 bytes): not a gapwatch recording");
}

TEST_CASE("a file with another magic is not a recording") {
  const ReadResult result = readBytes("{\"traceEvents\": []}\n");
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kNotRecording);
  CHECK_THAT(result.error->message, Catch::Contains("not a gapwatch recording"));
}

TEST_CASE("a file shorter than the header is not a recording, even with the right magic") {
  const ReadResult result = readBytes(headerWithVersion(1).substr(0, 10));
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kNotRecording);
  CHECK_THAT(result.error->message, Catch::Contains("shorter than the 12-byte header"));
}

TEST_CASE("a magic mangled by a text-mode copy is named as a damaged header") {
  std::string bytes = smallRecording().bytes();
  bytes.erase(4, 1);  // "\r\n" -> "\n", as a CRLF-to-LF conversion does
  const ReadResult result = readBytes(bytes);
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kNotRecording);
  CHECK_THAT(result.error->message, Catch::Contains("header is damaged"));
}

TEST_CASE("a newer file format version is refused naming both versions") {
  const uint32_t newer = kFileFormatVersion + 6;
  const ReadResult result = readBytes(headerWithVersion(newer));
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kUnsupportedVersion);
  CHECK(result.error->message == "file format version " + std::to_string(newer) +
                                     " is newer than this gapwatch reads " +
                                     versionRangeText(kMinFileFormatVersion, kFileFormatVersion) +
                                     "; use a newer gapwatch");
}

TEST_CASE("an older file format version is refused naming both versions") {
  const ReadResult result = readBytes(headerWithVersion(kMinFileFormatVersion - 1));
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kUnsupportedVersion);
  CHECK_THAT(result.error->message,
             Catch::Contains("version " + std::to_string(kMinFileFormatVersion - 1) +
                             " is older than this gapwatch reads"));
}

TEST_CASE("version ranges are written as one number or as a range") {
  CHECK(versionRangeText(1, 1) == "(1)");
  CHECK(versionRangeText(1, 2) == "(1 to 2)");
}

TEST_CASE("a frame length over 16 MiB is corrupt and the frames before it are kept") {
  GwtBytes gwt;
  gwt.hello(test::makeHello());
  const std::size_t bad_offset = gwt.bytes().size();
  gwt.raw(test::varint(kMaxFrameBytes + 1)).raw("0123456789");
  FrameCollector sink;
  const ReadResult result = readBytes(gwt.bytes(), sink);

  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kCorrupt);
  CHECK(result.error->offset == bad_offset);
  CHECK_THAT(result.error->message,
             Catch::Contains("at byte " + std::to_string(bad_offset)) &&
                 Catch::Contains("16 MiB frame limit"));
  CHECK(sink.offsets.size() == 1);
}

TEST_CASE("a length prefix that is already over the limit is refused before it ends") {
  GwtBytes gwt;
  gwt.raw("\xff\xff\xff\xff");  // at least 2^28 - 1 bytes, whatever follows
  const ReadResult result = readBytes(gwt.bytes());
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kCorrupt);
  CHECK_THAT(result.error->message, Catch::Contains("at least"));
}

TEST_CASE("a frame of exactly 16 MiB is allowed: cut short, it is truncated, not corrupt") {
  GwtBytes gwt;
  gwt.raw(test::varint(kMaxFrameBytes)).raw("partial");
  const ReadResult result = readBytes(gwt.bytes());
  REQUIRE(result.ok());
  CHECK(result.summary.truncated);
  CHECK(result.summary.truncated_at == kFileHeaderBytes);
}

TEST_CASE("a length prefix longer than 5 bytes is corrupt") {
  GwtBytes gwt;
  gwt.raw(std::string("\x80\x80\x80\x80\x80\x00", 6));
  const ReadResult result = readBytes(gwt.bytes());
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kCorrupt);
  CHECK_THAT(result.error->message, Catch::Contains("longer than 5 bytes"));
}

TEST_CASE("a frame whose bytes do not parse is corrupt at its offset") {
  GwtBytes gwt;
  gwt.hello(test::makeHello());
  const std::size_t bad_offset = gwt.bytes().size();
  gwt.rawFrame("\xff\xff\xff");  // field 31 with wire type 7: not protobuf
  gwt.goodbye(v1::Goodbye());
  const ReadResult result = readBytes(gwt.bytes());
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kCorrupt);
  CHECK(result.error->offset == bad_offset);
  CHECK_THAT(result.error->message, Catch::Contains("does not parse"));
  CHECK(result.summary.frames == 1);
}

TEST_CASE("a string field that is not UTF-8 makes its frame corrupt") {
  // proto3 `string` fields must be UTF-8, and libprotobuf's parser refuses them otherwise: a
  // recorder must send host names, command lines and kernel names as valid UTF-8.
  v1::Hello hello = test::makeHello();
  hello.set_host("caf\xe9");
  GwtBytes gwt;
  gwt.hello(hello);
  const ReadResult result = readBytes(gwt.bytes());
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kCorrupt);
}

TEST_CASE("empty frames and frames of a body this reader does not know are skipped and counted") {
  GwtBytes gwt;
  gwt.hello(test::makeHello());
  gwt.rawFrame("");
  gwt.rawFrame(std::string("\x48\x01", 2));  // field 9, varint 1: a body added by a newer recorder
  gwt.goodbye(v1::Goodbye());
  FrameCollector sink;
  const ReadResult result = readBytes(gwt.bytes(), sink);
  REQUIRE(result.ok());
  CHECK(result.summary.frames == 2);
  CHECK(result.summary.skipped_frames == 2);
  CHECK(sink.bodies == std::vector<v1::Frame::BodyCase>{v1::Frame::kHello, v1::Frame::kGoodbye});
}

TEST_CASE("the frame decoder finds the same frames when bytes arrive one at a time") {
  const GwtBytes gwt = smallRecording();
  const std::span<const uint8_t> frames = gwt.span().subspan(kFileHeaderBytes);
  FrameDecoder decoder(kFileHeaderBytes);
  std::vector<uint64_t> offsets;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    decoder.append(frames.subspan(i, 1));
    FrameDecoder::Status status;
    while ((status = decoder.next()) == FrameDecoder::Status::kFrame) {
      offsets.push_back(decoder.frameOffset());
    }
    REQUIRE(status == FrameDecoder::Status::kNeedMoreBytes);
  }
  CHECK(decoder.pendingBytes() == 0);
  CHECK(decoder.wholeFramesEnd() == gwt.bytes().size());
  CHECK(offsets == std::vector<uint64_t>(gwt.boundaries().begin(), gwt.boundaries().end() - 1));
}

TEST_CASE("a source that fails mid-read is reported as unreadable at its offset") {
  class FailingSource final : public ByteSource {
   public:
    explicit FailingSource(std::string bytes) : bytes_(std::move(bytes)) {}
    std::size_t read(std::span<uint8_t> buffer) override {
      if (done_) {
        failure_ = "Input/output error";
        return 0;
      }
      done_ = true;
      const std::size_t n = std::min(buffer.size(), bytes_.size());
      std::copy_n(bytes_.begin(), n, buffer.begin());
      return n;
    }
    const std::string& failure() const override { return failure_; }

   private:
    std::string bytes_;
    bool done_ = false;
    std::string failure_;
  };
  FailingSource source(smallRecording().bytes().substr(0, kFileHeaderBytes));
  FrameCollector sink;
  const ReadResult result = readRecording(source, sink);
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kCannotRead);
  CHECK(result.error->message == "cannot read at byte 12: Input/output error");
}

TEST_CASE("a file that cannot be opened says why") {
  FrameCollector sink;
  const ReadResult result = readRecordingFile("/nonexistent/gapwatch/run.gwt", sink);
  REQUIRE(result.error);
  CHECK(result.error->kind == ReadErrorKind::kCannotRead);
  CHECK(result.error->message == "cannot open: No such file or directory");
}

TEST_CASE("a recording read from a file equals the same bytes read from memory") {
  const GwtBytes gwt = smallRecording();
  char path[] = "/tmp/gapwatch-reader-test-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  gwt.writeTo(path);
  const LoadedRecording from_file = loadRecordingFile(path);
  std::remove(path);
  MemoryByteSource source(gwt.span());
  const LoadedRecording from_memory = loadRecording(source);
  REQUIRE(from_file.read.ok());
  CHECK(from_file.read.summary.frames == from_memory.read.summary.frames);
  CHECK(from_file.recording.activities == from_memory.recording.activities);
  CHECK(from_file.recording.api_calls == from_memory.recording.api_calls);
}

TEST_CASE("random damage to a recording never crashes the reader") {
  // A small stand-in for the fuzzer: flip, insert and delete bytes of a valid recording.
  const std::string original = smallRecording().bytes();
  std::mt19937 random(20240613);
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = original;
    const int edits = 1 + static_cast<int>(random() % 8);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const std::size_t at = random() % bytes.size();
      switch (random() % 3) {
        case 0:
          bytes[at] = static_cast<char>(random());
          break;
        case 1:
          bytes.insert(at, 1, static_cast<char>(random()));
          break;
        default:
          bytes.erase(at, 1);
          break;
      }
    }
    MemoryByteSource source({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    const LoadedRecording loaded = loadRecording(source);
    // Whatever happened, the summary is consistent with the input.
    CHECK(loaded.read.summary.bytes_read <= bytes.size());
    if (loaded.read.summary.truncated) {
      CHECK(loaded.read.summary.truncated_at + loaded.read.summary.dropped_bytes == bytes.size());
    }
  }
}
