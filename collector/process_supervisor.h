// collector/process_supervisor.h: runs a job (a command and every process it leaves behind) as
// children of this process and waits for all of it, whatever state this process was started in.
// `gapwatch profile` uses it for the traced job and for its helpers (the private collector, the
// live view); profile_session.cpp keeps what is particular to profiling.
//
// Why a unit of its own: waiting for a whole job is subtle, and each subtlety has bitten:
//  - a daemonised descendant (double fork, setsid) is reparented to init and never waited for,
//    unless this process is a child subreaper (becomeSubreaper);
//  - SIGCHLD ignored by whoever started this process (SIG_IGN survives exec: some supervisors and
//    Python services leave it so) makes the kernel reap every child at once, so that no exit is
//    ever seen (issue 21, item 2). While a ProcessSupervisor lives SIGCHLD is at its default;
//  - a signal handled asynchronously can be lost between a check and a wait: the forwarded
//    signals (kForwarded) and SIGCHLD stay blocked and are taken with sigwaitinfo();
//  - a child must not inherit any of that: every child started here gets the signal mask and the
//    SIGCHLD disposition this process had before, as it would have had without the supervisor.
// One per process, on one thread (it changes the process's signal mask and dispositions).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace gapwatch::collector {

class ProcessSupervisor {
 public:
  // The signals passed on to the job (a Ctrl-C, a supervisor's stop), never acted on here.
  static constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

  // Blocks kForwarded and SIGCHLD, and sets SIGCHLD to its default disposition.
  ProcessSupervisor();
  // Drops forwarded signals still pending (they were meant for the job), then restores the mask
  // and SIGCHLD's disposition.
  ~ProcessSupervisor();
  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  // Makes this process a child subreaper: orphaned descendants come here, to be waited for. Left
  // set (the kernel has no scope for it). False with *error set.
  static bool becomeSubreaper(std::string* error);

  // Forks a helper: a child that is not part of the job (the wait for the job leaves it out). It
  // runs `body` with the original mask and disposition, then _exits with what body returned.
  // Returns its pid, or -1 (errno from fork).
  pid_t startHelper(const std::function<int()>& body);

  struct Started {
    pid_t pid = -1;  // the command's pid; -1 when it did not start
    int error = 0;   // when it did not: the errno of fork, pipe or exec
    bool exec_failed = false;  // the error is exec's (the child, exited 126 or 127, is reaped)
  };
  // Forks and execs the command (argv[0] searched in PATH); `in_child` runs in the child just
  // before the exec (its environment, its descriptors). Returns once the exec has succeeded or
  // failed.
  Started startCommand(const std::vector<std::string>& argv, const std::function<void()>& in_child);

  // A forwarded signal that arrived and was not yet passed on, taken; 0 when none.
  int takePendingSignal();

  struct JobEnd {
    int status = 0;  // the command's wait status
    // /proc does not list a process's children (a kernel without CONFIG_PROC_CHILDREN): only the
    // command was waited for, not what it left behind.
    bool descendants_unknown = false;
  };
  // Until `command` (from startCommand) and every other child but the helpers has exited,
  // passing kForwarded on: to the command while it runs, then to what is left of the job. A helper
  // that exits meanwhile is reaped and handed to `helper_exited` (pid, wait status).
  JobEnd waitForJob(pid_t command, const std::function<void(pid_t, int)>& helper_exited);

  // Blocks until child `pid` exits; its wait status. A helper is forgotten.
  int waitFor(pid_t pid);
  // True, with *status, once child `pid` has exited (reaped); false while it runs.
  bool exited(pid_t pid, int* status);

 private:
  std::set<pid_t> jobChildrenLeft(bool* known) const;
  void forward(int signal, const siginfo_t& info, pid_t command, bool command_alive);
  void restoreInChild() const;

  sigset_t waited_{};
  sigset_t original_mask_{};
  struct sigaction original_sigchld_ {};
  std::set<pid_t> helpers_;
};

// The shell's form of a wait status: the exit code, or 128 + N when signal N ended it.
int shellExitCode(int wait_status);

}  // namespace gapwatch::collector
