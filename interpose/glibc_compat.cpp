// Keeps libgapwatch.so loadable on glibc 2.35 (Ubuntu 22.04, the base of most CUDA containers).
//
// The library links libstdc++ statically (ARCHITECTURE.md section 4). GCC 12's std::random_device
// calls arc4random whenever the glibc it was built against has it (2.36), and the archive pulls
// random.o in through its exception classes (std::system_error of std::thread and std::mutex ->
// the copy-on-write string instantiations -> std::random_device::_M_init), so the library would
// need GLIBC_2.36 for a function it never calls. A glibc that lacks a version the library needs is
// a fatal error of the dynamic loader: the user's job would not start. This definition satisfies
// the reference inside the library (libgapwatch.map keeps it local), so no arc4random is imported.
// tests/interpose/library_rules_test.py checks the newest glibc version the library needs.

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

extern "C" uint32_t arc4random(void) noexcept {
  uint32_t value = 0;
  // getrandom (glibc 2.25) blocks only until the kernel's pool is first initialised, as
  // arc4random does; a short read of 4 bytes does not happen below 256.
  while (getrandom(&value, sizeof value, 0) < 0 && errno == EINTR) {
  }
  return value;
}
