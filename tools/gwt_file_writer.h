// tools/gwt_file_writer.h: writes a stream (Hello, batches, Goodbye) as a .gwt recording file.
//
// A RecordingVisitor, so whatever hands a stream to the analysis (the Kineto reader, a decoder)
// can hand it to a file instead. The file is the format of docs/recording-format.md: the 12-byte
// header, then `<varint length><gapwatch.v1.Frame>` frames serialised by libprotobuf, batches in
// the delta form of reader/batch_encoder.h. It goes to a temporary file beside the destination
// (created O_EXCL|O_NOFOLLOW), renamed over the destination by commit() only when every write
// succeeded: a reader never sees half a file, and a failed run leaves no file behind. The file is
// fsync'ed before the rename and its directory after (gapwatch/output_file.h: the one way
// gapwatch puts a file in place).
#pragma once

#include "reader/stream_decoder.h"

#include <cstdint>
#include <string>

namespace gapwatch::cli {

class GwtFileWriter final : public RecordingVisitor {
 public:
  // `replace`: an existing destination is replaced; otherwise commit() refuses to.
  GwtFileWriter(std::string destination, bool replace);
  ~GwtFileWriter() override;  // removes the temporary file unless committed
  GwtFileWriter(const GwtFileWriter&) = delete;
  GwtFileWriter& operator=(const GwtFileWriter&) = delete;

  // Creates the temporary file and writes the header; false with error() set.
  bool open();

  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;
  void onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) override;

  // The stream is a recorder's (the parts of one process, `gapwatch import PART... -o`): its
  // batches keep their sequence numbers (a gap stays a gap for the reader to say), its Goodbye
  // its totals, and its heartbeats are written (a hang is told by them). A synthesised stream's
  // batches are numbered here, and it has no heartbeats.
  void keepRecorderStream() { keep_recorder_stream_ = true; }

  // Flushes and renames the temporary file to the destination; false with error() set (the
  // temporary file is removed). Call once, after the stream.
  bool commit();

  // The first thing that went wrong, one line without the file name's prefix; "" when nothing did.
  const std::string& error() const { return error_; }
  // commit() failed because the destination exists (and `replace` was not given): the user's
  // choice to make (--force), not a write error.
  bool destinationExists() const { return destination_exists_; }
  uint64_t framesWritten() const { return frames_; }
  uint64_t bytesWritten() const { return bytes_; }

 private:
  void writeFrame(const v1::Frame& frame);
  void writeBytes(const std::string& bytes);
  void fail(std::string message);

  std::string destination_, temporary_;
  bool replace_;
  bool keep_recorder_stream_ = false;
  int fd_ = -1;
  bool committed_ = false;
  uint64_t sequence_ = 0;  // batches written: string-only batches (see onBatch) get their own
  uint64_t frames_ = 0, bytes_ = 0;
  std::string error_;
  bool destination_exists_ = false;
};

}  // namespace gapwatch::cli
