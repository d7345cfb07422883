// tests/fuzz/fuzz_check.h: what the fuzz targets share.
//
// FUZZ_CHECK stops the run (abort, which libFuzzer reports as a crash and saves the input) when
// one of a target's own invariants fails: a crash is not the only bug a target looks for. The
// targets also build with g++ in the normal tree, where replay_main.cpp runs them on stored inputs.
#pragma once

#include <gapwatch/recording_format.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#define FUZZ_CHECK(condition, what)                                                       \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s (%s)\n", __FILE__, __LINE__,     \
                   #condition, what);                                                     \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

namespace gapwatch::fuzz {

// The frames of an input: a whole .gwt file (the seeds are the golden recordings) loses its
// 12-byte header; anything else is taken as frames from its first byte. `offset` becomes the
// stream offset of the first frame byte.
inline std::span<const uint8_t> framesOf(std::span<const uint8_t> input, uint64_t& offset) {
  if (input.size() >= kFileHeaderBytes && std::memcmp(input.data(), kFileMagic, sizeof(kFileMagic)) == 0) {
    offset = kFileHeaderBytes;
    return input.subspan(kFileHeaderBytes);
  }
  offset = 0;
  return input;
}

// A small deterministic generator (for chunk sizes), seeded from the input so a run replays.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

inline uint64_t seedOf(std::span<const uint8_t> input) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (uint8_t b : input) h = (h ^ b) * 1099511628211ull;
  return h;
}

}  // namespace gapwatch::fuzz
