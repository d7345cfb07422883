// reader/recording_reader.h: reads a .gwt recording: checks its header, then hands every whole
// frame to a FrameSink.
//
// The rules are docs/recording-format.md's ".gwt files" and "Versions" sections:
//   - fewer than 12 bytes or another magic: not a recording (an empty file says so by name);
//   - a file format version outside [kMinFileFormatVersion, kFileFormatVersion]: refused, naming
//     both the file's version and the range this build reads;
//   - frames up to the last whole one. Data that ends inside a frame is not an error: the result
//     says `truncated`, where, and how many bytes were dropped (a killed process leaves such
//     files). A corrupt frame stops reading with an error naming its offset; the frames before
//     it have been delivered.
// Error messages never include the file's name: callers print "<name>: <message>".
#pragma once

#include "reader/byte_source.h"

#include <gapwatch/v1/stream.pb.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace gapwatch {

enum class ReadErrorKind {
  kCannotRead,          // the file could not be opened or read (the system's reason)
  kEmpty,               // zero bytes
  kNotRecording,        // too short for the header, or another magic
  kUnsupportedVersion,  // file format or wire protocol version outside what this build reads
  kCorrupt,             // a frame that breaks the format; the frames before it were delivered
};

struct ReadError {
  ReadErrorKind kind = ReadErrorKind::kCorrupt;
  std::string message;  // one line, without the file name
  uint64_t offset = 0;  // kCorrupt: byte offset of the bad frame; else 0
};

// What a read got through, error or not.
struct ReadSummary {
  uint32_t format_version = 0;  // 0 until a header was read
  uint64_t bytes_read = 0;      // header included
  uint64_t frames = 0;          // whole frames handed to the sink
  uint64_t skipped_frames = 0;  // empty frames and frames of a body this reader does not know
  // The data ended inside a frame (or its length prefix): everything from `truncated_at` on,
  // `dropped_bytes` bytes, was left out.
  bool truncated = false;
  uint64_t truncated_at = 0;
  uint64_t dropped_bytes = 0;
};

struct ReadResult {
  ReadSummary summary;
  std::optional<ReadError> error;

  bool ok() const { return !error.has_value(); }
};

// Receives the frames of a stream in order.
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // `offset`: byte offset of the frame's length prefix. Return an error to stop reading (for
  // example a Hello with a wire protocol version this build does not read), nullopt to go on.
  virtual std::optional<ReadError> onFrame(const v1::Frame& frame, uint64_t offset) = 0;
  // An optional fast path: the bytes of a whole, non-empty frame (without its length prefix)
  // before libprotobuf parses them. Return true after handling the frame exactly as onFrame would
  // have handled it parsed (it is then not parsed, nor passed to onFrame); false to have it parsed
  // and passed to onFrame as usual. A sink may take only frames that parse, and must leave the
  // rest (anything it does not fully understand) to onFrame. Cannot stop the read.
  virtual bool takeFrameBytes(std::span<const uint8_t> /*frame*/, uint64_t /*offset*/) { return false; }
};

// Reads a whole recording from `source`. Never throws for anything the bytes contain.
ReadResult readRecording(ByteSource& source, FrameSink& sink);
// The same, from the file at `path`.
ReadResult readRecordingFile(const std::string& path, FrameSink& sink);

// The one notice line for a truncated read ("recording is truncated: ..."), without the file name.
std::string truncationNotice(const ReadSummary& summary);

// Whether what was read is worth showing: a clean or truncated read, or the frames before a
// corrupt one.
bool hasContentToShow(const ReadResult& result);

// "(1)" or "(1 to 2)": the versions a reader accepts, as messages name them.
std::string versionRangeText(uint32_t oldest, uint32_t newest);

}  // namespace gapwatch
