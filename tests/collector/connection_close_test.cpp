// tests/collector/connection_close_test.cpp: how a Connection says the way it ended
// (collector/connection.h): the log's level comes from CloseSeverity, set where the reason is
// decided, never from the reason's text (issue 21, item 7).

#include <catch2/catch.hpp>

#include "collector/collector_log.h"
#include "collector/connection.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using gapwatch::collector::CloseSeverity;
using gapwatch::collector::Connection;

struct Peer {
  int fds[2] = {-1, -1};
  int dir_fd = -1;
  std::string dir;
  Peer() {
    gapwatch::collector::silenceLog();
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    char path[] = "/tmp/gapwatch-connection-test-XXXXXX";
    REQUIRE(::mkdtemp(path) != nullptr);
    dir = path;
    dir_fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir_fd >= 0);
  }
  ~Peer() {
    if (fds[1] >= 0) ::close(fds[1]);
    ::close(dir_fd);
    ::rmdir(dir.c_str());  // nothing is written before a Hello
  }
};

}  // namespace

TEST_CASE("a refused stream ends as a warning") {
  Peer peer;
  Connection c(1, peer.fds[0], ::getpid(), peer.dir_fd, {}, Connection::Clock::now());
  const unsigned char not_a_frame[12] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  REQUIRE(::write(peer.fds[1], not_a_frame, sizeof not_a_frame) == ssize_t(sizeof not_a_frame));
  CHECK_FALSE(c.readAvailable(Connection::Clock::now(), 4));
  CHECK(c.closeReason().rfind("refused: ", 0) == 0);
  CHECK(c.closeSeverity() == CloseSeverity::kWarning);
}

TEST_CASE("a peer that goes away before a Hello ends as information") {
  Peer peer;
  Connection c(2, peer.fds[0], ::getpid(), peer.dir_fd, {}, Connection::Clock::now());
  ::close(peer.fds[1]);
  peer.fds[1] = -1;
  CHECK_FALSE(c.readAvailable(Connection::Clock::now(), 4));
  CHECK(c.closeReason() == "ended before a Hello");
  CHECK(c.closeSeverity() == CloseSeverity::kInfo);
}
