// collector/socket_listener.cpp: see socket_listener.h.
#include "collector/socket_listener.h"

#include "collector/collector_log.h"

#include <gapwatch/default_socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

namespace gapwatch::collector {
namespace {

std::string octal(unsigned mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%04o", mode & 07777);
  return text;
}

std::string parentOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool fillAddress(const std::string& path, sockaddr_un* addr, std::string* error) {
  if (path.empty() || path.size() >= sizeof addr->sun_path) {
    *error = "socket path " + path + " is empty or longer than " + std::to_string(sizeof addr->sun_path - 1) +
             " bytes";
    return false;
  }
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

}  // namespace

std::string defaultSocketPath() { return default_socket_path(); }

bool ensurePrivateDirectory(const std::string& dir, std::string* error) {
  const bool created = ::mkdir(dir.c_str(), 0700) == 0;
  if (!created && errno != EEXIST) {
    *error = "cannot create directory " + dir + ": " + strerror(errno);
    return false;
  }
  // Opened without following a symlink, then checked through the fd: what is checked is what
  // the socket will be bound in (short of someone who can already write the parent directory).
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      *error = "socket directory " + dir + " is a symlink; refusing it (remove it or choose another --socket)";
    } else {
      *error = "socket directory " + dir + " cannot be opened as a directory: " + strerror(errno);
    }
    return false;
  }
  // A fresh directory may have lost bits to the umask; 0700 is what it must be.
  if (created) ::fchmod(fd, 0700);
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!stat_ok) {
    *error = "cannot stat socket directory " + dir + ": " + strerror(errno);
    return false;
  }
  if (st.st_uid != geteuid()) {
    *error = "socket directory " + dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
             std::to_string(geteuid()) + "); refusing it";
    return false;
  }
  if ((st.st_mode & 07777) != 0700) {
    *error = "socket directory " + dir + " has permissions " + octal(st.st_mode) +
             ", not 0700; refusing it (chmod 700 it or choose another --socket)";
    return false;
  }
  return true;
}

int listenOnSocket(const std::string& path, std::string* error) {
  sockaddr_un addr;
  if (!fillAddress(path, &addr, error)) return -1;
  if (!ensurePrivateDirectory(parentOf(path), error)) return -1;

  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *error = path + " exists and is not a socket; not replacing it";
      return -1;
    }
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
      *error = std::string("socket: ") + strerror(errno);
      return -1;
    }
    const bool live = ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    const int connect_errno = errno;
    ::close(probe);
    if (live) {
      *error = "another collector is listening on " + path;
      return -1;
    }
    if (connect_errno != ECONNREFUSED && connect_errno != ENOENT) {
      *error = "cannot tell whether a collector listens on " + path + ": " + strerror(connect_errno);
      return -1;
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      *error = "cannot remove the stale socket " + path + ": " + strerror(errno);
      return -1;
    }
    logInfo("replaced the stale socket " + path + " (nobody was listening on it)");
  }

  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + strerror(errno);
    return -1;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = "cannot bind " + path + ": " + strerror(errno);
    ::close(fd);
    return -1;
  }
  if (::listen(fd, SOMAXCONN) != 0) {
    *error = "cannot listen on " + path + ": " + strerror(errno);
    ::close(fd);
    ::unlink(path.c_str());
    return -1;
  }
  return fd;
}

}  // namespace gapwatch::collector
