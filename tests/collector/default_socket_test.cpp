// The default collector socket (issue 21, item 2): the collector listens where the injected
// library looks, in every environment: XDG_RUNTIME_DIR set, unset, relative (the XDG spec asks for
// an absolute path; a relative one would be resolved against each process's own working
// directory), and in a process whose effective uid is not its real uid (a setuid program, or one
// that called seteuid): both use the effective uid, which is what the collector checks
// (SO_PEERCRED's uid, the socket directory's owner). The library's side is interpose/settings.cpp,
// compiled into this test.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "collector/socket_listener.h"
#include "output_sink.h"
#include "settings.h"

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/gapwatch-default-socket-test-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::string command = "rm -rf '" + path + "'";
    if (system(command.c_str()) != 0) WARN("cannot remove " + path);
  }
};

// The collector listens at its default path; the library's default socket is that path. Run in a
// child process: the environment and the effective uid change only there. Returns the child's
// exit status: 0 agreed, 1 the collector could not listen, 2 the library looked elsewhere, 3 the
// set-up failed.
int agree_in_child(const char* runtime_dir, uid_t euid) {
  pid_t pid = fork();
  if (pid == 0) {
    if (runtime_dir) setenv("XDG_RUNTIME_DIR", runtime_dir, 1);
    else unsetenv("XDG_RUNTIME_DIR");
    if (euid != geteuid() && seteuid(euid) != 0) _exit(3);
    const std::string path = gapwatch::collector::defaultSocketPath();
    std::string error;
    const int fd = gapwatch::collector::listenOnSocket(path, &error);
    if (fd < 0) _exit(1);
    const std::string seen = gapwatch::default_collector_socket();
    ::close(fd);
    ::unlink(path.c_str());
    ::rmdir(path.substr(0, path.rfind('/')).c_str());
    _exit(seen == path ? 0 : 2);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// A uid of nobody's on this machine, for the socket directory under /tmp (fresh, so that no other
// collector's or test's directory is in the way).
uid_t unused_uid() { return 54000 + uid_t(getpid() % 1000); }

}  // namespace

TEST_CASE("XDG_RUNTIME_DIR set: the library looks where the collector listens") {
  TempDir runtime;
  CHECK(agree_in_child(runtime.path.c_str(), geteuid()) == 0);
}

TEST_CASE("XDG_RUNTIME_DIR relative: both ignore it") {
  if (geteuid() != 0) {
    WARN("not root: the /tmp directory of an unused uid cannot be had; case left out");
    return;
  }
  TempDir cwd;
  REQUIRE(chdir(cwd.path.c_str()) == 0);
  CHECK(agree_in_child("relative-runtime", unused_uid()) == 0);
  REQUIRE(chdir("/") == 0);
}

TEST_CASE("effective uid not the real uid: both use the effective one") {
  if (geteuid() != 0) {
    WARN("not root: seteuid to another uid needs root; case left out");
    return;
  }
  // Real uid 0, effective uid another: as in a setuid program. No XDG_RUNTIME_DIR: /tmp/gapwatch-<uid>.
  CHECK(agree_in_child(nullptr, unused_uid()) == 0);
}

TEST_CASE("effective uid not the real uid: the library connects to its effective uid's collector") {
  if (geteuid() != 0) {
    WARN("not root: setresuid to another real uid needs root; case left out");
    return;
  }
  // A collector of uid 0 listens; a process whose real uid is another and whose effective uid is
  // 0 (a setuid program) connects: the collector would accept it, so the library must not refuse
  // the collector (it once checked the peer against its real uid).
  TempDir dir;
  const std::string path = dir.path + "/collector.sock";
  std::string error;
  const int listener = gapwatch::collector::listenOnSocket(path, &error);
  REQUIRE(listener >= 0);
  pid_t pid = fork();
  if (pid == 0) {
    if (setresuid(unused_uid(), 0, 0) != 0) _exit(3);
    gapwatch::OutputSink sink;
    _exit(sink.connect_socket(path, dir.path + "/fallback.gwt") ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ::close(listener);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
