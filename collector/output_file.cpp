// collector/output_file.cpp: see output_file.h.
#include "collector/output_file.h"

#include "collector/recording_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

namespace gapwatch::collector {

bool replaceOutputFile(int dir_fd, const std::string& name, const std::string& content, std::string* error) {
  const std::string temporary = "." + name + ".tmp-" + std::to_string(getpid());
  ::unlinkat(dir_fd, temporary.c_str(), 0);  // a leftover of this pid's own earlier run
  const int fd = ::openat(dir_fd, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = strerror(errno);
    return false;
  }
  const bool written = writeAll(fd, content.data(), content.size());
  const int saved = errno;
  ::close(fd);
  if (!written || ::renameat(dir_fd, temporary.c_str(), dir_fd, name.c_str()) != 0) {
    *error = strerror(written ? errno : saved);
    ::unlinkat(dir_fd, temporary.c_str(), 0);
    return false;
  }
  return true;
}

}  // namespace gapwatch::collector
