// reader/frame_decoder.cpp: see frame_decoder.h.
#include "reader/frame_decoder.h"

#include <gapwatch/recording_format.h>

#include <algorithm>
#include <utility>

namespace gapwatch {
namespace {

// A varint length prefix never needs more bytes than this for a 32-bit value; the format refuses
// longer ones rather than reading on for up to 10 bytes as protobuf would.
constexpr std::size_t kMaxLengthPrefixBytes = 5;

// The arena's own first block: starts small (most streams are short), grows up to the cap with the
// largest frame seen (a 16 MiB frame may take a few times that parsed; past the cap the arena
// takes further blocks from the heap, and gives them back on the next frame).
constexpr std::size_t kFirstArenaBlockBytes = 64 * 1024;
constexpr std::size_t kMaxArenaBlockBytes = 32 * 1024 * 1024;

}  // namespace

FrameDecoder::FrameDecoder(uint64_t stream_offset) : consumed_offset_(stream_offset) { resetFrame(); }

void FrameDecoder::resetFrame() {
  // Grow the first block when the last frame overflowed it: then the next frames fit in one block.
  const std::size_t used = arena_ ? static_cast<std::size_t>(arena_->SpaceAllocated()) : 0;
  if (!arena_ || (used > arena_block_bytes_ && arena_block_bytes_ < kMaxArenaBlockBytes)) {
    std::size_t bytes = std::max(arena_block_bytes_, kFirstArenaBlockBytes);
    while (bytes < used && bytes < kMaxArenaBlockBytes) bytes *= 2;
    arena_.reset();  // before its block goes
    arena_block_ = std::make_unique<char[]>(bytes);
    arena_block_bytes_ = bytes;
    google::protobuf::ArenaOptions options;
    options.initial_block = arena_block_.get();
    options.initial_block_size = bytes;
    arena_ = std::make_unique<google::protobuf::Arena>(options);
  } else {
    arena_->Reset();  // keeps our block, frees any the heap lent
  }
  frame_ = google::protobuf::Arena::CreateMessage<v1::Frame>(arena_.get());
}

void FrameDecoder::append(std::span<const uint8_t> bytes) {
  if (!corruption_.empty() || bytes.empty()) return;
  // Drop what was decoded already, so the buffer holds only the incomplete frame and new bytes.
  if (read_position_ > 0) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(read_position_));
    read_position_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

FrameDecoder::Status FrameDecoder::fail(std::string why) {
  corruption_ = std::move(why);
  corruption_offset_ = consumed_offset_;
  return Status::kCorrupt;
}

FrameDecoder::Status FrameDecoder::next() {
  if (!corruption_.empty()) return Status::kCorrupt;
  for (;;) {
    const std::size_t available = buffer_.size() - read_position_;
    const uint8_t* const start = buffer_.data() + read_position_;

    // The length prefix. The value seen so far is a lower bound of the final one, so a length
    // over the limit is refused without waiting for the rest of the prefix.
    uint64_t length = 0;
    std::size_t prefix_bytes = 0;
    bool prefix_complete = false;
    while (prefix_bytes < available && prefix_bytes < kMaxLengthPrefixBytes) {
      const uint8_t byte = start[prefix_bytes];
      length |= static_cast<uint64_t>(byte & 0x7f) << (7 * prefix_bytes);
      ++prefix_bytes;
      if ((byte & 0x80) == 0) {
        prefix_complete = true;
        break;
      }
    }
    if (length > kMaxFrameBytes) {
      return fail((prefix_complete ? "frame length " : "frame length of at least ") +
                  std::to_string(length) + " bytes is over the " +
                  std::to_string(kMaxFrameBytes / (1024 * 1024)) + " MiB frame limit");
    }
    if (!prefix_complete) {
      if (prefix_bytes == kMaxLengthPrefixBytes) {
        return fail("frame length prefix is longer than " +
                    std::to_string(kMaxLengthPrefixBytes) + " bytes");
      }
      return Status::kNeedMoreBytes;
    }
    if (available - prefix_bytes < length) return Status::kNeedMoreBytes;

    const uint64_t offset = consumed_offset_;
    const uint8_t* const body = start + prefix_bytes;
    if (length > 0 && taker_ && taker_->takeFrameBytes(std::span(body, static_cast<std::size_t>(length)), offset)) {
      read_position_ += prefix_bytes + length;
      consumed_offset_ += prefix_bytes + length;
      ++frames_decoded_;
      frame_offset_ = offset;
      return Status::kFrameTaken;
    }
    resetFrame();
    if (length > 0 && !frame_->ParseFromArray(body, static_cast<int>(length))) {
      return fail("frame of " + std::to_string(length) +
                  " bytes does not parse as a gapwatch.v1.Frame");
    }
    read_position_ += prefix_bytes + length;
    consumed_offset_ += prefix_bytes + length;

    if (length == 0 || frame_->body_case() == v1::Frame::BODY_NOT_SET) {
      ++frames_skipped_;
      continue;
    }
    ++frames_decoded_;
    frame_offset_ = offset;
    return Status::kFrame;
  }
}

}  // namespace gapwatch
