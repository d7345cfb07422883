// reader/byte_source.cpp: see byte_source.h.
#include "reader/byte_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gapwatch {

FileByteSource::FileByteSource(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) failure_ = std::strerror(errno);
}

FileByteSource::~FileByteSource() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t FileByteSource::read(std::span<uint8_t> buffer) {
  if (fd_ < 0 || buffer.empty()) return 0;
  for (;;) {
    const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    // A directory opens fine and fails here (EISDIR): report it like any other read error.
    failure_ = std::strerror(errno);
    return 0;
  }
}

std::size_t MemoryByteSource::read(std::span<uint8_t> buffer) {
  const std::size_t n = std::min(buffer.size(), bytes_.size() - position_);
  std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(position_), n, buffer.begin());
  position_ += n;
  return n;
}

}  // namespace gapwatch
