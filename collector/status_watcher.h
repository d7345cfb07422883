// collector/status_watcher.h: a `gapwatch watch` client of the collector: the socket that sent a
// StatusRequest, to which the loop writes its status line every second.
//
// Never blocks the loop: writes are non-blocking, and a client that does not read is sent nothing
// more until it has taken what is pending; one that lets more than kMaxPendingBytes pile up is
// dropped. What it sends after its request is read and ignored.
#pragma once

#include <cstddef>
#include <string>

namespace gapwatch::collector {

class StatusWatcher {
 public:
  static constexpr std::size_t kMaxPendingBytes = 4 << 20;

  explicit StatusWatcher(int fd) : fd_(fd) {}  // owns fd
  ~StatusWatcher();
  StatusWatcher(const StatusWatcher&) = delete;
  StatusWatcher& operator=(const StatusWatcher&) = delete;

  int fd() const { return fd_; }
  bool wantsWrite() const { return !pending_.empty(); }
  // Queues a line and writes what the socket takes. False: the client is gone or too far behind.
  bool send(const std::string& line);
  // Writes what is pending (the socket became writable). False: the client is gone.
  bool flush();
  // Reads and discards what the client sent. False: it closed its end.
  bool drainInput();

 private:
  int fd_;
  std::string pending_;
};

}  // namespace gapwatch::collector
