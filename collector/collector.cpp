// collector/collector.cpp: see collector.h. Why one poll() loop rather than a thread per
// connection: a connection's work is small (check frames, write them), the number of connections
// is that of a node's processes (tens), and one thread needs no locks around the log, the output
// directory or the shutdown; poll() is enough at that count.
#include "collector/collector.h"

#include "collector/collector_log.h"
#include "collector/connection.h"
#include "collector/socket_listener.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <vector>

namespace gapwatch::collector {
namespace {

using Clock = Connection::Clock;

// Reads per ready connection and loop turn (64 KiB each): one busy peer cannot starve the others.
constexpr int kReadsPerTurn = 4;
// At a stop, what a peer has already sent is read up to this many reads (64 MiB): enough for
// everything a socket buffer holds, bounded for a peer that never stops sending.
constexpr int kReadsAtStop = 1024;

class Collector {
 public:
  Collector(const CollectorOptions& options, int listen_fd, int signal_fd, int dir_fd)
      : options_(options), listen_fd_(listen_fd), signal_fd_(signal_fd), dir_fd_(dir_fd) {}

  // Returns the exit code.
  int run() {
    const auto timeout = std::chrono::nanoseconds(options_.slow_peer_timeout_ns);
    // The slow-peer check runs a few times per timeout, at most once a second.
    const int tick_ms = int(std::clamp<uint64_t>(options_.slow_peer_timeout_ns / 4'000'000, 10, 1000));
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({signal_fd_, POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (const auto& c : connections_) fds.push_back({c->fd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), tick_ms) < 0 && errno != EINTR) {
        logWarning(std::string("poll: ") + strerror(errno));
        return 1;
      }
      const auto now = Clock::now();
      if (fds[0].revents & POLLIN) {
        signalfd_siginfo info{};
        if (::read(signal_fd_, &info, sizeof info) > 0) {
          logInfo(std::string("stopping on ") + strsignal(int(info.ssi_signo)));
        }
        stop();
        return 0;
      }
      // Connections first, so that the fds[] indices still match connections_.
      for (std::size_t i = 0; i < connections_.size(); ++i) {
        if (fds[i + 2].revents == 0) continue;
        if (!connections_[i]->readAvailable(now, kReadsPerTurn)) finish(i, connections_[i]->closeReason());
      }
      for (std::size_t i = 0; i < connections_.size(); ++i) {
        if (connections_[i] && connections_[i]->tooSlow(now, timeout)) {
          finish(i, "too slow: no whole frame for " + std::to_string(options_.slow_peer_timeout_ns / 1'000'000) + " ms");
        }
      }
      connections_.erase(std::remove(connections_.begin(), connections_.end(), nullptr), connections_.end());
      if (fds[1].revents & POLLIN) acceptAll(now);
      if (options_.exit_when_idle && processes_seen_ > 0 && connections_.empty()) {
        logInfo("every process has disconnected: stopping (--exit-when-idle)");
        stop();
        return 0;
      }
    }
  }

 private:
  void acceptAll(Clock::time_point now) {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
          logWarning(std::string("accept: ") + strerror(errno));
        }
        return;
      }
      const int id = ++next_id_;
      ucred cred{};
      socklen_t size = sizeof cred;
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0) {
        logWarning("connection " + std::to_string(id) + ": refused: no peer credentials (" + strerror(errno) + ")");
        ::close(fd);
        continue;
      }
      if (cred.uid != geteuid()) {
        logWarning("connection " + std::to_string(id) + ": pid " + std::to_string(cred.pid) + ": refused: peer uid " +
                   std::to_string(cred.uid) + " is not this collector's uid " + std::to_string(geteuid()));
        ::close(fd);
        continue;
      }
      connections_.push_back(std::make_unique<Connection>(id, fd, int(cred.pid), dir_fd_, now));
    }
  }

  // Logs and drops connection i (its slot becomes null until the sweep).
  void finish(std::size_t i, const std::string& reason) {
    auto& c = connections_[i];
    if (!c) return;
    if (c->helloSeen()) ++processes_seen_;
    const std::string line = c->closeLine(reason);
    if (reason.rfind("refused", 0) == 0 || reason.rfind("too slow", 0) == 0 || reason.rfind("read error", 0) == 0) {
      logWarning(line);
    } else {
      logInfo(line);
    }
    c.reset();
  }

  // What each peer has already sent is read and its whole frames written before its file closes.
  void stop() {
    const auto now = Clock::now();
    // A process that connected, sent everything and exited just before the stop may still wait
    // in the listen backlog (the signal is handled before the accept in the same loop turn);
    // `gapwatch profile` stops its collector right after the last process exits.
    acceptAll(now);
    for (std::size_t i = 0; i < connections_.size(); ++i) {
      if (!connections_[i]) continue;
      if (!connections_[i]->readAvailable(now, kReadsAtStop)) {
        finish(i, connections_[i]->closeReason());
      } else {
        finish(i, "collector stopping");
      }
    }
    connections_.clear();
  }

  const CollectorOptions& options_;
  int listen_fd_;
  int signal_fd_;
  int dir_fd_;
  std::vector<std::unique_ptr<Connection>> connections_;
  int next_id_ = 0;
  uint64_t processes_seen_ = 0;
};

}  // namespace

int runCollector(const CollectorOptions& options) {
  const std::string socket_path = options.socket_path.empty() ? defaultSocketPath() : options.socket_path;
  int dir_fd = ::open(options.output_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    std::cerr << "gapwatch collector: output directory " << options.output_dir << ": " << strerror(errno) << '\n';
    return 1;
  }
  // Blocked before anything else so a signal sent as soon as the socket exists is not lost; the
  // signalfd hands them to the loop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  int signal_fd = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) {
    std::cerr << "gapwatch collector: signalfd: " << strerror(errno) << '\n';
    ::close(dir_fd);
    return 1;
  }
  std::string error;
  int listen_fd = listenOnSocket(socket_path, &error);
  if (listen_fd < 0) {
    std::cerr << "gapwatch collector: " << error << '\n';
    ::close(signal_fd);
    ::close(dir_fd);
    return 1;
  }
  logInfo("listening on " + socket_path + ", recordings to " + options.output_dir);
  const int code = Collector(options, listen_fd, signal_fd, dir_fd).run();
  ::close(listen_fd);
  ::unlink(socket_path.c_str());
  ::close(signal_fd);
  ::close(dir_fd);
  logInfo("stopped");
  return code;
}

}  // namespace gapwatch::collector
