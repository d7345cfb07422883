// output_sink.h: where the frames go: a collector's Unix socket, or a .gwt file.
//
// Flusher thread only (and the exit path, after the flusher has stopped). A write that fails
// (disk full, collector gone) never reaches the user's program: no SIGPIPE (MSG_NOSIGNAL), no
// exception; the sink reports failure and the recorder counts what it could not deliver.
//
// Files: a recording is always a new file. It is created with O_EXCL|O_NOFOLLOW, so a link at the
// name is never followed and an existing file (another process's recording, an earlier run's) is
// never truncated or written into: the recording goes beside it, NAME-<pid>.gwt, then
// NAME-<pid>-1.gwt, ... (requested_path() and path() then differ, and the recorder says so). A
// write the disk refuses in mid-frame (ENOSPC, EFBIG, EIO) is cut back to the last whole frame,
// so the file reads as a recording that ended early, never as a corrupt one.
//
// Socket: a collector may stall or go away while the job runs, and the flusher (or the exiting
// thread, which writes Goodbye) must never wait for it. So the socket is non-blocking: what it
// does not take at once waits in a bounded buffer of whole frames (kPendingLimit), sent on the
// next write. Frames sent are kept until the collector's receipt (<gapwatch/recording_format.h>)
// says they are in its recording. When the buffer would overflow, or the collector is gone (it
// closed the connection, EPIPE, ECONNRESET), or at close its receipt does not cover the Goodbye
// within kExitDrainMs, the sink falls back to the local .gwt file: the file header, a copy of the
// stream's Hello, then every frame without a receipt, and from then on everything. So the
// collector's recording and the file together have every event (a batch or two may be in both,
// with the same sequence numbers, when the collector died between writing them and its receipt).
//
// A collector that sends no receipts (older than receipts) is trusted as far as the kernel can
// tell: a frame counts as taken once SIOCOUTQ says the collector has read it, and only while the
// connection is still open after that was asked (the kernel empties a dead collector's queue,
// which SIOCOUTQ then reports as read, but marks the connection closed first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include <gapwatch/recording_format.h>

namespace gapwatch {

enum class FallbackReason : uint8_t {
  kNone,
  kStalled,  // the collector stopped taking the stream (the buffer filled, or no receipt at exit)
  kGone,     // the collector closed the connection or died
};

class OutputSink {
 public:
  ~OutputSink();
  // Connects to a collector at `path`; false when nobody listens there. `fallback_path` is the
  // file the stream continues in if the collector stalls or goes away.
  bool connect_socket(const std::string& path, const std::string& fallback_path);
  // Creates a new recording at `path` or beside it (see above) and writes the .gwt header; false
  // with errno set when no file could be made (EEXIST after kMaxNameTries names).
  bool open_file(const std::string& path);
  // One whole frame. The first frame written to a socket is kept (its Hello) for the fallback.
  bool write(const std::string& frame);
  // Flushes what the collector has not acknowledged (a wait of at most `drain_ms`, then the
  // fallback) and closes.
  void close(int drain_ms = kExitDrainMs);
  bool ok() const { return fd_ >= 0 && !failed_; }
  // A write or the fallback file's creation failed: what follows is lost (error() says why).
  bool failed() const { return failed_; }
  int error() const { return error_; }
  bool is_socket() const { return socket_; }
  // The socket's or the file's descriptor (-1 once closed): a forked child closes its copy.
  int fd() const { return fd_; }
  // Where the stream went: the socket's path, or the file's (also after a fallback).
  const std::string& path() const { return path_; }
  // The file name asked for, when the stream went to a file; path() differs when that existed.
  const std::string& requested_path() const { return requested_path_; }
  // Set once the stream moved from the collector to the file.
  FallbackReason fell_back_because() const { return fell_back_because_; }
  const std::string& socket_path() const { return socket_path_; }
  // Whether the collector has sent a receipt (it follows the receipt rule, not SIOCOUTQ's).
  bool collector_sends_receipts() const { return receipts_; }

  static constexpr size_t kPendingLimit = 8 * 1024 * 1024;
  // How long close() waits for the collector to take and acknowledge the stream's tail. 5 s, not
  // the 1 s it was: 64 processes ending together against one collector on a machine whose two
  // cores other work kept busy (stress-ng --cpu 2, CI's load) missed 1 s now and then, all but one
  // of them at once (fault_injection_test's 64-process case: 1 run in 3 here), and wrote their
  // tails to fallback files; at 5 s, none in the runs tried. Only a collector that stopped reading
  // (stopped, hung) makes an exit wait that long; one that died or closed is known at once.
  static constexpr int kExitDrainMs = 5000;
  // Sent frames kept until the collector has them: at most this much (a socket's buffers hold
  // far less, a few hundred KiB by default).
  static constexpr size_t kUnreadLimit = 8 * 1024 * 1024;
  static constexpr int kMaxNameTries = 1000;

 private:
  // Appends to the file; on failure cuts the file back to its last whole frame and fails the sink.
  bool append_to_file(const char* data, size_t size);
  // Sends as much of pending_ as the socket takes now; false when the collector is gone.
  bool send_pending();
  // Reads the receipts that have come; false when the collector closed the connection or it failed.
  bool read_receipts();
  bool fall_back(FallbackReason why);
  // Bytes the collector has not read yet (SIOCOUTQ); 0 when the socket cannot say.
  size_t unread_in_socket() const;
  // Drops from unread_ the frames the collector has (by its receipts, else by SIOCOUTQ).
  void forget_read_frames();
  void forget_front();

  int fd_ = -1;
  bool socket_ = false;
  bool failed_ = false;
  int error_ = 0;  // errno of the failure that set failed_
  std::string path_, requested_path_;
  std::string socket_path_, fallback_path_;
  FallbackReason fell_back_because_ = FallbackReason::kNone;
  uint64_t file_bytes_ = 0;           // bytes in the file, all whole frames (the cut-back point)
  std::string hello_;                 // the stream's first frame, for a file that takes over
  std::deque<std::string> pending_;   // whole frames not yet taken whole by the collector
  size_t pending_bytes_ = 0;
  size_t front_sent_ = 0;             // bytes of the first pending frame the collector already has
  // Frames sent whole that the collector has not acknowledged: a collector killed loses what its
  // socket still holds, and what it read but had not yet written. Trimmed after every send.
  std::deque<std::string> unread_;
  size_t unread_bytes_ = 0;
  uint64_t forgotten_ = 0;            // stream bytes before unread_.front(): acknowledged, let go
  // Receipts: the latest (stream bytes in the collector's recording), and one read in part.
  bool receipts_ = false;
  bool collector_closed_ = false;
  uint64_t receipt_ = 0;
  unsigned char receipt_part_[kReceiptBytes] = {};
  size_t receipt_fill_ = 0;
};

}  // namespace gapwatch
