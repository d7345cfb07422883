// collector/connection.h: one traced process's connection: checks its stream frame by frame and
// writes the whole frames, as received, to its .gwt.
//
// Nothing is written before a valid Hello (first frame, wire version in range): only then is the
// file created, named from the Hello. Every later whole frame is written as soon as it has been
// decoded; a frame cut short by the peer is never written. Untrusted throughout: the decoder
// refuses corrupt frames and frames over 16 MiB, and the owner closes a connection whose
// feed() returns false, with the line closeLine() gives.
#pragma once

#include "reader/frame_decoder.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gapwatch::collector {

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  // `fd`: the accepted socket (owned); `peer_pid`: from SO_PEERCRED; `dir_fd`: the output dir.
  Connection(int id, int fd, int peer_pid, int dir_fd, Clock::time_point now);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  int id() const { return id_; }
  bool helloSeen() const { return hello_seen_; }

  // Reads what the socket has, at most `max_reads` reads (a few in the loop, so that one busy
  // peer cannot starve the others; many when the collector stops and drains every peer). False
  // when the connection is over: end of stream, an error, or a refused stream; closeReason()
  // says which.
  bool readAvailable(Clock::time_point now, int max_reads);

  // True when the peer has begun a frame (or not yet sent a Hello) and no whole frame came for
  // `timeout`: a peer too slow to keep, or one holding a connection open for nothing.
  bool tooSlow(Clock::time_point now, Clock::duration timeout) const;

  // The line logged when the connection is over ("closed: ..." with its totals).
  std::string closeLine(const std::string& reason) const;
  const std::string& closeReason() const { return close_reason_; }
  // The line logged once the Hello has been accepted.
  std::string openLine() const;

 private:
  bool feed(std::span<const uint8_t> bytes, Clock::time_point now);
  bool acceptHello(const v1::Frame& frame);
  void countBatch(const v1::EventBatch& batch);
  bool writeWholeFrames();
  bool refuse(std::string reason);
  std::string who() const;

  int id_;
  int fd_;
  int peer_pid_;
  int dir_fd_;
  FrameDecoder decoder_;
  // Received bytes not yet written, from stream offset raw_offset_; those up to the decoder's
  // wholeFramesEnd() are checked and go to the file.
  std::vector<uint8_t> raw_;
  uint64_t raw_offset_ = 0;
  Clock::time_point last_frame_;
  bool hello_seen_ = false;
  bool goodbye_seen_ = false;
  int file_fd_ = -1;
  std::string file_name_;
  uint32_t pid_ = 0;
  std::string host_;
  std::optional<int32_t> rank_;
  uint64_t bytes_received_ = 0;
  uint64_t events_ = 0;
  std::map<std::pair<int, uint64_t>, uint64_t> drops_;  // latest cumulative total per (source, id)
  std::string close_reason_;
};

}  // namespace gapwatch::collector
