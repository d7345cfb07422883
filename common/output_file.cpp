// common/output_file.cpp: see gapwatch/output_file.h.
#include <gapwatch/output_file.h>

#include <gapwatch/write_all.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

namespace gapwatch {

int commitTemporaryFile(int file_fd, int dir_fd, const std::string& temporary, const std::string& name,
                        unsigned rename_flags) {
  if (::fsync(file_fd) != 0) return errno;
  if (::renameat2(dir_fd, temporary.c_str(), dir_fd, name.c_str(), rename_flags) != 0) return errno;
  // The rename is an entry in the directory: durable only once the directory is.
  if (::fsync(dir_fd) != 0) return errno;
  return 0;
}

bool replaceOutputFile(int dir_fd, const std::string& name, const std::string& content, std::string* error) {
  const std::string temporary = "." + name + ".tmp-" + std::to_string(getpid());
  ::unlinkat(dir_fd, temporary.c_str(), 0);  // a leftover of this pid's own earlier run
  const int fd = ::openat(dir_fd, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = strerror(errno);
    return false;
  }
  int failed = gapwatch::write_all(fd, content.data(), content.size()) ? 0 : errno;
  if (failed == 0) failed = commitTemporaryFile(fd, dir_fd, temporary, name, 0);
  if (::close(fd) != 0 && failed == 0) failed = errno;
  if (failed != 0) {
    *error = strerror(failed);
    ::unlinkat(dir_fd, temporary.c_str(), 0);  // nothing there once the rename was done
    return false;
  }
  return true;
}

}  // namespace gapwatch
