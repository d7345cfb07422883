// output_sink.h: where the frames go: a collector's Unix socket, or a .gwt file.
//
// Flusher thread only (and the exit path, after the flusher has stopped). A write that fails
// (disk full, collector gone) never reaches the user's program: no SIGPIPE (MSG_NOSIGNAL), no
// exception; the sink reports failure and the recorder counts what it could not deliver.
#pragma once

#include <string>

namespace gapwatch {

class OutputSink {
 public:
  ~OutputSink();
  // Connects to a collector at `path`; false when nobody listens there.
  bool connect_socket(const std::string& path);
  // Creates the file (mode 0644, truncating) and writes the .gwt header; false with errno set.
  bool open_file(const std::string& path);
  bool write(const std::string& bytes);
  void close();
  bool ok() const { return fd_ >= 0 && !failed_; }
  bool is_socket() const { return socket_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  bool socket_ = false;
  bool failed_ = false;
  std::string path_;
};

}  // namespace gapwatch
