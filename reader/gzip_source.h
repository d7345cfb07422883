// reader/gzip_source.h: a ByteSource that inflates a gzip stream read from another ByteSource.
//
// Kineto traces are usually written as .json.gz; the trace reader streams them through this so
// that memory is one input block and one output block, whatever the file's size. Concatenated
// gzip members (what `cat a.gz b.gz` makes) are one stream. A stream that ends inside a member is
// refused ("gzip stream is cut short"), and so is anything after the last member that is not
// another member ("gzip stream is corrupt (...)"): failure() says which, in one line.
#pragma once

#include "reader/byte_source.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gapwatch {

class GzipByteSource final : public ByteSource {
 public:
  // `head` are bytes already taken from `compressed` (the sniffed start), inflated first.
  explicit GzipByteSource(ByteSource& compressed, std::span<const uint8_t> head = {});
  ~GzipByteSource() override;
  GzipByteSource(const GzipByteSource&) = delete;
  GzipByteSource& operator=(const GzipByteSource&) = delete;

  std::size_t read(std::span<uint8_t> buffer) override;
  const std::string& failure() const override { return failure_; }

 private:
  bool refill();  // false at the end of the compressed bytes (or on their source's error)

  struct Zlib;
  ByteSource& compressed_;
  std::unique_ptr<Zlib> z_;
  std::vector<uint8_t> head_;
  std::vector<uint8_t> in_;
  bool in_member_ = false;  // inside a member: its end not reached yet
  bool done_ = false;
  std::string failure_;
};

}  // namespace gapwatch
