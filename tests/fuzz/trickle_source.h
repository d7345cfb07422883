// tests/fuzz/trickle_source.h: a ByteSource that hands its bytes over a few at a time, for the
// fuzz targets of readers that must give the same result at every read boundary.
#pragma once

#include "fuzz_check.h"
#include "reader/byte_source.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

namespace gapwatch::fuzz {

// Hands the input over a few bytes at a time (1 to 7, or to 4096, by the generator), so that
// every read boundary of a reader is tried.
class TrickleSource final : public gapwatch::ByteSource {
 public:
  TrickleSource(std::span<const uint8_t> bytes, uint64_t seed) : bytes_(bytes), rng_(seed) {}
  std::size_t read(std::span<uint8_t> buffer) override {
    const uint64_t r = rng_.next();
    const std::size_t limit = (r & 1) ? 7 : 4096;
    const std::size_t n = std::min({buffer.size(), bytes_.size() - position_, 1 + static_cast<std::size_t>((r >> 8) % limit)});
    std::copy_n(bytes_.data() + position_, n, buffer.data());
    position_ += n;
    return n;
  }
  const std::string& failure() const override { return failure_; }

 private:
  std::span<const uint8_t> bytes_;
  std::size_t position_ = 0;
  SplitMix rng_;
  std::string failure_;
};

}  // namespace gapwatch::fuzz
