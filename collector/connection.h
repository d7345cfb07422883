// collector/connection.h: one connection to the collector: a traced process, whose stream it checks
// frame by frame, writes whole to its .gwt and analyses live (live_process.h); or, when the first
// frame is a StatusRequest, a live view (`gapwatch watch`) that the collector then hands its status.
//
// The collector's one message back to a process is a receipt (<gapwatch/recording_format.h>): after
// frames are written, how much of the stream the file holds.
//
// Nothing is written before a valid Hello (first frame, wire version in range): only then is the
// file created, named from the Hello. Every later whole frame is written as soon as it has been
// decoded; a frame cut short by the peer is never written. Untrusted throughout: the decoder
// refuses corrupt frames and frames over 16 MiB, and the owner closes a connection whose
// readAvailable() returns false, with the line closeLine() gives.
#pragma once

#include "analysis/analysis_result.h"
#include "collector/live_process.h"
#include "reader/frame_decoder.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gapwatch::collector {

// What a closed connection's log line is: a warning when the peer or the system did something
// wrong (refused, a read error, too slow), information otherwise. Set where the reason is decided,
// never read back from the reason's text.
enum class CloseSeverity { kInfo, kWarning };

// A traced process whose connection is over: what the collector reports of it.
struct FinishedProcess {
  std::string file;  // the .gwt's name in the output directory
  uint32_t pid = 0;
  std::string host;
  std::optional<int32_t> rank;
  uint64_t events = 0, drops = 0, bytes = 0;
  ReadResult read;  // what reading the file finds
  analysis::ProcessOutcome outcome;
};

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  // `fd`: the accepted socket (owned); `peer_pid`: from SO_PEERCRED; `dir_fd`: the output dir.
  Connection(int id, int fd, int peer_pid, int dir_fd, const analysis::AnalysisOptions& options, Clock::time_point now);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  int id() const { return id_; }
  bool helloSeen() const { return hello_seen_; }
  // The process sent its Goodbye: it has ended, whether or not the connection closes.
  bool goodbyeSeen() const { return goodbye_seen_; }
  // The peer's first frame was a StatusRequest: readAvailable() returned false, and the owner
  // takes the socket (releaseFd) for a StatusWatcher.
  bool wantsStatus() const { return wants_status_; }
  int releaseFd();

  // Reads what the socket has, at most `max_reads` reads (a few in the loop, so that one busy
  // peer cannot starve the others; many when the collector stops and drains every peer). False
  // when the connection is over: end of stream, an error, a refused stream (closeReason() says
  // which), or a status request.
  bool readAvailable(Clock::time_point now, int max_reads);

  // True when the peer has begun a frame (or not yet sent a Hello) and no whole frame came for
  // `timeout`: a peer too slow to keep, or one holding a connection open for nothing.
  bool tooSlow(Clock::time_point now, Clock::duration timeout) const;

  // The line logged when the connection is over ("closed: ..." with its totals).
  std::string closeLine(const std::string& reason) const;
  const std::string& closeReason() const { return close_reason_; }
  CloseSeverity closeSeverity() const { return close_severity_; }
  // The line logged once the Hello has been accepted.
  std::string openLine() const;

  // A process's identity and the numbers so far (helloSeen() only).
  uint32_t pid() const { return pid_; }
  const std::string& host() const { return host_; }
  std::optional<int32_t> rank() const { return rank_; }
  const std::string& fileName() const { return file_name_; }
  uint64_t events() const { return live_ ? live_->events() : 0; }
  uint64_t drops() const { return live_ ? live_->drops() : 0; }
  uint64_t bytesReceived() const { return bytes_received_; }
  analysis::ProcessAnalysis snapshot() const { return live_ ? live_->snapshot() : analysis::ProcessAnalysis{}; }

  // Once the connection is over (helloSeen() only; call once): the process's final outcome.
  FinishedProcess finishProcess();

 private:
  bool feed(std::span<const uint8_t> bytes, Clock::time_point now);
  bool acceptHello(const v1::Frame& frame);
  bool writeWholeFrames();
  // Tells the process how much of its stream is now in the recording (a receipt,
  // <gapwatch/recording_format.h>), so that it can forget those frames and, at exit, knows that
  // nothing it sent is lost if this collector dies afterwards.
  void sendReceipt(Clock::time_point now);
  // Writes the checked bytes before file offset `end` (a frame boundary).
  bool writeWholeFramesBefore(uint64_t end);
  bool refuse(std::string reason);
  std::string who() const;

  int id_;
  int fd_;
  int peer_pid_;
  int dir_fd_;
  analysis::AnalysisOptions options_;
  FrameDecoder decoder_;  // offsets are file offsets: the file's frames begin after its header
  std::unique_ptr<LiveProcess> live_;  // from the Hello on
  // Received bytes not yet written, from file offset raw_offset_; those up to the decoder's
  // wholeFramesEnd() are checked and go to the file.
  std::vector<uint8_t> raw_;
  uint64_t raw_offset_;
  Clock::time_point last_frame_;
  bool hello_seen_ = false;
  bool goodbye_seen_ = false;
  bool wants_status_ = false;
  uint64_t frames_ = 0;  // whole frames, as the reader counts them (skipped ones not)
  int file_fd_ = -1;
  std::string file_name_;
  uint32_t pid_ = 0;
  std::string host_;
  std::optional<int32_t> rank_;
  uint64_t bytes_received_ = 0;
  std::string close_reason_;
  CloseSeverity close_severity_ = CloseSeverity::kInfo;
  static constexpr Clock::duration kReceiptInterval = std::chrono::milliseconds(10);
  uint64_t receipted_offset_ = 0;  // file offset the last receipt sent covers (0: none yet)
  Clock::time_point last_receipt_{};
};

}  // namespace gapwatch::collector
