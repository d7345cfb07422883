// reader/recording_reader.cpp: see recording_reader.h.
#include "reader/recording_reader.h"

#include "reader/frame_decoder.h"

#include <gapwatch/recording_format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace gapwatch {
namespace {

// Large enough that a file costs few read() calls, small enough to stay out of the way.
constexpr std::size_t kReadChunkBytes = 1 << 20;

// The magic's first four bytes: "\x89GWT". A file that has them but not the rest was almost
// certainly a recording whose line endings a text-mode transfer rewrote.
constexpr std::size_t kMagicStemBytes = 4;

std::optional<ReadError> checkHeader(std::span<const uint8_t> header, uint32_t& version) {
  if (header.empty()) {
    return ReadError{ReadErrorKind::kEmpty, "empty file (0 bytes): not a gapwatch recording"};
  }
  const std::size_t magic_bytes = std::min(header.size(), sizeof(kFileMagic));
  const bool stem_matches = header.size() >= kMagicStemBytes &&
                            std::memcmp(header.data(), kFileMagic, kMagicStemBytes) == 0;
  if (std::memcmp(header.data(), kFileMagic, magic_bytes) != 0) {
    if (stem_matches) {
      return ReadError{ReadErrorKind::kNotRecording,
                       "not a gapwatch recording: its header is damaged (was it copied in text "
                       "mode? recordings must be copied as binary files)"};
    }
    return ReadError{ReadErrorKind::kNotRecording,
                     "not a gapwatch recording (it does not start with the .gwt file magic)"};
  }
  if (header.size() < kFileHeaderBytes) {
    return ReadError{ReadErrorKind::kNotRecording,
                     "not a gapwatch recording: " + std::to_string(header.size()) +
                         " bytes, shorter than the " + std::to_string(kFileHeaderBytes) +
                         "-byte header"};
  }
  const uint8_t* v = header.data() + sizeof(kFileMagic);
  version = static_cast<uint32_t>(v[0]) | static_cast<uint32_t>(v[1]) << 8 |
            static_cast<uint32_t>(v[2]) << 16 | static_cast<uint32_t>(v[3]) << 24;
  const std::string range = versionRangeText(kMinFileFormatVersion, kFileFormatVersion);
  if (version > kFileFormatVersion) {
    return ReadError{ReadErrorKind::kUnsupportedVersion,
                     "file format version " + std::to_string(version) +
                         " is newer than this gapwatch reads " + range + "; use a newer gapwatch"};
  }
  if (version < kMinFileFormatVersion) {
    return ReadError{ReadErrorKind::kUnsupportedVersion,
                     "file format version " + std::to_string(version) +
                         " is older than this gapwatch reads " + range + "; use an older gapwatch"};
  }
  return std::nullopt;
}

// Fills `buffer` from `source` until it is full or the data ends; returns the bytes read.
std::size_t readFully(ByteSource& source, std::span<uint8_t> buffer) {
  std::size_t filled = 0;
  while (filled < buffer.size()) {
    const std::size_t n = source.read(buffer.subspan(filled));
    if (n == 0) break;
    filled += n;
  }
  return filled;
}

ReadError readFailure(const ByteSource& source, uint64_t offset) {
  if (offset == 0) return ReadError{ReadErrorKind::kCannotRead, "cannot read: " + source.failure()};
  return ReadError{ReadErrorKind::kCannotRead,
                   "cannot read at byte " + std::to_string(offset) + ": " + source.failure()};
}

}  // namespace

std::string versionRangeText(uint32_t oldest, uint32_t newest) {
  if (oldest == newest) return "(" + std::to_string(newest) + ")";
  return "(" + std::to_string(oldest) + " to " + std::to_string(newest) + ")";
}

ReadResult readRecording(ByteSource& source, FrameSink& sink) {
  ReadResult result;
  ReadSummary& summary = result.summary;

  std::array<uint8_t, kFileHeaderBytes> header{};
  const std::size_t header_bytes = readFully(source, header);
  summary.bytes_read = header_bytes;
  if (!source.failure().empty()) {
    result.error = readFailure(source, header_bytes);
    return result;
  }
  uint32_t version = 0;
  if (auto error = checkHeader(std::span(header.data(), header_bytes), version)) {
    result.error = std::move(error);
    return result;
  }
  summary.format_version = version;

  // Offers the sink each frame's bytes first (FrameSink::takeFrameBytes).
  class SinkTaker final : public FrameBytesTaker {
   public:
    explicit SinkTaker(FrameSink& sink) : sink_(sink) {}
    bool takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) override {
      return sink_.takeFrameBytes(frame, offset);
    }

   private:
    FrameSink& sink_;
  } taker(sink);
  FrameDecoder decoder(kFileHeaderBytes);
  decoder.setTaker(&taker);
  std::vector<uint8_t> chunk(kReadChunkBytes);
  for (;;) {
    const std::size_t n = source.read(chunk);
    if (n == 0) break;
    summary.bytes_read += n;
    decoder.append(std::span(chunk.data(), n));
    FrameDecoder::Status status;
    while ((status = decoder.next()) == FrameDecoder::Status::kFrame || status == FrameDecoder::Status::kFrameTaken) {
      ++summary.frames;
      if (status == FrameDecoder::Status::kFrameTaken) continue;  // the sink handled it
      if (auto error = sink.onFrame(decoder.frame(), decoder.frameOffset())) {
        summary.skipped_frames = decoder.framesSkipped();
        result.error = std::move(error);
        return result;
      }
    }
    summary.skipped_frames = decoder.framesSkipped();
    if (status == FrameDecoder::Status::kCorrupt) {
      result.error = ReadError{ReadErrorKind::kCorrupt,
                               "corrupt frame at byte " +
                                   std::to_string(decoder.corruptionOffset()) + ": " +
                                   decoder.corruption() + "; stopped reading there",
                               decoder.corruptionOffset()};
      return result;
    }
  }
  if (!source.failure().empty()) {
    result.error = readFailure(source, summary.bytes_read);
    return result;
  }
  if (decoder.pendingBytes() > 0) {
    summary.truncated = true;
    summary.truncated_at = decoder.wholeFramesEnd();
    summary.dropped_bytes = decoder.pendingBytes();
  }
  return result;
}

ReadResult readRecordingFile(const std::string& path, FrameSink& sink) {
  FileByteSource source(path);
  if (!source.isOpen()) {
    ReadResult result;
    result.error = ReadError{ReadErrorKind::kCannotRead, "cannot open: " + source.failure()};
    return result;
  }
  return readRecording(source, sink);
}

std::string truncationNotice(const ReadSummary& summary) {
  return "recording is truncated: it ends inside a frame at byte " +
         std::to_string(summary.truncated_at) + " (" + std::to_string(summary.dropped_bytes) +
         " bytes dropped); using the " + std::to_string(summary.frames) +
         " whole frames before it";
}

bool hasContentToShow(const ReadResult& result) {
  return !result.error || (result.error->kind == ReadErrorKind::kCorrupt && result.summary.frames > 0);
}

}  // namespace gapwatch
