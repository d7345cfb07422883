// <gapwatch/default_socket.h>: where a collector listens when no --socket names a place, and so
// where the injected library looks for one when GAPWATCH_SOCKET is unset. One definition, for
// both sides: the collector (collector/socket_listener.cpp) and libgapwatch.so
// (interpose/settings.cpp); default_socket_test checks that they agree.
//
// $XDG_RUNTIME_DIR/gapwatch when XDG_RUNTIME_DIR is an absolute path (the XDG spec's rule: a
// relative one would be resolved against each process's own working directory), else
// /tmp/gapwatch-<euid>. The effective uid, not the real one: the collector accepts a peer whose
// SO_PEERCRED uid (the effective uid the peer connected with) is its own effective uid, and wants
// the socket's directory owned by that uid (the owner of a directory is its creator's effective
// uid). A process whose real and effective uids differ (a setuid program, one that called seteuid)
// so looks where a collector running as its effective uid listens, which is the only collector
// that would accept it.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace gapwatch {

// The socket's directory: made 0700 by the collector, checked (owner, mode) by both sides.
inline std::string default_socket_dir() {
  const char* runtime = getenv("XDG_RUNTIME_DIR");
  if (runtime && runtime[0] == '/') return std::string(runtime) + "/gapwatch";
  return "/tmp/gapwatch-" + std::to_string(geteuid());
}

inline std::string default_socket_path() { return default_socket_dir() + "/collector.sock"; }

// Whose the socket's directory must be, and whose the collector at the other end of a connection
// (both sides check the peer's SO_PEERCRED uid against it: collector/collector.cpp and
// interpose/output_sink.cpp).
inline uid_t default_socket_owner() { return geteuid(); }

}  // namespace gapwatch
