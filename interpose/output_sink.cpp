#include "output_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gapwatch/recording_format.h>

namespace gapwatch {

OutputSink::~OutputSink() { close(); }

bool OutputSink::connect_socket(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return false;
  }
  fd_ = fd;
  socket_ = true;
  path_ = path;
  return true;
}

bool OutputSink::open_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  fd_ = fd;
  socket_ = false;
  path_ = path;
  std::string header(reinterpret_cast<const char*>(kFileMagic), sizeof kFileMagic);
  uint32_t v = kFileFormatVersion;
  for (int i = 0; i < 4; ++i) header.push_back(char((v >> (8 * i)) & 0xff));  // little-endian
  return write(header);
}

bool OutputSink::write(const std::string& bytes) {
  if (!ok()) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = socket_ ? ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL)
                        : ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed_ = true;
      return false;
    }
    done += size_t(n);
  }
  return true;
}

void OutputSink::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace gapwatch
