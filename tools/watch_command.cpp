// tools/watch_command.cpp: see watch_command.h.
#include "tools/watch_command.h"

#include "collector/socket_listener.h"
#include "tools/report_terminal.h"
#include "tools/watch_screen.h"
#include "tools/watch_status.h"
#include "tools/watch_view.h"

#include <gapwatch/v1/stream.pb.h>
#include <gapwatch/wire_primitives.h>
#include <gapwatch/write_all.h>

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::cli {
namespace {

constexpr int kExitWatchFailed = 1;
// How long a peer may take to send its first status: a collector sends one at once, so only one
// that does not know StatusRequest (older, ignoring it) or something else entirely takes longer.
constexpr auto kFirstStatusTimeout = std::chrono::seconds(5);
// A status line is a few hundred bytes per process; this is far beyond any node.
constexpr std::size_t kMaxLineBytes = 16 << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string connectError(int error) {
  switch (error) {
    case ENOENT:
      return "no such socket (no collector there; start one with gapwatch collector)";
    case ECONNREFUSED:
      return "connection refused (no collector is listening there)";
    case EACCES:
    case EPERM:
      return "permission denied (the socket or its directory is another user's)";
    default:
      return std::strerror(error);
  }
}

// A connected socket, or -1 with *error.
int connectTo(const std::string& path, std::string* error) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    *error = "not a usable socket path (1 to " + std::to_string(sizeof address.sun_path - 1) + " bytes)";
    return -1;
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::strerror(errno);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    *error = connectError(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

// `<varint length><Frame{status_request}>`, the whole of what a watcher sends.
bool sendStatusRequest(int fd, std::string* error) {
  v1::Frame frame;
  frame.mutable_status_request();
  std::string body;
  frame.SerializeToString(&body);
  std::string bytes;
  wire::appendVarint(bytes, body.size());
  bytes += body;
  if (!send_all(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL)) {
    *error = std::strerror(errno);
    return false;
  }
  return true;
}

// The signals that end the view (and SIGWINCH, which redraws it) arrive on a signalfd, so the
// terminal is given back by ordinary code, not from a signal handler.
int signalFd() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&signals, s);
  if (::sigprocmask(SIG_BLOCK, &signals, nullptr) != 0) return -1;
  return ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
}

std::string localTimestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  return text;
}

void printLines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + '\n';
  std::cout << text << std::flush;
}

}  // namespace

int runWatch(const WatchOptions& options) {
  const std::string path = options.socket_path.empty() ? collector::defaultSocketPath() : options.socket_path;
  const std::string name = "gapwatch watch: " + path + ": ";
  std::string error;
  Fd socket_fd(connectTo(path, &error));
  if (socket_fd.get() < 0) {
    std::cerr << "gapwatch watch: cannot connect to " << path << ": " << error << '\n';
    return kExitWatchFailed;
  }
  if (!sendStatusRequest(socket_fd.get(), &error)) {
    std::cerr << name << "cannot send the status request: " << error << '\n';
    return kExitWatchFailed;
  }
  Fd signal_fd(signalFd());
  if (signal_fd.get() < 0) {
    std::cerr << "gapwatch watch: signalfd: " << std::strerror(errno) << '\n';
    return kExitWatchFailed;
  }

  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  const char* term = std::getenv("TERM");
  // A dumb terminal cannot move its cursor: it gets the plain blocks, like a pipe.
  const bool table = terminal && !(term != nullptr && std::strcmp(term, "dumb") == 0);
  const bool interactive = table && !options.once;
  WatchViewOptions view;
  view.terminal = table;
  view.colour = colourWanted(terminal, std::getenv("NO_COLOR"), term);

  std::optional<WatchStatus> latest;
  std::unique_ptr<WatchScreen> screen;
  const auto show = [&] {
    if (screen) {
      view.width = screen->columns();
      view.height = screen->rows();
      view.key_hint = screen->readsKeys();
      screen->draw(renderWatchView(*latest, view));
    } else {
      view.timestamp = localTimestamp();
      printLines(renderWatchView(*latest, view));
    }
  };
  // In the terminal form the last picture stays on the normal screen when the view ends.
  const auto leave = [&] {
    if (!screen) return;
    view.width = screen->columns();  // still cut, so that no line wraps; no longer limited in height
    view.height = 0;
    view.key_hint = false;
    screen.reset();
    if (latest) printLines(renderWatchView(*latest, view));
  };

  const auto deadline = std::chrono::steady_clock::now() + kFirstStatusTimeout;
  std::string buffer;
  for (;;) {
    std::vector<pollfd> fds = {{socket_fd.get(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}};
    if (screen && screen->readsKeys()) fds.push_back({STDIN_FILENO, POLLIN, 0});
    int timeout_ms = -1;
    if (!latest) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      timeout_ms = int(std::max<long long>(left.count(), 0));
    }
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      leave();
      std::cerr << "gapwatch watch: poll: " << std::strerror(errno) << '\n';
      return kExitWatchFailed;
    }
    if (ready == 0 && !latest) {
      std::cerr << name << "no status within 5 s (not a collector, or one older than this gapwatch that does not "
                   "serve gapwatch watch)\n";
      return kExitWatchFailed;
    }
    if (ready <= 0) continue;
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(signal_fd.get(), &info, sizeof info) > 0) {
        if (info.ssi_signo == SIGWINCH) {
          if (screen && latest) show();
        } else {
          leave();
          return 0;
        }
      }
    }
    if (fds.size() > 2 && (fds[2].revents & POLLIN)) {
      char key = 0;
      if (::read(STDIN_FILENO, &key, 1) == 1 && (key == 'q' || key == 'Q')) {
        leave();
        return 0;
      }
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char chunk[65536];
    const ssize_t n = ::recv(socket_fd.get(), chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      const int read_error = n < 0 ? errno : 0;
      leave();
      if (!latest) {
        std::cerr << name << "closed the connection without sending a status"
                  << (read_error ? std::string(" (") + std::strerror(read_error) + ")" : std::string())
                  << " (not a collector, or one older than this gapwatch that does not serve gapwatch watch)\n";
        return kExitWatchFailed;
      }
      std::cout << "gapwatch watch: the collector at " << path << " closed the connection (it stopped)" << std::endl;
      return 0;
    }
    buffer.append(chunk, std::size_t(n));
    // Several lines may have come at once: parse each, show only the newest.
    bool fresh = false;
    std::size_t start = 0;
    for (std::size_t end; (end = buffer.find('\n', start)) != std::string::npos; start = end + 1) {
      std::optional<WatchStatus> status = parseWatchStatus(std::string_view(buffer).substr(start, end - start), &error);
      if (!status) {
        leave();
        std::cerr << name << "what it sent is not a collector status (" << error << ")\n";
        return kExitWatchFailed;
      }
      latest = std::move(status);
      fresh = true;
    }
    buffer.erase(0, start);
    if (buffer.size() > kMaxLineBytes) {
      leave();
      std::cerr << name << "what it sent is not a collector status (a line over 16 MiB)\n";
      return kExitWatchFailed;
    }
    if (!fresh) continue;
    if (options.once) {
      printLines(renderWatchView(*latest, view));
      return 0;
    }
    if (interactive && !screen) screen = std::make_unique<WatchScreen>();
    show();
  }
}

}  // namespace gapwatch::cli
