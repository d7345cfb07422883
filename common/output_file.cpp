// common/output_file.cpp: see gapwatch/output_file.h.
#include <gapwatch/output_file.h>

#include <gapwatch/write_all.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
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

namespace {

// The directory part and the file part of `path` ("." for a bare name).
void splitPath(const std::string& path, std::string* dir, std::string* name) {
  const std::size_t slash = path.rfind('/');
  *dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  *name = slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool checkOutputPath(const std::string& path, std::string* error) {
  std::string dir, name;
  splitPath(path, &dir, &name);
  if (name.empty() || name == "." || name == "..") {
    *error = "not a file name";
    return false;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    *error = (errno == ENOENT ? "no such directory: " : std::string(strerror(errno)) + ": ") + dir;
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = "not a directory: " + dir;
    return false;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    *error = "cannot write in " + dir + ": " + strerror(errno);
    return false;
  }
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    *error = "is a directory";
    return false;
  }
  return true;
}

bool PendingOutputFile::open(const std::string& path, std::string* error) {
  abandon();
  std::string dir;
  splitPath(path, &dir, &name_);
  if (name_.empty()) {
    *error = "not a file name";
    return false;
  }
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    *error = "cannot open its directory: " + std::string(strerror(errno));
    return false;
  }
  temporary_ = "." + name_ + ".tmp-" + std::to_string(getpid());
  ::unlinkat(dir_fd_, temporary_.c_str(), 0);  // a leftover of this pid's own earlier run
  fd_ = ::openat(dir_fd_, temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    *error = strerror(errno);
    ::close(dir_fd_);
    dir_fd_ = -1;
    return false;
  }
  return true;
}

bool PendingOutputFile::commit(bool durable, std::string* error) {
  if (fd_ < 0) {
    *error = "not open";
    return false;
  }
  int failed = durable && ::fsync(fd_) != 0 ? errno : 0;
  if (!failed && ::renameat(dir_fd_, temporary_.c_str(), dir_fd_, name_.c_str()) != 0) failed = errno;
  if (!failed && durable && ::fsync(dir_fd_) != 0) failed = errno;
  if (::close(fd_) != 0 && !failed) failed = errno;
  fd_ = -1;
  if (failed) {
    *error = strerror(failed);
    abandon();
    return false;
  }
  ::close(dir_fd_);
  dir_fd_ = -1;
  return true;
}

void PendingOutputFile::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (dir_fd_ >= 0) {
    ::unlinkat(dir_fd_, temporary_.c_str(), 0);  // after a failed rename: still the temporary
    ::close(dir_fd_);
  }
  dir_fd_ = -1;
}

}  // namespace gapwatch
