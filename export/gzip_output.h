// export/gzip_output.h: an std::ostream whose bytes go gzip-compressed to a file, for
// `gapwatch export -o trace.json.gz` (what PyTorch's profiler writes and HTA reads). Streams: a
// fixed buffer is deflated as it fills, nothing else is held.
#pragma once

#include <zlib.h>

#include <cstdio>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace gapwatch::exporter {

class GzipFileBuffer final : public std::streambuf {
 public:
  GzipFileBuffer() = default;
  ~GzipFileBuffer() override;
  GzipFileBuffer(const GzipFileBuffer&) = delete;
  GzipFileBuffer& operator=(const GzipFileBuffer&) = delete;

  // Writes to a descriptor of `fd`'s file (dup'ed: `fd` stays the caller's).
  bool open(int fd);
  // Flushes the compressor and closes the file; false when anything failed on the way.
  bool close();

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  bool deflateInput(int flush);

  std::FILE* file_ = nullptr;
  z_stream zs_{};
  bool ok_ = false;
  std::vector<char> in_ = std::vector<char>(1 << 16);
  std::vector<unsigned char> out_ = std::vector<unsigned char>(1 << 16);
};

class GzipFileStream final : public std::ostream {
 public:
  explicit GzipFileStream(int fd) : std::ostream(&buffer_) {
    if (!buffer_.open(fd)) setstate(std::ios::failbit);
  }
  bool close() { return buffer_.close() && !fail(); }

 private:
  GzipFileBuffer buffer_;
};

}  // namespace gapwatch::exporter
