// <gapwatch/write_all.h>: every byte of a buffer to a descriptor, the one write loop of the tree
// (the injected library's .gwt file, the collector's recordings and reports, the tools' files and
// sockets). Blocking descriptors only: a non-blocking socket that must never wait (the library's
// stream to the collector) has its own loop, which keeps what the socket did not take.
//
// EINTR is retried; any other failure returns false with errno set (a write that makes no progress
// sets EIO). Async-signal-safe: no allocation, no lock.
#pragma once

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

namespace gapwatch {

namespace write_all_detail {
template <class Write>
inline bool loop(const void* data, size_t size, Write write_some) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write_some(p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}
}  // namespace write_all_detail

// write(2) until every byte is written.
inline bool write_all(int fd, const void* data, size_t size) {
  return write_all_detail::loop(data, size, [fd](const char* p, size_t n) { return ::write(fd, p, n); });
}

// send(2) with `flags` until every byte is sent: a socket, with MSG_NOSIGNAL so that a peer gone
// is an error (EPIPE), not a signal.
inline bool send_all(int fd, const void* data, size_t size, int flags = MSG_NOSIGNAL) {
  return write_all_detail::loop(data, size, [fd, flags](const char* p, size_t n) { return ::send(fd, p, n, flags); });
}

}  // namespace gapwatch
