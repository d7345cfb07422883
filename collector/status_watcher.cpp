// collector/status_watcher.cpp: see status_watcher.h.
#include "collector/status_watcher.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gapwatch::collector {

StatusWatcher::~StatusWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

bool StatusWatcher::send(const std::string& line) {
  if (pending_.size() + line.size() > kMaxPendingBytes) return false;
  pending_ += line;
  return flush();
}

bool StatusWatcher::flush() {
  while (!pending_.empty()) {
    const ssize_t n = ::send(fd_, pending_.data(), pending_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0) return false;
    pending_.erase(0, std::size_t(n));
  }
  return true;
}

bool StatusWatcher::drainInput() {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
  }
}

}  // namespace gapwatch::collector
