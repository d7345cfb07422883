// collector/connection.cpp: see connection.h.
#include "collector/connection.h"

#include "collector/collector_log.h"
#include "collector/recording_file.h"

#include <gapwatch/recording_format.h>
#include <gapwatch/write_all.h>

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace gapwatch::collector {
namespace {

constexpr std::size_t kReadBytes = 64 * 1024;

// Bytes from the stream become log text: only printable ASCII, bounded.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (out.size() == 64) break;
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

}  // namespace

Connection::Connection(int id, int fd, int peer_pid, int dir_fd, const analysis::AnalysisOptions& options,
                       Clock::time_point now)
    : id_(id),
      fd_(fd),
      peer_pid_(peer_pid),
      dir_fd_(dir_fd),
      options_(options),
      decoder_(kFileHeaderBytes),
      raw_offset_(kFileHeaderBytes),
      last_frame_(now) {}

Connection::~Connection() {
  if (file_fd_ >= 0) ::close(file_fd_);
  if (fd_ >= 0) ::close(fd_);
}

int Connection::releaseFd() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

bool Connection::readAvailable(Clock::time_point now, int max_reads) {
  uint8_t buffer[kReadBytes];
  for (int i = 0; i < max_reads; ++i) {
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    // A process that closes its end with receipts unread (one that reads none, or one killed)
    // makes the kernel answer ECONNRESET once its bytes are all read: the same end as EOF.
    if (n < 0 && errno == ECONNRESET) n = 0;
    if (n < 0) {
      close_reason_ = std::string("read error: ") + strerror(errno);
      close_severity_ = CloseSeverity::kWarning;
      return false;
    }
    if (n == 0) {
      if (!hello_seen_) {
        close_reason_ = "ended before a Hello";
      } else if (decoder_.pendingBytes() > 0) {
        close_reason_ = "ended inside a frame (" + std::to_string(decoder_.pendingBytes()) + " bytes not written)";
      } else {
        close_reason_ = goodbye_seen_ ? "ended" : "ended without a Goodbye";
      }
      return false;
    }
    if (!feed(std::span<const uint8_t>(buffer, std::size_t(n)), now)) return false;
  }
  return true;
}

bool Connection::feed(std::span<const uint8_t> bytes, Clock::time_point now) {
  bytes_received_ += bytes.size();
  raw_.insert(raw_.end(), bytes.begin(), bytes.end());
  decoder_.append(bytes);
  for (;;) {
    const auto status = decoder_.next();
    if (status == FrameDecoder::Status::kNeedMoreBytes) break;
    if (status == FrameDecoder::Status::kCorrupt) {
      writeWholeFrames();  // the frames before the bad one are good
      // Offsets in the log are the peer's stream offsets (the file's less its header).
      return refuse("corrupt stream at offset " + std::to_string(decoder_.corruptionOffset() - kFileHeaderBytes) +
                    ": " + decoder_.corruption());
    }
    last_frame_ = now;
    ++frames_;
    if (status == FrameDecoder::Status::kFrameTaken) continue;  // a batch, decoded by live_
    const v1::Frame& frame = decoder_.frame();
    if (!hello_seen_) {
      if (decoder_.framesSkipped() == 0 && frame.has_status_request()) {
        wants_status_ = true;
        close_reason_ = "a status request";
        return false;
      }
      if (decoder_.framesSkipped() > 0 || !frame.has_hello()) {
        return refuse("the stream does not begin with a Hello frame");
      }
      if (!acceptHello(frame)) return false;
      live_->onFrame(frame, decoder_.frameOffset());
      continue;
    }
    if (frame.has_hello()) {
      --frames_;  // not written: the file ends before it
      writeWholeFramesBefore(decoder_.frameOffset());
      return refuse("a second Hello frame");
    }
    if (frame.has_status_request()) {
      --frames_;
      writeWholeFramesBefore(decoder_.frameOffset());
      return refuse("a status request inside a process's stream");
    }
    if (frame.has_goodbye()) goodbye_seen_ = true;
    live_->onFrame(frame, decoder_.frameOffset());
  }
  if (!hello_seen_ && decoder_.framesSkipped() > 0) return refuse("the stream does not begin with a Hello frame");
  if (!writeWholeFrames()) return false;
  sendReceipt(now);
  return true;
}

void Connection::sendReceipt(Clock::time_point now) {
  // At most one receipt per kReceiptInterval while frames flow (each is a send and, on the
  // process's side, a read), but always the one that covers the Goodbye: the process waits for it
  // at exit. A receipt the socket cannot take now (EAGAIN: a process that reads none, or reads
  // late) is left out, not queued: the next one supersedes it. The process sends nothing in
  // answer, so this never blocks and never waits.
  if (!hello_seen_ || file_fd_ < 0 || raw_offset_ <= receipted_offset_) return;
  if (!goodbye_seen_ && receipted_offset_ > 0 && now - last_receipt_ < kReceiptInterval) return;
  unsigned char receipt[kReceiptBytes];
  encodeReceipt(raw_offset_ - kFileHeaderBytes, receipt);
  ssize_t n;
  do {
    n = ::send(fd_, receipt, sizeof receipt, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  // A short send cannot happen for 8 bytes on a stream socket with room; with no room it is -1.
  if (n != ssize_t(sizeof receipt)) return;
  receipted_offset_ = raw_offset_;
  last_receipt_ = now;
}

bool Connection::acceptHello(const v1::Frame& frame) {
  const v1::Hello& hello = frame.hello();
  const uint32_t version = hello.wire_version();
  if (version < kMinWireVersion || version > kWireVersion) {
    return refuse("wire protocol version " + std::to_string(version) + " is " +
                  (version > kWireVersion ? "newer" : "older") + " than this collector reads (" +
                  std::to_string(kMinWireVersion) + " to " + std::to_string(kWireVersion) + ")");
  }
  live_ = std::make_unique<LiveProcess>(options_);
  decoder_.setTaker(live_.get());
  pid_ = hello.pid();
  host_ = hello.host();
  if (hello.has_rank()) rank_ = hello.rank();
  std::string error;
  file_fd_ = createRecordingFile(dir_fd_, recordingBaseName(host_, pid_, rank_), &file_name_, &error);
  if (file_fd_ < 0) return refuse(error);
  hello_seen_ = true;
  logInfo(openLine());
  return true;
}

bool Connection::writeWholeFrames() { return writeWholeFramesBefore(decoder_.wholeFramesEnd()); }

bool Connection::writeWholeFramesBefore(uint64_t end) {
  if (file_fd_ < 0) return true;
  const std::size_t count = std::size_t(end - raw_offset_);
  if (count == 0) return true;
  if (!gapwatch::write_all(file_fd_, raw_.data(), count)) {
    const std::string why = strerror(errno);
    // A full disk takes part of a frame: cut the file back to the last whole one, so that it reads
    // as a recording that ended early (the process, refused, writes what it has no receipt for to
    // its own file). Best effort: if the cut fails too, the reader stops at the partial frame.
    if (::ftruncate(file_fd_, off_t(raw_offset_)) == 0) ::lseek(file_fd_, off_t(raw_offset_), SEEK_SET);
    return refuse("cannot write " + file_name_ + ": " + why);
  }
  raw_.erase(raw_.begin(), raw_.begin() + std::ptrdiff_t(count));
  raw_offset_ = end;
  return true;
}

bool Connection::tooSlow(Clock::time_point now, Clock::duration timeout) const {
  const bool waiting = !hello_seen_ || decoder_.pendingBytes() > 0;
  return waiting && now - last_frame_ > timeout;
}

bool Connection::refuse(std::string reason) {
  close_reason_ = "refused: " + std::move(reason);
  close_severity_ = CloseSeverity::kWarning;
  return false;
}

std::string Connection::who() const {
  std::string text = "connection " + std::to_string(id_) + ": pid " + std::to_string(hello_seen_ ? int(pid_) : peer_pid_);
  if (hello_seen_) {
    text += ", rank " + (rank_ ? std::to_string(*rank_) : std::string("-")) + ", host " + printable(host_);
  }
  return text;
}

std::string Connection::openLine() const { return who() + ": opened, writing " + file_name_; }

FinishedProcess Connection::finishProcess() {
  FinishedProcess p;
  p.file = file_name_;
  p.pid = pid_;
  p.host = host_;
  p.rank = rank_;
  p.events = events();
  p.drops = drops();
  p.bytes = bytes_received_;
  auto [read, outcome] = live_->finish(raw_offset_, frames_, decoder_.framesSkipped());
  p.read = std::move(read);
  p.outcome = std::move(outcome);
  decoder_.setTaker(nullptr);  // the decoder must not keep a pointer to what goes now
  live_.reset();
  return p;
}

std::string Connection::closeLine(const std::string& reason) const {
  return who() + ": closed (" + reason + "): events " + std::to_string(events()) + ", drops " + std::to_string(drops()) +
         ", bytes " + std::to_string(bytes_received_) + (file_name_.empty() ? "" : ", file " + file_name_);
}

}  // namespace gapwatch::collector
