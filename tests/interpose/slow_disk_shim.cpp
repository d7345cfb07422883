// A disk that syncs slowly, for the collector under test (fault_injection_test.py): preloaded
// into `gapwatch collector`, it makes every fsync and fdatasync take GAPWATCH_TEST_SYNC_MS
// milliseconds more, as they do on a network file system or a busy disk. The collector syncs each
// process's report (docs/collector.md, "Live analysis and reports"); with many processes ending at
// once, those syncs must not keep a process waiting for the receipt of its Goodbye.
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

namespace {

void sleep_for_sync() {
  static const long ms = [] {
    const char* v = getenv("GAPWATCH_TEST_SYNC_MS");
    return v ? atol(v) : 0L;
  }();
  if (ms <= 0) return;
  timespec t{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" int fsync(int fd) {
  static auto next = real<int (*)(int)>("fsync");
  sleep_for_sync();
  return next(fd);
}

extern "C" int fdatasync(int fd) {
  static auto next = real<int (*)(int)>("fdatasync");
  sleep_for_sync();
  return next(fd);
}
