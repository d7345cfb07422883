// collector/collector.cpp: see collector.h. Why one poll() loop rather than a thread per
// connection: a connection's work is small (check frames, write them), the number of connections
// is that of a node's processes (tens), and one thread needs no locks around the log, the output
// directory or the shutdown; poll() is enough at that count.
#include "collector/collector.h"

#include "collector/collector_log.h"
#include "collector/collector_status.h"
#include "collector/connection.h"
#include "collector/metrics_exposition.h"
#include "collector/metrics_server.h"
#include <gapwatch/output_file.h>
#include "collector/socket_listener.h"
#include "collector/status_json.h"
#include "collector/status_watcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace gapwatch::collector {
namespace {

using Clock = Connection::Clock;

// Reads per ready connection and loop turn (64 KiB each): one busy peer cannot starve the others.
constexpr int kReadsPerTurn = 4;
// At a stop, what a peer has already sent is read up to this many reads (64 MiB): enough for
// everything a socket buffer holds, bounded for a peer that never stops sending.
constexpr int kReadsAtStop = 1024;
// How often the live status is built and sent (gapwatch watch refreshes at this pace).
constexpr auto kStatusPeriod = std::chrono::seconds(1);

// True when a thread of process `pid` is stopped: by a signal (state T) or by a tracer (t). Any
// thread, not only the first: a debugger may stop the one that was sending.
bool processIsStopped(int pid) {
  if (pid <= 0) return false;
  const std::string tasks_path = "/proc/" + std::to_string(pid) + "/task";
  DIR* tasks = ::opendir(tasks_path.c_str());
  if (!tasks) return false;
  bool stopped = false;
  while (dirent* task = ::readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream stat(tasks_path + "/" + task->d_name + "/stat");
    std::string text;
    std::getline(stat, text);
    // "pid (comm) S ...": the name may hold spaces and parentheses; the state follows the last ')'.
    const std::size_t close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size()) {
      const char state = text[close + 2];
      if (state == 'T' || state == 't') stopped = true;
    }
    if (stopped) break;
  }
  ::closedir(tasks);
  return stopped;
}

// Processes in reports and in the status: by rank, those without one last, then by pid and file.
auto processOrder(const std::optional<int32_t>& rank, uint32_t pid, const std::string& file) {
  return std::make_tuple(!rank.has_value(), rank.value_or(0), pid, file);
}

// A process that has ended: its outcome for the run's report, and its own final analysis.
struct EndedProcess {
  int connection = 0;
  FinishedProcess process;
  std::optional<analysis::ProcessAnalysis> analysis;  // none when the recording had nothing to show
};

class Collector {
 public:
  Collector(const CollectorOptions& options, const std::string& socket_path, int listen_fd, int signal_fd, int dir_fd,
            MetricsServer* metrics)
      : options_(options),
        socket_path_(socket_path),
        listen_fd_(listen_fd),
        signal_fd_(signal_fd),
        dir_fd_(dir_fd),
        metrics_(metrics),
        started_(Clock::now()),
        reserve_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

  ~Collector() {
    if (reserve_fd_ >= 0) ::close(reserve_fd_);
  }

  // Returns the exit code.
  int run() {
    const auto timeout = std::chrono::nanoseconds(options_.slow_peer_timeout_ns);
    // The slow-peer check runs a few times per timeout, at most once a second.
    const int tick_ms = int(std::clamp<uint64_t>(options_.slow_peer_timeout_ns / 4'000'000, 10, 1000));
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({signal_fd_, POLLIN, 0});
      // Out of descriptors with no reserve to refuse with, the listening socket is left out of the
      // poll for a moment (a negative fd is ignored), else it stays readable and the loop spins.
      const bool accepting = Clock::now() >= accept_paused_until_;
      fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
      for (const auto& c : connections_) fds.push_back({c->fd(), POLLIN, 0});
      const std::size_t first_watcher = fds.size();
      for (const auto& w : watchers_) {
        fds.push_back({w->fd(), short(POLLIN | (w->wantsWrite() ? POLLOUT : 0)), 0});
      }
      // With processes waiting for their end-of-process work the poll only looks, so that the
      // work goes on between turns that read.
      const int wait_ms = ending_.empty() ? std::min(tick_ms, 250) : 0;
      if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) {
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
      // Watchers and connections first, so that the fds[] indices still match the vectors.
      for (std::size_t i = 0; i < watchers_.size(); ++i) {
        const short revents = fds[first_watcher + i].revents;
        if (revents == 0) continue;
        const bool keep = ((revents & POLLIN) == 0 || watchers_[i]->drainInput()) &&
                          ((revents & POLLOUT) == 0 || watchers_[i]->flush()) && (revents & (POLLERR | POLLNVAL)) == 0;
        if (!keep) watchers_[i].reset();
      }
      watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), nullptr), watchers_.end());
      for (std::size_t i = 0; i < connections_.size(); ++i) {
        if (fds[i + 2].revents == 0) continue;
        if (connections_[i]->readAvailable(now, kReadsPerTurn)) {
          // A process that said Goodbye has ended even while its connection stays open: a child it
          // forked may hold a copy of the socket (an older library, or a child forked some other
          // way), and would otherwise keep it "running" and --exit-when-idle waiting until it exits.
          if (connections_[i]->goodbyeSeen()) retire(i, "ended", CloseSeverity::kInfo);
          continue;
        }
        if (connections_[i]->wantsStatus()) {
          watchers_.push_back(std::make_unique<StatusWatcher>(connections_[i]->releaseFd()));
          peers_.erase(connections_[i]->id());
          connections_[i].reset();
          sendStatus(now, watchers_.back().get());  // at once, not at the next period
          continue;
        }
        retire(i, connections_[i]->closeReason(), connections_[i]->closeSeverity());
      }
      for (std::size_t i = 0; i < connections_.size(); ++i) {
        if (connections_[i] && connections_[i]->tooSlow(now, timeout) && !keptWhileStopped(*connections_[i], now, timeout)) {
          finish(i, "too slow: no whole frame for " + std::to_string(options_.slow_peer_timeout_ns / 1'000'000) + " ms",
                 CloseSeverity::kWarning);
        }
      }
      connections_.erase(std::remove(connections_.begin(), connections_.end(), nullptr), connections_.end());
      if (fds[1].revents & POLLIN) acceptAll(now);
      finishOneEnded();
      // A process that ended shows as ended at the next scrape, not a period later.
      if (now - last_status_ >= kStatusPeriod || metrics_stale_) sendStatus(now, nullptr);
      if (options_.exit_when_idle && processes_seen_ > 0 && connections_.empty() && ending_.empty()) {
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
        if (errno == EMFILE || errno == ENFILE) {
          if (refuseWithoutDescriptors(errno, now)) continue;
          return;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
          logWarning(std::string("accept: ") + strerror(errno));
        }
        return;
      }
      if (out_of_descriptors_) {
        logInfo("accept: descriptors free again; " + std::to_string(refused_without_descriptors_) +
                " connection(s) refused meanwhile");
        out_of_descriptors_ = false;
        refused_without_descriptors_ = 0;
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
      connections_.push_back(std::make_unique<Connection>(id, fd, int(cred.pid), dir_fd_, options_.analysis, now));
      peers_[id].pid = int(cred.pid);
    }
  }

  // accept() failed with EMFILE or ENFILE. The waiting peer is refused at once, by closing it,
  // with the descriptor held in reserve for this (the library then writes its own file: docs/
  // collector.md, "Resource limits"), so that it neither waits in the backlog nor keeps the
  // listening socket readable. Logged once per episode. True when a peer was refused and the next
  // may be; false when there is no reserve, and the socket is left out of the poll for a moment.
  bool refuseWithoutDescriptors(int error, Clock::time_point now) {
    if (!out_of_descriptors_) {
      logWarning(std::string("accept: ") + strerror(error) +
                 ": refusing new connections until descriptors are free (raise the collector's descriptor limit, "
                 "ulimit -n)");
      out_of_descriptors_ = true;
    }
    if (reserve_fd_ >= 0) {
      ::close(reserve_fd_);
      reserve_fd_ = -1;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        ::close(fd);
        ++refused_without_descriptors_;
      }
      reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd >= 0 && reserve_fd_ >= 0) return true;
    }
    accept_paused_until_ = now + std::chrono::milliseconds(100);
    return false;
  }

  // A peer whose process is stopped (SIGSTOP, a debugger, a checkpoint) is not a slow one: it is
  // kept for as long as it is stopped, whatever it sent, and once it runs again it has the whole
  // timeout anew (docs/collector.md, "Connections"). Logged once per stop.
  bool keptWhileStopped(const Connection& c, Clock::time_point now, Clock::duration timeout) {
    auto peer = peers_.find(c.id());
    if (peer == peers_.end()) return false;
    PeerProcess& p = peer->second;
    if (processIsStopped(p.pid)) {
      if (!p.stop_logged) {
        logInfo("connection " + std::to_string(c.id()) + ": pid " + std::to_string(p.pid) +
                ": the process is stopped (a signal, a debugger): kept past the slow-peer timeout while it is");
        p.stop_logged = true;
      }
      p.last_seen_stopped = now;
      return true;
    }
    p.stop_logged = false;
    return p.last_seen_stopped && now - *p.last_seen_stopped <= timeout;
  }

  // Connection i has ended (its slot becomes null until the sweep); what its end costs the
  // collector (the analysis's last steps, its report, two fsyncs) waits in ending_. Many
  // processes end at once (the ranks of a job), each waiting a bounded time for the receipt of its
  // Goodbye (1 s then, 5 s now: docs/recording-format.md, "Receipts"): done here, in the turn that read it, that work
  // kept every later connection unread behind it, and with reports on a disk that syncs in 10 ms,
  // 41 of 64 processes ending together missed the bound and wrote the rest of their stream to a
  // file of their own. The receipt went out with the Goodbye's read; the rest can wait.
  void retire(std::size_t i, const std::string& reason, CloseSeverity severity) {
    auto& c = connections_[i];
    if (!c) return;
    ending_.push_back({std::move(c), reason, severity});
  }

  // One ended process's work per loop turn, so that a turn that reads comes between any two.
  void finishOneEnded() {
    if (ending_.empty()) return;
    Ending e = std::move(ending_.front());
    ending_.pop_front();
    finish(e.connection, e.reason, e.severity);
  }

  void finish(std::size_t i, const std::string& reason, CloseSeverity severity) {
    finish(connections_[i], reason, severity);
  }

  // Logs and drops the connection.
  void finish(std::unique_ptr<Connection>& c, const std::string& reason, CloseSeverity severity) {
    if (!c) return;
    peers_.erase(c->id());
    const std::string line = c->closeLine(reason);
    if (severity == CloseSeverity::kWarning) {
      logWarning(line);
    } else {
      logInfo(line);
    }
    if (c->helloSeen()) {
      ++processes_seen_;
      endProcess(c->id(), c->finishProcess());
    }
    c.reset();
  }

  // The process's own report, beside its recording, and what the run's report and the status keep.
  void endProcess(int connection, FinishedProcess process) {
    EndedProcess ended;
    ended.connection = connection;
    if (hasContentToShow(process.read)) {
      analysis::RunAnalysis alone(options_.analysis);
      alone.addOutcome(process.file, process.read, process.outcome);
      analysis::RunReport report = alone.finish();
      if (options_.write_json_report) {
        std::ostringstream json;
        options_.write_json_report(report, json);
        writeReport(processReportName(process.file), json.str());
      }
      if (!report.analysis.processes.empty()) ended.analysis = std::move(report.analysis.processes.front());
    }
    ended.process = std::move(process);
    ended_.push_back(std::move(ended));
    metrics_stale_ = metrics_ != nullptr;
  }

  void writeReport(const std::string& name, const std::string& content) {
    std::string error;
    if (!replaceOutputFile(dir_fd_, name, content, &error)) logWarning("cannot write " + name + ": " + error);
  }

  // The report of every process this collector has seen, in processOrder.
  void writeRunReport() {
    if (ended_.empty()) {
      logInfo("no process connected: no run report");
      return;
    }
    std::vector<const EndedProcess*> order;
    for (const EndedProcess& e : ended_) order.push_back(&e);
    std::sort(order.begin(), order.end(), [](const EndedProcess* a, const EndedProcess* b) {
      return processOrder(a->process.rank, a->process.pid, a->process.file) <
             processOrder(b->process.rank, b->process.pid, b->process.file);
    });
    analysis::RunAnalysis run(options_.analysis);
    for (const EndedProcess* e : order) run.addOutcome(e->process.file, e->process.read, e->process.outcome);
    const analysis::RunReport report = run.finish();
    if (options_.write_text_report) {
      std::ostringstream text;
      options_.write_text_report(report, text);
      writeReport(kRunReportText, text.str());
    }
    if (options_.write_json_report) {
      std::ostringstream json;
      options_.write_json_report(report, json);
      writeReport(kRunReportJson, json.str());
    }
    if (options_.write_html_report) {
      std::ostringstream html;
      options_.write_html_report(report, html);
      writeReport(kRunReportHtml, html.str());
    }
    logInfo("run report of " + std::to_string(ended_.size()) + " process(es): " + kRunReportText + ", " +
            kRunReportJson + (options_.write_html_report ? std::string(", ") + kRunReportHtml : std::string()));
  }

  // What the collector knows now: running processes' snapshots, ended ones' final analyses.
  CollectorStatus buildStatus(Clock::time_point now) const {
    CollectorStatus status;
    status.uptime_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(now - started_).count());
    status.socket = socket_path_;
    status.output_dir = options_.output_dir;
    std::vector<const Connection*> open;
    for (const auto& c : connections_) open.push_back(c.get());
    for (const Ending& e : ending_) open.push_back(e.connection.get());
    for (const Connection* c : open) {
      if (!c || !c->helloSeen()) continue;
      ProcessStatus p;
      p.connection = c->id();
      p.pid = c->pid();
      p.host = c->host();
      p.rank = c->rank();
      p.file = c->fileName();
      p.running = true;
      p.events = c->events();
      p.drops = c->drops();
      p.bytes = c->bytesReceived();
      p.analysis = c->snapshot();
      status.processes.push_back(std::move(p));
    }
    for (const EndedProcess& e : ended_) {
      ProcessStatus p;
      p.connection = e.connection;
      p.pid = e.process.pid;
      p.host = e.process.host;
      p.rank = e.process.rank;
      p.file = e.process.file;
      p.events = e.process.events;
      p.drops = e.process.drops;
      p.bytes = e.process.bytes;
      if (e.analysis) p.analysis = *e.analysis;
      status.processes.push_back(std::move(p));
    }
    std::sort(status.processes.begin(), status.processes.end(), [](const ProcessStatus& a, const ProcessStatus& b) {
      return processOrder(a.rank, a.pid, a.file) < processOrder(b.rank, b.pid, b.file);
    });
    return status;
  }

  // Sends the status to `only`, or (nullptr) to every watcher and to the metrics endpoint; built
  // only when someone wants it.
  void sendStatus(Clock::time_point now, StatusWatcher* only) {
    if (only == nullptr) last_status_ = now;
    const bool publish = only == nullptr && metrics_ != nullptr;
    if (watchers_.empty() && !publish) return;
    const CollectorStatus status = buildStatus(now);
    if (publish) {
      metrics_->publish(metricsExposition(status));
      metrics_stale_ = false;
    }
    if (watchers_.empty()) return;
    const std::string line = statusJsonLine(status);
    for (auto& w : watchers_) {
      if (only != nullptr && w.get() != only) continue;
      if (!w->send(line)) w.reset();
    }
    watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), nullptr), watchers_.end());
  }

  // What each peer has already sent is read and its whole frames written before its file closes.
  void stop() {
    const auto now = Clock::now();
    // A process that connected, sent everything and exited just before the stop may still wait
    // in the listen backlog (the signal is handled before the accept in the same loop turn);
    // `gapwatch profile` stops its collector right after the last process exits.
    acceptAll(now);
    while (!ending_.empty()) finishOneEnded();
    for (std::size_t i = 0; i < connections_.size(); ++i) {
      if (!connections_[i]) continue;
      if (!connections_[i]->readAvailable(now, kReadsAtStop)) {
        finish(i, connections_[i]->closeReason(), connections_[i]->closeSeverity());
      } else {
        finish(i, "collector stopping", CloseSeverity::kInfo);
      }
    }
    connections_.clear();
    // A last status, every process ended: the live view's final picture is the report's numbers.
    sendStatus(now, nullptr);
    watchers_.clear();
    writeRunReport();
  }

  const CollectorOptions& options_;
  std::string socket_path_;
  int listen_fd_;
  int signal_fd_;
  int dir_fd_;
  MetricsServer* metrics_;  // null without --metrics
  bool metrics_stale_ = false;  // a process has ended since the metrics were last published
  Clock::time_point started_;
  Clock::time_point last_status_{};
  std::vector<std::unique_ptr<Connection>> connections_;
  // Connections that have ended, their end-of-process work not yet done (retire()), oldest first.
  struct Ending {
    std::unique_ptr<Connection> connection;
    std::string reason;
    CloseSeverity severity;
  };
  std::deque<Ending> ending_;
  std::vector<std::unique_ptr<StatusWatcher>> watchers_;
  std::vector<EndedProcess> ended_;  // in the order they ended
  // Per connection id: its peer process as SO_PEERCRED named it (in this pid namespace, unlike a
  // Hello's pid), for keptWhileStopped.
  struct PeerProcess {
    int pid = 0;
    std::optional<Clock::time_point> last_seen_stopped;
    bool stop_logged = false;
  };
  std::unordered_map<int, PeerProcess> peers_;
  int next_id_ = 0;
  uint64_t processes_seen_ = 0;
  // A descriptor kept open to be given up when accept() finds none left (refuseWithoutDescriptors).
  int reserve_fd_ = -1;
  bool out_of_descriptors_ = false;
  uint64_t refused_without_descriptors_ = 0;
  Clock::time_point accept_paused_until_{};
};

// mkdir -p: the directories it makes are 0700, since the recordings hold the job's command line,
// kernel names and Python call sites, and the collector already refuses other users' streams.
// One that exists is used as it is.
bool makeOutputDirectory(const std::string& dir, std::string* error) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    *error = "it exists and is not a directory";
    return false;
  }
  for (std::size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    const std::string prefix = dir.substr(0, end);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = strerror(errno);
      return false;
    }
    if (end == std::string::npos) break;
  }
  return true;
}

}  // namespace

std::string processReportName(const std::string& recording_name) {
  const std::string suffix = ".gwt";
  const bool gwt = recording_name.size() > suffix.size() &&
                   recording_name.compare(recording_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (gwt ? recording_name.substr(0, recording_name.size() - suffix.size()) : recording_name) + ".report.json";
}

int runCollector(const CollectorOptions& options) {
  const std::string socket_path = options.socket_path.empty() ? defaultSocketPath() : options.socket_path;
  // Bound first (a bad address or a port in use stops the collector before anything else), but
  // served only once the signals are blocked: the HTTP thread inherits the mask.
  std::unique_ptr<MetricsServer> metrics;
  std::string error;
  if (!options.metrics_address.empty()) {
    metrics = MetricsServer::bind(options.metrics_address, &error);
    if (!metrics) {
      std::cerr << "gapwatch collector: " << error << '\n';
      return 1;
    }
  }
  std::string mkdir_error;
  if (!makeOutputDirectory(options.output_dir, &mkdir_error)) {
    std::cerr << "gapwatch collector: cannot create output directory " << options.output_dir << ": " << mkdir_error
              << '\n';
    return 1;
  }
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
  // SIGHUP (the terminal closed, a supervisor's stop) is a clean stop too: the collector has no
  // configuration or log file to reload, and dying of it would lose the run's report.
  sigaddset(&signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  int signal_fd = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) {
    std::cerr << "gapwatch collector: signalfd: " << strerror(errno) << '\n';
    ::close(dir_fd);
    return 1;
  }
  // No request ever gets an empty page: no process yet, until the loop's first status.
  if (metrics) metrics->publish(metricsExposition(CollectorStatus{}));
  if (metrics && !metrics->start(&error)) {
    std::cerr << "gapwatch collector: " << error << '\n';
    ::close(signal_fd);
    ::close(dir_fd);
    return 1;
  }
  int listen_fd = listenOnSocket(socket_path, &error);
  if (listen_fd < 0) {
    std::cerr << "gapwatch collector: " << error << '\n';
    ::close(signal_fd);
    ::close(dir_fd);
    return 1;
  }
  // The socket goes with the collector whatever ends the loop, an exception included: a socket file
  // that nobody listens on is one more thing for the next collector and every library to find stale.
  struct SocketRemover {
    const std::string& path;
    bool armed = true;
    void now() {
      ::unlink(path.c_str());
      armed = false;
    }
    ~SocketRemover() {
      if (armed) ::unlink(path.c_str());
    }
  } socket_remover{socket_path};
  logInfo("listening on " + socket_path + ", recordings to " + options.output_dir +
          (metrics ? ", metrics on " + metrics->url() : std::string()));
  const int code = Collector(options, socket_path, listen_fd, signal_fd, dir_fd, metrics.get()).run();
  metrics.reset();  // joins the HTTP thread
  ::close(listen_fd);
  socket_remover.now();
  ::close(signal_fd);
  ::close(dir_fd);
  logInfo("stopped");
  return code;
}

}  // namespace gapwatch::collector
