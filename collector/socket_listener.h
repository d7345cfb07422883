// collector/socket_listener.h: where the collector listens and how that place is made safe.
//
// The socket's directory must be this user's alone (created 0700 when missing; an existing one
// that is a symlink, another user's or open to others is refused), so nobody else can plant or
// replace the socket. A socket file nobody listens on (a collector that died) is replaced; a live
// one means another collector runs there.
#pragma once

#include <string>

namespace gapwatch::collector {

// <gapwatch/default_socket.h>'s path, the one the injected library looks at:
// $XDG_RUNTIME_DIR/gapwatch/collector.sock, else /tmp/gapwatch-<euid>/collector.sock.
std::string defaultSocketPath();

// Creates `dir` (its last component only) 0700, or checks an existing one. False with *error.
bool ensurePrivateDirectory(const std::string& dir, std::string* error);

// The socket's directory checked (above), then a non-blocking listening socket bound at `path`.
// Returns the fd, or -1 with *error set (one line).
int listenOnSocket(const std::string& path, std::string* error);

}  // namespace gapwatch::collector
