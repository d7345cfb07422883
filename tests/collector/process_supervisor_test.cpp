// tests/collector/process_supervisor_test.cpp: the job supervision behind `gapwatch profile`
// (collector/process_supervisor.h): exit statuses, SIGCHLD ignored by whoever started this
// process, what children inherit, a daemonised grandchild, forwarding, helpers, a command that
// cannot run. Each test case runs in a process of its own (catch_discover_tests), so the mask
// and dispositions one changes reach no other.
//
// A hang is bounded by alarm(): SIGALRM's default action ends the test process, a failure rather
// than a stuck run. Nothing measures time.

#include <catch2/catch.hpp>

#include "collector/process_supervisor.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

using gapwatch::collector::ProcessSupervisor;
using gapwatch::collector::shellExitCode;

constexpr unsigned kHangSeconds = 120;

std::string tempDir() {
  char path[] = "/tmp/gapwatch-supervisor-test-XXXXXX";
  REQUIRE(::mkdtemp(path) != nullptr);
  return path;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The hexadecimal mask of a /proc/<pid>/status line ("SigIgn:\t0000000000001000").
unsigned long long statusMask(const std::string& status, const std::string& key) {
  const auto at = status.find("\n" + key + ":");
  REQUIRE(at != std::string::npos);
  return std::stoull(status.substr(at + key.size() + 2), nullptr, 16);
}

unsigned long long bit(int signal) { return 1ull << (signal - 1); }

bool sigchldIgnored() {
  struct sigaction now {};
  ::sigaction(SIGCHLD, nullptr, &now);
  return now.sa_handler == SIG_IGN;
}

}  // namespace

TEST_CASE("the command's exit status, with SIGCHLD ignored by whoever started this process") {
  ::alarm(kHangSeconds);
  ::signal(SIGCHLD, SIG_IGN);
  {
    ProcessSupervisor supervisor;
    CHECK_FALSE(sigchldIgnored());
    const auto started = supervisor.startCommand({"sh", "-c", "exit 7"}, nullptr);
    REQUIRE(started.pid > 0);
    const auto end = supervisor.waitForJob(started.pid, nullptr);
    CHECK(shellExitCode(end.status) == 7);
  }
  CHECK(sigchldIgnored());  // given back
}

TEST_CASE("the command gets the signal mask and SIGCHLD disposition this process had") {
  ::alarm(kHangSeconds);
  const std::string dir = tempDir();
  const std::string out = dir + "/status";
  ::signal(SIGCHLD, SIG_IGN);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ::sigprocmask(SIG_BLOCK, &usr1, nullptr);
  {
    ProcessSupervisor supervisor;
    // cat's own status: what exec left it, with no shell in between to change it.
    const auto started = supervisor.startCommand({"cat", "/proc/self/status"}, [&] {
      if (!freopen(out.c_str(), "w", stdout)) ::_exit(99);
    });
    REQUIRE(started.pid > 0);
    CHECK(shellExitCode(supervisor.waitForJob(started.pid, nullptr).status) == 0);
  }
  const std::string status = readFile(out);
  CHECK((statusMask(status, "SigIgn") & bit(SIGCHLD)) != 0);
  const unsigned long long blocked = statusMask(status, "SigBlk");
  CHECK((blocked & bit(SIGUSR1)) != 0);
  CHECK((blocked & (bit(SIGTERM) | bit(SIGINT) | bit(SIGCHLD))) == 0);
  ::unlink(out.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("the job is over once a daemonised grandchild has exited too") {
  ::alarm(kHangSeconds);
  std::string error;
  REQUIRE(ProcessSupervisor::becomeSubreaper(&error));
  const std::string dir = tempDir();
  const std::string mark = dir + "/written-by-the-grandchild";
  ProcessSupervisor supervisor;
  // The command exits at once; its background child, reparented here, outlives it.
  const auto started = supervisor.startCommand({"sh", "-c", "(sleep 1; touch \"$0\") & exit 0", mark}, nullptr);
  REQUIRE(started.pid > 0);
  const auto end = supervisor.waitForJob(started.pid, nullptr);
  CHECK(shellExitCode(end.status) == 0);
  REQUIRE_FALSE(end.descendants_unknown);
  struct stat st {};
  CHECK(::stat(mark.c_str(), &st) == 0);
  ::unlink(mark.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("a signal to this process is passed on to the command") {
  ::alarm(kHangSeconds);
  ProcessSupervisor supervisor;
  // The command sends this process SIGTERM; the supervisor, which never acts on it, passes it on.
  const auto started = supervisor.startCommand({"sh", "-c", "kill -TERM $PPID; exec sleep 100"}, nullptr);
  REQUIRE(started.pid > 0);
  const auto end = supervisor.waitForJob(started.pid, nullptr);
  REQUIRE(WIFSIGNALED(end.status));
  CHECK(WTERMSIG(end.status) == SIGTERM);
}

TEST_CASE("a helper is not part of the job") {
  ::alarm(kHangSeconds);
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  ProcessSupervisor supervisor;
  // The helper runs until the gate closes, which happens only after the job is over.
  const pid_t helper = supervisor.startHelper([&] {
    ::close(gate[1]);
    char c;
    return ::read(gate[0], &c, 1) == 0 ? 3 : 4;
  });
  REQUIRE(helper > 0);
  ::close(gate[0]);
  const auto started = supervisor.startCommand({"true"}, nullptr);
  REQUIRE(started.pid > 0);
  bool helper_reported = false;
  const auto end = supervisor.waitForJob(started.pid, [&](pid_t, int) { helper_reported = true; });
  CHECK(shellExitCode(end.status) == 0);
  CHECK_FALSE(helper_reported);
  int status = 0;
  CHECK_FALSE(supervisor.exited(helper, &status));
  ::close(gate[1]);
  CHECK(shellExitCode(supervisor.waitFor(helper)) == 3);
}

TEST_CASE("a command that cannot be run") {
  ::alarm(kHangSeconds);
  ProcessSupervisor supervisor;
  auto started = supervisor.startCommand({"/nonexistent/gapwatch-no-such-command"}, nullptr);
  CHECK(started.pid == -1);
  CHECK(started.exec_failed);
  CHECK(started.error == ENOENT);
  started = supervisor.startCommand({}, nullptr);
  CHECK(started.pid == -1);
  CHECK_FALSE(started.exec_failed);
}

TEST_CASE("a signal before the command is taken, and one left pending is not acted on afterwards") {
  ::alarm(kHangSeconds);
  {
    ProcessSupervisor supervisor;
    CHECK(supervisor.takePendingSignal() == 0);
    ::raise(SIGINT);
    CHECK(supervisor.takePendingSignal() == SIGINT);
    CHECK(supervisor.takePendingSignal() == 0);
    ::raise(SIGHUP);  // meant for a job: dropped, or this test process would die of it
  }
  sigset_t now;
  ::sigprocmask(SIG_SETMASK, nullptr, &now);
  CHECK_FALSE(sigismember(&now, SIGHUP));
}
