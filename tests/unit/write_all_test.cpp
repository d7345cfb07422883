// <gapwatch/write_all.h>: the tree's one write loop (issue 21, item 5). Every byte arrives, in
// order, through short writes and writes interrupted by a signal; a peer gone is an error, not a
// SIGPIPE.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include <gapwatch/write_all.h>

namespace {

void on_signal(int) {}

}  // namespace

TEST_CASE("write_all: every byte through a small pipe, interrupted by signals") {
  // No SA_RESTART: a blocked write() returns EINTR (or a short count) when the signal lands.
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  REQUIRE(sigaction(SIGUSR1, &action, &previous) == 0);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  fcntl(fds[1], F_SETPIPE_SZ, 4096);
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 131 + (i >> 12));
  std::string got;
  std::atomic<bool> done{false};
  const pthread_t writer = pthread_self();
  std::thread reader([&] {
    char buffer[1000];
    for (;;) {
      pthread_kill(writer, SIGUSR1);
      const ssize_t n = read(fds[0], buffer, sizeof buffer);
      if (n <= 0) break;
      got.append(buffer, size_t(n));
    }
    done = true;
  });
  const bool ok = gapwatch::write_all(fds[1], data.data(), data.size());
  close(fds[1]);
  reader.join();
  close(fds[0]);
  sigaction(SIGUSR1, &previous, nullptr);
  CHECK(ok);
  CHECK(done.load());
  CHECK(got == data);
}

TEST_CASE("send_all: a peer gone is EPIPE, not SIGPIPE") {
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  close(pair[1]);
  const std::string data(100000, 'x');
  errno = 0;
  CHECK_FALSE(gapwatch::send_all(pair[0], data.data(), data.size()));
  CHECK(errno == EPIPE);
  close(pair[0]);
}

TEST_CASE("send_all: every byte to a live peer") {
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  const std::string data(300000, 'y');
  std::string got;
  std::thread reader([&] {
    char buffer[4096];
    for (ssize_t n; (n = read(pair[1], buffer, sizeof buffer)) > 0;) got.append(buffer, size_t(n));
  });
  CHECK(gapwatch::send_all(pair[0], data.data(), data.size()));
  shutdown(pair[0], SHUT_WR);
  reader.join();
  close(pair[0]);
  close(pair[1]);
  CHECK(got == data);
}
