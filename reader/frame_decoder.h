// reader/frame_decoder.h: splits a recording stream into Frame messages, bytes in, frames out.
//
// A stream is a sequence of `<varint length><Frame>` (docs/recording-format.md). The decoder is
// incremental: feed it whatever bytes arrived (a file chunk, a socket read) and pull whole frames
// out, so the .gwt reader and, later, the collector's socket connections use the same code. It
// holds at most one incomplete frame (<= kMaxFrameBytes) plus the last chunk fed.
//
// Everything it reads is untrusted. It never reads past what it was given, refuses a length over
// kMaxFrameBytes or a length prefix over 5 bytes as soon as it can tell, and stops for good at the
// first corrupt frame (the format gives no way to find the next frame boundary after one).
#pragma once

#include <gapwatch/v1/stream.pb.h>
#include <google/protobuf/arena.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gapwatch {

// Offered the bytes of each whole frame before they are parsed (see FrameDecoder::setTaker).
class FrameBytesTaker {
 public:
  virtual ~FrameBytesTaker() = default;
  // `frame`: the frame's bytes without the length prefix; `offset`: the prefix's stream offset.
  // Returns true when it took the frame (it is then neither parsed nor returned by next()).
  virtual bool takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) = 0;
};

class FrameDecoder {
 public:
  enum class Status {
    kFrame,          // frame() holds the next frame
    kFrameTaken,     // the taker took the next frame (frameOffset() says where it was)
    kNeedMoreBytes,  // the buffered bytes end before the next whole frame
    kCorrupt,        // corruption() says why; every later call returns kCorrupt too
  };

  // `stream_offset`: the offset of the first byte that will be appended, so that offsets in
  // messages are file offsets (a .gwt file's frames begin after its 12-byte header).
  explicit FrameDecoder(uint64_t stream_offset = 0);

  // Offers every later non-empty frame to `taker` (nullptr: none) before parsing it: a reader that
  // decodes some frames faster from their bytes than from the parsed message.
  void setTaker(FrameBytesTaker* taker) { taker_ = taker; }

  // Adds bytes that follow those appended before. Ignored once the stream is corrupt.
  void append(std::span<const uint8_t> bytes);

  // Decodes the next whole frame. Empty frames and frames whose body this reader does not know
  // (a newer recorder's addition) are skipped and counted, never returned.
  Status next();

  // The frame the last kFrame result decoded; valid until the next call to next().
  const v1::Frame& frame() const { return *frame_; }
  // Stream offset of that frame's length prefix.
  uint64_t frameOffset() const { return frame_offset_; }

  // Stream offset just past the last whole frame; the bytes after it are pendingBytes().
  uint64_t wholeFramesEnd() const { return consumed_offset_; }
  // Bytes buffered past wholeFramesEnd(): at the end of the data, a frame cut short.
  std::size_t pendingBytes() const { return buffer_.size() - read_position_; }

  uint64_t framesDecoded() const { return frames_decoded_; }  // taken frames included
  uint64_t framesSkipped() const { return frames_skipped_; }

  // Why the stream is corrupt, and the offset of the bad frame's length prefix.
  const std::string& corruption() const { return corruption_; }
  uint64_t corruptionOffset() const { return corruption_offset_; }

 private:
  Status fail(std::string why);
  // A fresh, empty frame in the arena, dropping the previous one.
  void resetFrame();

  std::vector<uint8_t> buffer_;
  std::size_t read_position_ = 0;  // first byte of buffer_ not yet decoded
  uint64_t consumed_offset_;       // stream offset of buffer_[read_position_]
  // Frames are parsed into an arena: a batch is thousands of small messages, which the heap would
  // allocate and free one by one per frame (protobuf cannot reuse them: Clear() deletes a oneof's
  // message). The arena's first block is ours and grows to what a frame needs, so a steady stream
  // of frames allocates nothing.
  std::unique_ptr<char[]> arena_block_;
  std::size_t arena_block_bytes_ = 0;
  std::unique_ptr<google::protobuf::Arena> arena_;
  v1::Frame* frame_ = nullptr;  // owned by arena_
  FrameBytesTaker* taker_ = nullptr;
  uint64_t frame_offset_ = 0;
  uint64_t frames_decoded_ = 0;
  uint64_t frames_skipped_ = 0;
  std::string corruption_;
  uint64_t corruption_offset_ = 0;
};

}  // namespace gapwatch
