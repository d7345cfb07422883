#include "output_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include <gapwatch/default_socket.h>
#include <gapwatch/write_all.h>

namespace gapwatch {
namespace {

// "run.gwt" as "run-<pid>.gwt" (attempt 1), then "run-<pid>-1.gwt", "run-<pid>-2.gwt", ...: the
// pid first, so that a name says which process wrote it.
std::string alternative_name(const std::string& path, int attempt) {
  std::string suffix = "-" + std::to_string(getpid());
  if (attempt > 1) suffix += "-" + std::to_string(attempt - 1);
  const size_t slash = path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const bool gwt = path.size() >= base + 4 && path.compare(path.size() - 4, 4, ".gwt") == 0;
  std::string out = path;
  return out.insert(gwt ? path.size() - 4 : path.size(), suffix);
}

int64_t monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

OutputSink::~OutputSink() { close(); }

bool OutputSink::connect_socket(const std::string& path, const std::string& fallback_path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  // Non-blocking from the start: a collector whose backlog is full refuses at once (EAGAIN), as
  // one that is not there does.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return false;
  }
  // The collector must be this user's: a socket someone else made in a place we looked is not.
  // "This user" is the effective uid, the collector's own rule (it accepts a peer whose
  // SO_PEERCRED uid is its effective uid) and default_socket_owner()'s: a setuid process, whose
  // real uid differs, once refused the very collector that would accept it.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != default_socket_owner()) {
    ::close(fd);
    return false;
  }
  fd_ = fd;
  socket_ = true;
  path_ = socket_path_ = path;
  fallback_path_ = fallback_path;
  return true;
}

bool OutputSink::open_file(const std::string& path) {
  requested_path_ = path;
  // O_EXCL: only a file this call creates is written, so an existing recording (another
  // process's, an earlier run's) is never truncated, and with O_CREAT a symlink at the name is not
  // followed even when it dangles (O_NOFOLLOW says so once more).
  std::string name = path;
  int fd = -1;
  for (int attempt = 0; attempt < kMaxNameTries; ++attempt) {
    name = attempt == 0 ? path : alternative_name(path, attempt);
    fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) return false;
  fd_ = fd;
  socket_ = false;
  failed_ = false;
  path_ = name;
  file_bytes_ = 0;
  std::string header(reinterpret_cast<const char*>(kFileMagic), sizeof kFileMagic);
  uint32_t v = kFileFormatVersion;
  for (int i = 0; i < 4; ++i) header.push_back(char((v >> (8 * i)) & 0xff));  // little-endian
  return append_to_file(header.data(), header.size());
}

bool OutputSink::append_to_file(const char* data, size_t size) {
  if (gapwatch::write_all(fd_, data, size)) {
    file_bytes_ += size;
    return true;
  }
  // Half a frame at the end would read as a corrupt file; without it the file is a recording
  // that ended early (a reader says so and reads every whole frame). Best effort: a file system
  // that refuses this too keeps the partial frame, and the reader stops there.
  const int saved = errno ? errno : EIO;
  if (::ftruncate(fd_, off_t(file_bytes_)) == 0) ::lseek(fd_, off_t(file_bytes_), SEEK_SET);
  errno = error_ = saved;
  failed_ = true;
  return false;
}

bool OutputSink::read_receipts() {
  unsigned char buffer[kReceiptBytes * 64];
  for (;;) {
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) {  // 0: the collector closed its side (or died); else ECONNRESET and the like
      collector_closed_ = true;
      return false;
    }
    for (ssize_t i = 0; i < n; ++i) {
      receipt_part_[receipt_fill_++] = buffer[i];
      if (receipt_fill_ < kReceiptBytes) continue;
      receipt_fill_ = 0;
      receipts_ = true;
      receipt_ = std::max(receipt_, decodeReceipt(receipt_part_));
    }
  }
}

bool OutputSink::send_pending() {
  if (collector_closed_) return false;
  while (!pending_.empty()) {
    const std::string& front = pending_.front();
    ssize_t n = ::send(fd_, front.data() + front_sent_, front.size() - front_sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) return false;  // EPIPE, ECONNRESET: the collector is gone
    front_sent_ += size_t(n);
    if (front_sent_ == front.size()) {  // in the socket whole: kept until the collector has it
      pending_bytes_ -= front.size();
      unread_bytes_ += front.size();
      unread_.push_back(std::move(pending_.front()));
      pending_.pop_front();
      front_sent_ = 0;
    }
  }
  forget_read_frames();
  return !collector_closed_;
}

size_t OutputSink::unread_in_socket() const {
  // For a Unix stream socket SIOCOUTQ is what the peer has not read yet, counted with the
  // kernel's per-buffer overhead: never less than the unread bytes, and 0 once all are read.
  int queued = 0;
  // Unknown (no SIOCOUTQ for this socket): taken as read, as before the library kept copies; else
  // every exit would wait for it, then copy the stream's tail to the file for nothing.
  if (::ioctl(fd_, SIOCOUTQ, &queued) != 0 || queued < 0) return 0;
  return size_t(queued);
}

void OutputSink::forget_front() {
  forgotten_ += unread_.front().size();
  unread_bytes_ -= unread_.front().size();
  unread_.pop_front();
}

void OutputSink::forget_read_frames() {
  // Asked before the receipts are read: when no receipt has come, the answer counts only if the
  // connection is still open after it (below).
  const size_t queued = receipts_ || unread_.empty() ? 0 : unread_in_socket();
  // Receipts read before the connection closed still count (a collector sends the Goodbye's
  // receipt, then closes); a SIOCOUTQ answer does not: a closed connection's queue reads empty.
  const bool open = read_receipts();
  if (receipts_) {
    while (!unread_.empty() && forgotten_ + unread_.front().size() <= receipt_) forget_front();
  } else if (open) {
    // No receipt yet (a collector from before receipts, or the first has not come): the socket
    // holds the last `queued` bytes sent (an over-estimate), so frames wholly before them have
    // been read. A dead collector's queue reads as empty, but the kernel marks the connection
    // closed before it empties the queue, so an open connection after the ioctl means the
    // answer was the live collector's.
    while (!unread_.empty() && unread_bytes_ + front_sent_ - unread_.front().size() >= queued) forget_front();
  }
  // The bound on this copy's memory, whatever the collector says: far more than a socket's
  // buffers hold, so only a collector that reads and never writes reaches it.
  while (!unread_.empty() && unread_bytes_ > kUnreadLimit) forget_front();
}

bool OutputSink::fall_back(FallbackReason why) {
  ::close(fd_);
  fd_ = -1;
  socket_ = false;
  fell_back_because_ = why;
  // Frames the collector has not acknowledged (a collector killed loses what its socket still
  // held), then those never sent. Some of the first may be in the collector's recording as well:
  // better twice, in two files, than lost.
  std::deque<std::string> frames;
  frames.swap(unread_);
  for (auto& f : pending_) frames.push_back(std::move(f));
  pending_.clear();
  pending_bytes_ = front_sent_ = unread_bytes_ = 0;
  if (fallback_path_.empty() || !open_file(fallback_path_)) {
    // Out of descriptors, an unwritable directory: the rest is lost, and path() names the file
    // that could not be made, so that the recorder's line says which and why.
    error_ = fallback_path_.empty() ? ENOENT : errno;
    path_ = fallback_path_;
    failed_ = true;
    return false;
  }
  // A reader of the file needs the stream's Hello first; the frames the collector did not take
  // whole follow it (the one it got a part of, whole: the collector drops a cut frame).
  // (When the collector never took the Hello whole, it is the first pending frame: once is enough.)
  bool ok = append_to_file(hello_.data(), hello_.size());
  for (size_t i = 0; i < frames.size() && ok; ++i)
    if (!(i == 0 && frames[i] == hello_)) ok = append_to_file(frames[i].data(), frames[i].size());
  return ok;
}

bool OutputSink::write(const std::string& frame) {
  if (!ok()) return false;
  if (!socket_) return append_to_file(frame.data(), frame.size());
  if (hello_.empty()) hello_ = frame;
  // Frames from before are sent first, then this one; what the socket does not take waits.
  if (pending_bytes_ + frame.size() > kPendingLimit) {
    if (!send_pending()) return fall_back(FallbackReason::kGone) && write(frame);
    if (pending_bytes_ + frame.size() > kPendingLimit) return fall_back(FallbackReason::kStalled) && write(frame);
  }
  pending_.push_back(frame);
  pending_bytes_ += frame.size();
  if (!send_pending()) return fall_back(FallbackReason::kGone);
  return true;
}

void OutputSink::close(int drain_ms) {
  if (fd_ < 0) return;
  if (socket_) {
    // The Goodbye is the last frame now. Until the collector has it all (its receipt covers the
    // Goodbye; without receipts, SIOCOUTQ says read), a bounded wait; then what it has not
    // acknowledged goes to the file. A collector that closed the connection ends the wait at once.
    bool gone = false;
    const int64_t deadline = monotonic_ms() + drain_ms;
    for (;;) {
      if (!send_pending()) {
        gone = true;
        break;
      }
      if (pending_.empty() && unread_.empty()) break;
      const int64_t left = deadline - monotonic_ms();
      if (left <= 0) break;
      // A receipt or the collector's end wakes the poll; without receipts nothing does when the
      // collector reads, so look again every millisecond.
      pollfd p{fd_, short(POLLIN | (pending_.empty() ? 0 : POLLOUT)), 0};
      poll(&p, 1, receipts_ ? int(std::min<int64_t>(left, 100)) : 1);
    }
    if (!pending_.empty() || !unread_.empty()) fall_back(gone ? FallbackReason::kGone : FallbackReason::kStalled);
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace gapwatch
