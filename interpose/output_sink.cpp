#include "output_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gapwatch/recording_format.h>

namespace gapwatch {

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
  ucred peer{};
  socklen_t len = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != getuid()) {
    ::close(fd);
    return false;
  }
  fd_ = fd;
  socket_ = true;
  path_ = socket_path_ = path;
  fallback_path_ = fallback_path;
  return true;
}

bool OutputSink::open_file(const std::string& path, bool* taken) {
  // Not O_TRUNC: the lock first, then the truncation, so that a file in use keeps its contents.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  // A file system without flock (some network ones) answers another error: write as before.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    ::close(fd);
    if (taken) *taken = true;
    errno = EBUSY;
    return false;
  }
  if (::ftruncate(fd, 0) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return false;
  }
  fd_ = fd;
  socket_ = false;
  path_ = path;
  std::string header(reinterpret_cast<const char*>(kFileMagic), sizeof kFileMagic);
  uint32_t v = kFileFormatVersion;
  for (int i = 0; i < 4; ++i) header.push_back(char((v >> (8 * i)) & 0xff));  // little-endian
  return write_all(fd_, header.data(), header.size()) || (failed_ = true, false);
}

bool OutputSink::write_all(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

bool OutputSink::send_pending() {
  while (!pending_.empty()) {
    const std::string& front = pending_.front();
    ssize_t n = ::send(fd_, front.data() + front_sent_, front.size() - front_sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;  // EPIPE, ECONNRESET: the collector is gone
    front_sent_ += size_t(n);
    if (front_sent_ == front.size()) {  // in the socket whole: kept until the collector has read it
      pending_bytes_ -= front.size();
      unread_bytes_ += front.size();
      unread_.push_back(std::move(pending_.front()));
      pending_.pop_front();
      front_sent_ = 0;
    }
  }
  forget_read_frames();
  return true;
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

void OutputSink::forget_read_frames() {
  if (unread_.empty()) return;
  const size_t queued = unread_in_socket();
  // The socket holds the last `queued` bytes sent (an over-estimate): frames wholly before them
  // have been read by the collector.
  // Beyond kUnreadLimit (far more than a socket buffer holds) they are read whatever the socket
  // says: the bound on this copy's memory when SIOCOUTQ cannot be had.
  while (!unread_.empty() && (unread_bytes_ + front_sent_ - unread_.front().size() >= queued ||
                              unread_bytes_ > kUnreadLimit)) {
    unread_bytes_ -= unread_.front().size();
    unread_.pop_front();
  }
}

bool OutputSink::fall_back(const char* why) {
  ::close(fd_);
  fd_ = -1;
  socket_ = false;
  fell_back_because_ = why;
  // Frames in the socket that the collector may not have read (a collector killed loses what its
  // socket still held), then those never sent. Some of the first may be in the collector's
  // recording as well: better twice, in two files, than lost.
  std::deque<std::string> frames;
  frames.swap(unread_);
  for (auto& f : pending_) frames.push_back(std::move(f));
  pending_.clear();
  pending_bytes_ = front_sent_ = unread_bytes_ = 0;
  if (fallback_path_.empty() || !open_file(fallback_path_)) {
    failed_ = true;
    return false;
  }
  path_ = fallback_path_;
  // A reader of the file needs the stream's Hello first; the frames the collector did not take
  // whole follow it (the one it got a part of, whole: the collector drops a cut frame).
  // (When the collector never took the Hello whole, it is the first pending frame: once is enough.)
  bool ok = write_all(fd_, hello_.data(), hello_.size());
  for (size_t i = 0; i < frames.size() && ok; ++i)
    if (!(i == 0 && frames[i] == hello_)) ok = write_all(fd_, frames[i].data(), frames[i].size());
  if (!ok) failed_ = true;
  return ok;
}

bool OutputSink::write(const std::string& frame) {
  if (!ok()) return false;
  if (!socket_) {
    if (write_all(fd_, frame.data(), frame.size())) return true;
    failed_ = true;
    return false;
  }
  if (hello_.empty()) hello_ = frame;
  // Frames from before are sent first, then this one; what the socket does not take waits.
  if (pending_bytes_ + frame.size() > kPendingLimit) {
    if (!send_pending()) return fall_back("gone") && write(frame);
    if (pending_bytes_ + frame.size() > kPendingLimit) return fall_back("stalled") && write(frame);
  }
  pending_.push_back(frame);
  pending_bytes_ += frame.size();
  if (!send_pending()) return fall_back("gone");
  return true;
}

void OutputSink::close() {
  if (fd_ < 0) return;
  if (socket_) {
    // Goodbye is in pending_ now: give the collector a short while to take it, then the file.
    for (int waited = 0; !pending_.empty() && waited < kExitDrainMs; waited += 10) {
      if (!send_pending()) break;
      if (pending_.empty()) break;
      pollfd p{fd_, POLLOUT, 0};
      poll(&p, 1, 10);
    }
    // Then until it has read everything: what it never reads (it dies now) goes to the file.
    for (int waited = 0; pending_.empty() && !unread_.empty() && waited < kExitDrainMs; ++waited) {
      forget_read_frames();
      if (!unread_.empty()) usleep(1000);
    }
    if (!pending_.empty() && !send_pending()) {
      fall_back("gone");
    } else if (!pending_.empty() || !unread_.empty()) {
      fall_back("stalled");
    }
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace gapwatch
