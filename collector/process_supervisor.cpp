// collector/process_supervisor.cpp: see process_supervisor.h.
#include "collector/process_supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <optional>

namespace gapwatch::collector {
namespace {

// The pids of this process's children (every thread's), or nothing when /proc does not list
// them (a kernel without CONFIG_PROC_CHILDREN).
std::optional<std::set<pid_t>> childrenOfThisProcess() {
  std::set<pid_t> children;
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return std::nullopt;
  bool read_one = false;
  while (dirent* task = ::readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream list(std::string("/proc/self/task/") + task->d_name + "/children");
    if (!list) continue;
    read_one = true;
    pid_t pid = 0;
    while (list >> pid) children.insert(pid);
  }
  ::closedir(tasks);
  if (!read_one) return std::nullopt;
  return children;
}

}  // namespace

int shellExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

ProcessSupervisor::ProcessSupervisor() {
  sigemptyset(&waited_);
  for (int s : kForwarded) sigaddset(&waited_, s);
  sigaddset(&waited_, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &waited_, &original_mask_);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGCHLD, &dfl, &original_sigchld_);
}

ProcessSupervisor::~ProcessSupervisor() {
  timespec zero{};
  while (::sigtimedwait(&waited_, nullptr, &zero) > 0) {
  }
  ::sigaction(SIGCHLD, &original_sigchld_, nullptr);
  ::sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

bool ProcessSupervisor::becomeSubreaper(std::string* error) {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) return true;
  *error = strerror(errno);
  return false;
}

void ProcessSupervisor::restoreInChild() const {
  ::sigaction(SIGCHLD, &original_sigchld_, nullptr);
  ::sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

pid_t ProcessSupervisor::startHelper(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    restoreInChild();
    int code = 1;
    // An exception must end the child here: unwinding further would run the parent's code in it.
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gapwatch: internal error: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "gapwatch: internal error\n");
    }
    // _exit: the parent's stdio buffers and atexit handlers are the parent's.
    ::_exit(code);
  }
  helpers_.insert(pid);
  return pid;
}

ProcessSupervisor::Started ProcessSupervisor::startCommand(const std::vector<std::string>& argv,
                                                           const std::function<void()>& in_child) {
  Started started;
  if (argv.empty()) {
    started.error = EINVAL;
    return started;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The exec's errno comes up this pipe; closed on a successful exec (O_CLOEXEC), it reads EOF.
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    started.error = errno;
    return started;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    started.error = errno;
    ::close(error_pipe[0]);
    ::close(error_pipe[1]);
    return started;
  }
  if (pid == 0) {
    ::close(error_pipe[0]);
    restoreInChild();
    if (in_child) in_child();
    ::execvp(args[0], args.data());
    const int error = errno;
    ssize_t ignored = ::write(error_pipe[1], &error, sizeof error);
    (void)ignored;
    ::_exit(error == ENOENT ? 127 : 126);
  }
  ::close(error_pipe[1]);
  int exec_error = 0;
  ssize_t n;
  do {
    n = ::read(error_pipe[0], &exec_error, sizeof exec_error);
  } while (n < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (n == ssize_t(sizeof exec_error)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    started.error = exec_error;
    started.exec_failed = true;
    return started;
  }
  started.pid = pid;
  return started;
}

int ProcessSupervisor::takePendingSignal() {
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int s : kForwarded) sigaddset(&forwarded, s);
  timespec zero{};
  const int signal = ::sigtimedwait(&forwarded, nullptr, &zero);
  return signal > 0 ? signal : 0;
}

ProcessSupervisor::JobEnd ProcessSupervisor::waitForJob(pid_t command,
                                                        const std::function<void(pid_t, int)>& helper_exited) {
  JobEnd end;
  bool command_alive = true;
  for (;;) {
    // Everything that has exited, reaped: the command, a helper, or a descendant left behind.
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      if (pid == command) {
        command_alive = false;
        end.status = status;
      } else if (helpers_.erase(pid) > 0 && helper_exited) {
        helper_exited(pid, status);
      }
    }
    if (!command_alive) {
      bool known = true;
      const std::set<pid_t> left = jobChildrenLeft(&known);
      if (!known) {
        end.descendants_unknown = true;
        return end;
      }
      if (left.empty()) return end;
    }
    siginfo_t info{};
    const int signal = ::sigwaitinfo(&waited_, &info);
    if (signal < 0 || signal == SIGCHLD) continue;
    forward(signal, info, command, command_alive);
  }
}

int ProcessSupervisor::waitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  helpers_.erase(pid);
  return status;
}

bool ProcessSupervisor::exited(pid_t pid, int* status) {
  if (::waitpid(pid, status, WNOHANG) != pid) return false;
  helpers_.erase(pid);
  return true;
}

std::set<pid_t> ProcessSupervisor::jobChildrenLeft(bool* known) const {
  auto children = childrenOfThisProcess();
  *known = children.has_value();
  if (!children) return {};
  for (pid_t helper : helpers_) children->erase(helper);
  return *children;
}

void ProcessSupervisor::forward(int signal, const siginfo_t& info, pid_t command, bool command_alive) {
  std::set<pid_t> targets;
  if (command_alive) {
    targets.insert(command);
  } else {
    bool known = true;
    targets = jobChildrenLeft(&known);
  }
  // A terminal's Ctrl-C (sent by the kernel: SI_KERNEL) has already reached every process of
  // this process group; a second copy could cut short the job's own clean-up.
  const bool from_terminal = info.si_code == SI_KERNEL;
  for (pid_t pid : targets) {
    if (from_terminal && ::getpgid(pid) == ::getpgrp()) continue;
    ::kill(pid, signal);
  }
}

}  // namespace gapwatch::collector
