// output_sink.h: where the frames go: a collector's Unix socket, or a .gwt file.
//
// Flusher thread only (and the exit path, after the flusher has stopped). A write that fails
// (disk full, collector gone) never reaches the user's program: no SIGPIPE (MSG_NOSIGNAL), no
// exception; the sink reports failure and the recorder counts what it could not deliver.
//
// A collector may stall or go away while the job runs, and the flusher (or the exiting thread,
// which writes Goodbye) must never wait for it. So the socket is non-blocking: what it does not
// take at once waits in a bounded buffer of whole frames (kPendingLimit), sent on the next write.
// When the buffer would overflow, or the collector is gone (EPIPE, ECONNRESET), or the stream
// cannot be drained within kExitDrainMs at close, the sink falls back to the local .gwt file: the
// file header, a copy of the stream's Hello, then every frame the collector may not have read
// (those still in the socket: a collector killed loses them; the one it got only part of
// included), and from then on everything. No event is lost while the disk has room (a batch or
// two may be in both files, with the same sequence numbers); the recorder says once where the
// rest went.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

namespace gapwatch {

class OutputSink {
 public:
  ~OutputSink();
  // Connects to a collector at `path`; false when nobody listens there. `fallback_path` is the
  // file the stream continues in if the collector stalls or goes away.
  bool connect_socket(const std::string& path, const std::string& fallback_path);
  // Creates the file (mode 0644, truncating) and writes the .gwt header; false with errno set.
  // The file stays locked (flock) while this process writes it: a file another live process is
  // writing is not truncated: false, errno EBUSY, and *taken set (the recorder picks another
  // name). Two processes given one name (a worker forked before CUDA was loaded, a job started
  // twice) so never write into one file.
  bool open_file(const std::string& path, bool* taken = nullptr);
  // One whole frame. The first frame written to a socket is kept (its Hello) for the fallback.
  bool write(const std::string& frame);
  // Flushes what the collector has not taken (a short bounded wait, then the fallback) and closes.
  void close();
  bool ok() const { return fd_ >= 0 && !failed_; }
  bool is_socket() const { return socket_; }
  // Where the stream went: the socket's path, or the file's (also after a fallback).
  const std::string& path() const { return path_; }
  // Set once the stream moved from the collector to the file: why ("stalled", "gone").
  const std::string& fell_back_because() const { return fell_back_because_; }
  const std::string& socket_path() const { return socket_path_; }

  static constexpr size_t kPendingLimit = 8 * 1024 * 1024;
  static constexpr int kExitDrainMs = 500;
  // Sent frames kept until the collector has read them: at most this much (a socket's buffers
  // hold far less, a few hundred KiB by default).
  static constexpr size_t kUnreadLimit = 8 * 1024 * 1024;

 private:
  bool write_all(int fd, const char* data, size_t size);
  // Sends as much of pending_ as the socket takes now; false when the collector is gone.
  bool send_pending();
  bool fall_back(const char* why);
  // Bytes the collector has not read yet (SIOCOUTQ); 0 when the socket cannot say.
  size_t unread_in_socket() const;
  // Drops from unread_ the frames the collector has read.
  void forget_read_frames();

  int fd_ = -1;
  bool socket_ = false;
  bool failed_ = false;
  std::string path_;
  std::string socket_path_, fallback_path_, fell_back_because_;
  std::string hello_;                 // the stream's first frame, for a file that takes over
  std::deque<std::string> pending_;   // whole frames not yet taken whole by the collector
  size_t pending_bytes_ = 0;
  size_t front_sent_ = 0;             // bytes of the first pending frame the collector already has
  // Frames sent whole that the collector may not have read yet: a collector killed loses what
  // its socket holds. Bounded by the socket's buffers, trimmed after every send.
  std::deque<std::string> unread_;
  size_t unread_bytes_ = 0;
};

}  // namespace gapwatch
