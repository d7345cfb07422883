// tools/gwt_file_writer.cpp: see gwt_file_writer.h.
#include "tools/gwt_file_writer.h"

#include <gapwatch/output_file.h>
#include "reader/batch_encoder.h"

#include <gapwatch/recording_format.h>
#include <gapwatch/v1/stream.pb.h>
#include <gapwatch/wire_primitives.h>
#include <gapwatch/write_all.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <utility>

namespace gapwatch::cli {
namespace {

// String definitions of one batch beyond this go first, in batches of their own, so that no
// frame passes the readers' kMaxFrameBytes (a trace's first batch defines every kernel name).
constexpr std::size_t kMaxStringBytesPerBatch = kMaxFrameBytes / 2;

std::string directoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseNameOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

GwtFileWriter::GwtFileWriter(std::string destination, bool replace)
    : destination_(std::move(destination)), replace_(replace) {
  const std::string dir = directoryOf(destination_);
  temporary_ = (dir == "/" ? "" : dir) + "/." + baseNameOf(destination_) + ".tmp-" + std::to_string(getpid());
}

GwtFileWriter::~GwtFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

void GwtFileWriter::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

bool GwtFileWriter::open() {
  ::unlink(temporary_.c_str());  // a leftover of this pid's own earlier run
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    fail(std::string("cannot create a file in ") + directoryOf(destination_) + ": " + strerror(errno));
    return false;
  }
  std::string header(reinterpret_cast<const char*>(kFileMagic), sizeof kFileMagic);
  for (int i = 0; i < 4; ++i) header += static_cast<char>((kFileFormatVersion >> (8 * i)) & 0xff);
  writeBytes(header);
  return error_.empty();
}

void GwtFileWriter::writeBytes(const std::string& bytes) {
  if (fd_ < 0 || !error_.empty()) return;
  if (!write_all(fd_, bytes.data(), bytes.size())) {
    fail("cannot write: " + std::string(strerror(errno)));
    return;
  }
  bytes_ += bytes.size();
}

void GwtFileWriter::writeFrame(const v1::Frame& frame) {
  std::string body;
  if (!frame.SerializeToString(&body)) return fail("cannot serialise a frame");
  if (body.size() > kMaxFrameBytes) {
    return fail("a frame of " + std::to_string(body.size()) + " bytes is over the " +
                std::to_string(kMaxFrameBytes >> 20) + " MiB frame limit");
  }
  std::string out;
  wire::appendVarint(out, body.size());
  out += body;
  writeBytes(out);
  ++frames_;
}

void GwtFileWriter::onHello(const v1::Hello& hello, uint64_t /*offset*/) {
  v1::Frame frame;
  *frame.mutable_hello() = hello;
  if (frame.hello().wire_version() == 0) frame.mutable_hello()->set_wire_version(kWireVersion);
  writeFrame(frame);
}

void GwtFileWriter::onBatch(const DecodedBatch& batch, const StringTable& /*strings*/) {
  std::size_t string_bytes = 0;
  for (const StringDefinition& s : batch.strings) string_bytes += s.text.size();
  const DecodedBatch* events = &batch;
  DecodedBatch without_strings;
  if (keep_recorder_stream_) {
    // A recorder's batch was one frame under the limit already: it is written as it came.
    v1::Frame frame;
    *frame.mutable_batch() = encodeEventBatch(batch);
    frame.mutable_batch()->set_sequence(batch.sequence);
    writeFrame(frame);
    return;
  }
  if (string_bytes > kMaxStringBytesPerBatch) {
    // The definitions first, in batches of their own; a string is defined before any event of
    // the batch that uses it either way.
    DecodedBatch chunk;
    std::size_t chunk_bytes = 0;
    const auto flush = [&] {
      chunk.sequence = sequence_++;
      chunk.base_time_ns = batch.base_time_ns;
      v1::Frame frame;
      *frame.mutable_batch() = encodeEventBatch(chunk);
      writeFrame(frame);
      chunk.strings.clear();
      chunk_bytes = 0;
    };
    for (const StringDefinition& s : batch.strings) {
      if (chunk_bytes > 0 && chunk_bytes + s.text.size() > kMaxStringBytesPerBatch) flush();
      chunk.strings.push_back(s);
      chunk_bytes += s.text.size();
    }
    if (!chunk.strings.empty()) flush();
    without_strings = batch;
    without_strings.strings.clear();
    events = &without_strings;
  }
  v1::Frame frame;
  *frame.mutable_batch() = encodeEventBatch(*events);
  frame.mutable_batch()->set_sequence(sequence_++);
  writeFrame(frame);
}

void GwtFileWriter::onGoodbye(const v1::Goodbye& goodbye, uint64_t /*offset*/) {
  v1::Frame frame;
  *frame.mutable_goodbye() = goodbye;
  if (!keep_recorder_stream_) frame.mutable_goodbye()->set_batches(sequence_);
  writeFrame(frame);
}

void GwtFileWriter::onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t /*offset*/) {
  if (!keep_recorder_stream_) return;
  v1::Frame frame;
  *frame.mutable_heartbeat() = heartbeat;
  writeFrame(frame);
}

bool GwtFileWriter::commit() {
  if (fd_ < 0) fail("nothing was written");
  int dir_fd = -1;
  if (error_.empty()) {
    dir_fd = ::open(directoryOf(destination_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) fail(std::string("cannot write: ") + strerror(errno));
  }
  if (error_.empty()) {
    // Without `replace`, RENAME_NOREPLACE refuses a destination that appeared meanwhile.
    const int error = commitTemporaryFile(fd_, dir_fd, baseNameOf(temporary_), baseNameOf(destination_),
                                                     replace_ ? 0 : RENAME_NOREPLACE);
    if (error == 0) {
      committed_ = true;
    } else {
      destination_exists_ = error == EEXIST;
      fail(error == EEXIST ? std::string("exists (give --force to replace it)")
                           : std::string("cannot write: ") + strerror(error));
    }
  }
  if (dir_fd >= 0) ::close(dir_fd);
  if (fd_ >= 0 && ::close(fd_) != 0) fail(std::string("cannot write: ") + strerror(errno));
  fd_ = -1;
  return error_.empty();
}

}  // namespace gapwatch::cli
