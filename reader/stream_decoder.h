// reader/stream_decoder.h: turns the frames of one process's stream into absolute, typed events.
//
// This is the decode step, kept apart from storage: it undoes the per-batch running deltas of
// times and correlation ids and the "thread_id 0 = same as the previous element" rule exactly as
// docs/recording-format.md ("Inside a batch") says, applies each batch's string definitions
// before its events, and hands one decoded batch at a time to a RecordingVisitor. Its memory is
// one batch plus the string table, so an analysis that is itself a visitor runs in one pass over a
// recording of any length. recording.h is the visitor that keeps everything, for tools that want
// the events in vectors.
#pragma once

#include "reader/events.h"
#include "reader/recording_reader.h"
#include "reader/string_table.h"

#include <gapwatch/v1/stream.pb.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace gapwatch {

// One EventBatch with every value made absolute. Lists keep the recorder's order (not sorted).
struct DecodedBatch {
  uint64_t sequence = 0;
  uint64_t base_time_ns = 0;
  uint64_t frame_offset = 0;  // byte offset of the batch's frame in the file
  std::vector<StringDefinition> strings;
  std::vector<ApiCallEvent> api_calls;
  std::vector<DeviceActivityEvent> activities;
  std::vector<NcclCallEvent> nccl_calls;
  std::vector<MarkerEvent> markers;
  std::vector<HostRangeEvent> host_ranges;
  std::vector<PythonSampleEvent> python_samples;
  std::vector<DropCount> drops;
  std::vector<ActivityApiSpan> activity_api_spans;
};

// Receives a stream's content in order. Every method has an empty default, so a visitor
// implements only what it needs.
class RecordingVisitor {
 public:
  virtual ~RecordingVisitor() = default;
  // The first Hello of the stream (its wire version already checked).
  virtual void onHello(const v1::Hello& /*hello*/, uint64_t /*offset*/) {}
  // One batch. `strings` already includes the batch's own definitions; resolve names now if they
  // matter, since a thread name may be redefined by a later batch.
  virtual void onBatch(const DecodedBatch& /*batch*/, const StringTable& /*strings*/) {}
  virtual void onGoodbye(const v1::Goodbye& /*goodbye*/, uint64_t /*offset*/) {}
  // The recorder's sign of life while the process ran, with the calls it was inside then.
  virtual void onHeartbeat(const v1::Heartbeat& /*heartbeat*/, uint64_t /*offset*/) {}
};

// How well-formed the stream was: the things a report mentions besides the events.
struct StreamHealth {
  bool has_hello = false;
  bool has_goodbye = false;  // false: the process was killed or the connection lost
  uint64_t batches = 0;
  // Sequence numbers skipped: batches the recorder wrote but that never arrived.
  uint64_t batches_missing = 0;
  // Batches whose sequence number was not above the previous one (repeated or reordered).
  uint64_t batches_out_of_order = 0;
  // Frames out of place: decoded all the same, but counted so a report can say so.
  uint64_t frames_before_hello = 0;
  uint64_t extra_hellos = 0;  // ignored: the first Hello describes the stream
  uint64_t frames_after_goodbye = 0;
  // One process's stream in several files, read as one (StreamDecoder::beginPart): when the
  // collector went away, the library wrote the rest to a file of its own, from a copy of the Hello
  // and the first batch the collector had not acknowledged. Per part, in the order read; for
  // a stream read from one file, one entry.
  struct Part {
    uint64_t batches = 0;          // batch frames in the part, duplicates included
    uint64_t first_sequence = 0;   // of its batches (0 and 0 when it has none)
    uint64_t last_sequence = 0;
    uint64_t duplicate_batches = 0;  // batches an earlier part had already given: left out
    uint64_t duplicate_events = 0;   // their events
    uint64_t missing_before = 0;     // sequence numbers between the earlier parts' last and its first
    bool goodbye = false;
  };
  std::vector<Part> parts;
};

class StreamDecoder final : public FrameSink {
 public:
  explicit StreamDecoder(RecordingVisitor& visitor) : visitor_(visitor) { health_.parts.emplace_back(); }

  // Decodes one frame and passes it on. Refuses (returns an error for) a Hello whose wire protocol
  // version this build does not read.
  std::optional<ReadError> onFrame(const v1::Frame& frame, uint64_t offset) override;
  // The fast path for batch frames: decodes the wire bytes straight into the batch, without
  // building the protobuf messages, with exactly the result onFrame gives. Leaves every frame it
  // does not fully understand (another body, an unknown field, a malformed or unusual encoding) to
  // libprotobuf and onFrame, so what a frame means is always what libprotobuf says.
  bool takeFrameBytes(std::span<const uint8_t> frame, uint64_t offset) override;

  // The frames that follow continue the same process's stream from another file (its part the
  // collector did not acknowledge, read after the collector's part): its Hello, a copy, is passed
  // over; a batch whose sequence number an earlier part had already delivered, and a second
  // Goodbye, are left out and counted. The string table carries over, as the stream's does.
  void beginPart();

  const StringTable& strings() const { return strings_; }
  const StreamHealth& health() const { return health_; }

 private:
  void decodeBatch(const v1::EventBatch& batch, uint64_t offset);
  // Fills batch_ from a Frame holding one EventBatch, string definitions not yet applied; false
  // (batch_ then undefined) for anything the fast path leaves to libprotobuf.
  bool parseBatchFrame(std::span<const uint8_t> frame);
  void trackSequence(uint64_t sequence);
  // In a later part: a batch that an earlier part delivered (counted, not passed on).
  bool duplicateBatch(uint64_t sequence, uint64_t events);
  void notePartBatch(uint64_t sequence);

  RecordingVisitor& visitor_;
  StringTable strings_;
  StreamHealth health_;
  uint64_t next_sequence_ = 0;
  bool in_later_part_ = false;
  uint64_t last_sequence_before_part_ = 0;  // next_sequence_ when the current part began
  DecodedBatch batch_;  // reused, so a long stream does not allocate per batch
};

}  // namespace gapwatch
