// collector/profile_session.cpp: see profile_session.h. One thread; starting, waiting for and
// signalling processes is process_supervisor.h's, this file decides which processes and when.
#include "collector/profile_session.h"

#include "collector/collector.h"
#include "collector/process_supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <system_error>
#include <thread>

namespace gapwatch::collector {
namespace {

constexpr const char* kPrefix = "gapwatch profile: ";
constexpr const char* kSocketName = "collector.sock";
constexpr const char* kLogName = "collector.log";
// Bounds a collector that neither listens nor exits (it always does one or the other within
// milliseconds); never a measurement.
constexpr auto kListenTimeout = std::chrono::seconds(60);

// Creates `dir` (with its parents) or accepts an existing empty one.
bool prepareOutputDir(const std::string& dir, bool* created, std::ostream& err) {
  *created = false;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      err << kPrefix << "output directory " << dir << " exists and is not a directory\n";
      return false;
    }
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
      err << kPrefix << "output directory " << dir << ": " << strerror(errno) << '\n';
      return false;
    }
    bool empty = true;
    while (dirent* entry = ::readdir(d)) {
      if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) empty = false;
    }
    ::closedir(d);
    if (!empty) {
      // Recordings of two runs in one directory would be reported as one run's ranks.
      err << kPrefix << "output directory " << dir << " is not empty: give a new or empty one with -o\n";
      return false;
    }
    return true;
  }
  if (errno != ENOENT) {
    err << kPrefix << "output directory " << dir << ": " << strerror(errno) << '\n';
    return false;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << kPrefix << "cannot create output directory " << dir << ": " << ec.message() << '\n';
    return false;
  }
  *created = true;
  return true;
}

// A new directory named `base`, else base-2, base-3, ...: made by this call (mkdir fails on one that
// exists, even one another run made a moment ago), so two runs never share one.
std::optional<std::string> makeUniqueOutputDir(const std::string& base, std::ostream& err) {
  constexpr int kTries = 1000;
  for (int n = 1; n <= kTries; ++n) {
    const std::string dir = n == 1 ? base : base + "-" + std::to_string(n);
    if (::mkdir(dir.c_str(), 0777) == 0) return dir;
    if (errno != EEXIST) {
      err << kPrefix << "cannot create output directory " << dir << ": " << strerror(errno) << '\n';
      return std::nullopt;
    }
  }
  err << kPrefix << "cannot create output directory " << base << ": it and " << base << "-2 to -" << kTries
      << " all exist: give one with -o\n";
  return std::nullopt;
}

// A fresh 0700 directory of this user's (mkdtemp), where only this session's collector listens.
std::optional<std::string> makeSocketDir(std::ostream& err) {
  std::vector<std::string> bases;
  const char* runtime = ::getenv("XDG_RUNTIME_DIR");
  if (runtime && runtime[0] == '/') bases.emplace_back(runtime);
  bases.emplace_back("/tmp");
  const std::size_t socket_max = sizeof(sockaddr_un{}.sun_path) - 1;
  std::string last_error = "no usable base";
  for (const auto& base : bases) {
    std::string path = base + "/gapwatch-profile-XXXXXX";
    if (path.size() + 1 + strlen(kSocketName) > socket_max) {
      last_error = base + ": too long a path for a socket";
      continue;
    }
    if (::mkdtemp(path.data())) return path;
    last_error = base + ": " + strerror(errno);
  }
  err << kPrefix << "cannot create a socket directory (" << last_error << ")\n";
  return std::nullopt;
}

bool socketAccepts(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string lastLineOf(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// The collector's child, once forked: a process group of its own, its log to the file.
int runCollectorChild(const CollectorOptions& base, const std::string& socket, const std::string& dir, pid_t parent) {
  ::setpgid(0, 0);
  // gapwatch profile killed outright: the collector still stops cleanly, closing every file.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) return 1;
  const std::string log_path = dir + "/" + kLogName;
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (log < 0 || null < 0) return 1;
  ::dup2(null, STDIN_FILENO);
  ::dup2(log, STDOUT_FILENO);
  ::dup2(log, STDERR_FILENO);
  CollectorOptions options = base;
  options.socket_path = socket;
  options.output_dir = dir;
  options.exit_when_idle = false;  // the session says when the job is over: a job may connect late
  return runCollector(options);
}

class Session {
 public:
  Session(const ProfileSessionOptions& options, std::ostream& err) : options_(options), err_(err) {}

  ~Session() {
    stopCollector();
    waitForWatch();
    if (!socket_dir_.empty()) {
      ::unlink(socket_path_.c_str());  // the collector removes it; not one that died
      ::rmdir(socket_dir_.c_str());
    }
    if (!result_.command_ran && !result_.output_dir.empty() && prepared_) {
      // Nothing was recorded: the directory goes back to how it was, so the same -o works again.
      ::unlink((result_.output_dir + "/" + kLogName).c_str());
      if (created_dir_) ::rmdir(result_.output_dir.c_str());
    }
    // The supervisor, destroyed next, drops the signals that were meant for the job.
  }

  ProfileSessionResult run() {
    if (options_.command.empty()) {
      err_ << kPrefix << "no command to run (gapwatch profile [-o DIR] -- CMD ARGS...)\n";
      return result_;
    }
    if (options_.unique_output_dir) {
      auto made = makeUniqueOutputDir(options_.output_dir, err_);
      if (!made) return result_;
      result_.output_dir = *made;
      created_dir_ = true;
    } else {
      result_.output_dir = options_.output_dir;
      if (!prepareOutputDir(result_.output_dir, &created_dir_, err_)) return result_;
    }
    prepared_ = true;
    auto socket_dir = makeSocketDir(err_);
    if (!socket_dir) return result_;
    socket_dir_ = *socket_dir;
    socket_path_ = socket_dir_ + "/" + kSocketName;
    if (!startCollector()) return result_;
    // A signal that came while the collector started is the user's wish to stop: the command is
    // not started at all.
    const int early = supervisor_.takePendingSignal();
    if (early > 0) {
      err_ << kPrefix << "stopped by " << strsignal(early) << " before the command started\n";
      result_.exit_code = 128 + early;
      return result_;
    }
    startWatch();
    if (!startCommand()) return result_;
    waitForJob();
    stopCollector();
    waitForWatch();
    return result_;
  }

 private:
  bool startCollector() {
    std::cout.flush();
    std::cerr.flush();
    const pid_t parent = ::getpid();
    const pid_t pid = supervisor_.startHelper(
        [&] { return runCollectorChild(options_.collector, socket_path_, result_.output_dir, parent); });
    if (pid < 0) {
      err_ << kPrefix << "fork: " << strerror(errno) << '\n';
      return false;
    }
    collector_ = pid;
    ::setpgid(pid, pid);  // also here, so no terminal signal can reach it before the child's own call
    const auto deadline = std::chrono::steady_clock::now() + kListenTimeout;
    while (!socketAccepts(socket_path_)) {
      int status = 0;
      if (supervisor_.exited(collector_, &status)) {
        collector_ = -1;
        const std::string why = lastLineOf(result_.output_dir + "/" + kLogName);
        err_ << kPrefix << "the collector did not start" << (why.empty() ? "" : ": " + why) << '\n';
        return false;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        err_ << kPrefix << "the collector did not listen on " << socket_path_ << " within "
             << kListenTimeout.count() << " s\n";
        ::kill(collector_, SIGKILL);
        supervisor_.waitFor(collector_);
        collector_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  // --watch: the live view in a child of its own, in this process group (the terminal's), from
  // before the command starts until the collector stops (the view then ends by itself). Not one of
  // the job's processes: the wait for the job leaves it out.
  void startWatch() {
    if (!options_.watch) return;
    std::cout.flush();
    std::cerr.flush();
    const pid_t pid = supervisor_.startHelper([&] { return options_.watch(socket_path_); });
    if (pid < 0) {
      err_ << kPrefix << "warning: no live view (fork: " << strerror(errno) << ")\n";
      return;
    }
    watch_ = pid;
  }

  void waitForWatch() {
    if (watch_ <= 0) return;
    supervisor_.waitFor(watch_);
    watch_ = -1;
  }

  bool startCommand() {
    const char* existing = ::getenv("LD_PRELOAD");
    const std::string preload =
        options_.library + (existing && existing[0] ? std::string(":") + existing : std::string());
    std::cout.flush();
    std::cerr.flush();
    const auto started = supervisor_.startCommand(options_.command, [&] {
      ::setenv("LD_PRELOAD", preload.c_str(), 1);
      ::setenv("GAPWATCH_SOCKET", socket_path_.c_str(), 1);
      // A file named for the two-step way of recording has no place in this run: a process that
      // cannot reach the collector falls back to that file, outside the output directory.
      ::unsetenv("GAPWATCH_OUTPUT");
    });
    if (started.exec_failed) {
      err_ << kPrefix << "cannot run " << options_.command[0] << ": " << strerror(started.error) << '\n';
      result_.exit_code = started.error == ENOENT ? 127 : 126;
      return false;
    }
    if (started.pid < 0) {
      err_ << kPrefix << "cannot start the command: " << strerror(started.error) << '\n';
      return false;
    }
    command_ = started.pid;
    result_.command_ran = true;
    return true;
  }

  // Until the command and every descendant (reparented here, this being a subreaper) has exited.
  void waitForJob() {
    const auto end = supervisor_.waitForJob(command_, [&](pid_t pid, int status) {
      if (pid == watch_) {
        watch_ = -1;  // ended early (q, Ctrl-C): the job goes on
      } else if (pid == collector_) {
        collector_ = -1;
        err_ << kPrefix << "warning: the collector exited early (status " << shellExitCode(status) << ", see "
             << result_.output_dir << "/" << kLogName << "); the processes still running write local files\n";
      }
    });
    command_ = -1;
    result_.exit_code = shellExitCode(end.status);
    if (end.descendants_unknown) {
      err_ << kPrefix << "this kernel does not list a process's children in /proc: waiting for the "
           << "command only, not for processes it left behind\n";
    }
  }

  void stopCollector() {
    if (collector_ <= 0) return;
    ::kill(collector_, SIGTERM);
    const int status = supervisor_.waitFor(collector_);
    if (result_.command_ran && shellExitCode(status) != 0) {
      err_ << kPrefix << "warning: the collector exited with status " << shellExitCode(status) << " (see "
           << result_.output_dir << "/" << kLogName << ")\n";
    }
    collector_ = -1;
  }

  // Declared first: destroyed last, after the destructor above has stopped every child.
  ProcessSupervisor supervisor_;
  const ProfileSessionOptions& options_;
  std::ostream& err_;
  bool prepared_ = false;
  bool created_dir_ = false;
  std::string socket_dir_;
  std::string socket_path_;
  pid_t collector_ = -1;
  pid_t watch_ = -1;
  pid_t command_ = -1;
  ProfileSessionResult result_;
};

}  // namespace

ProfileSessionResult runProfileSession(const ProfileSessionOptions& options, std::ostream& err) {
  // Orphaned descendants (daemonised workers) come to this process, to be waited for and reaped.
  // Set before the command starts and left set: this process exits soon after the session.
  std::string error;
  if (!ProcessSupervisor::becomeSubreaper(&error)) {
    err << kPrefix << "cannot become a child subreaper: " << error << '\n';
    return {};
  }
  Session session(options, err);
  return session.run();
}

}  // namespace gapwatch::collector
