// export/gzip_output.cpp: see gzip_output.h.
#include "export/gzip_output.h"

#include <unistd.h>

namespace gapwatch::exporter {

GzipFileBuffer::~GzipFileBuffer() { close(); }

bool GzipFileBuffer::open(int fd) {
  // A descriptor of its own: the caller keeps `fd` (gapwatch/output_file.h's temporary file).
  const int own = ::dup(fd);
  file_ = own >= 0 ? ::fdopen(own, "wb") : nullptr;
  if (!file_) {
    if (own >= 0) ::close(own);
    return false;
  }
  // windowBits 15 + 16: a gzip header and trailer rather than zlib's.
  ok_ = deflateInit2(&zs_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  setp(in_.data(), in_.data() + in_.size());
  return ok_;
}

bool GzipFileBuffer::deflateInput(int flush) {
  zs_.next_in = reinterpret_cast<Bytef*>(pbase());
  zs_.avail_in = static_cast<uInt>(pptr() - pbase());
  int result = Z_OK;
  do {
    zs_.next_out = out_.data();
    zs_.avail_out = static_cast<uInt>(out_.size());
    result = deflate(&zs_, flush);
    if (result == Z_STREAM_ERROR) return ok_ = false;
    const std::size_t produced = out_.size() - zs_.avail_out;
    if (produced && std::fwrite(out_.data(), 1, produced, file_) != produced) return ok_ = false;
  } while (zs_.avail_out == 0 || (flush == Z_FINISH && result != Z_STREAM_END));
  setp(in_.data(), in_.data() + in_.size());
  return ok_;
}

GzipFileBuffer::int_type GzipFileBuffer::overflow(int_type c) {
  if (!ok_ || !deflateInput(Z_NO_FLUSH)) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

// A flush of the ostream only empties the buffer into the compressor: a real deflate flush would
// cost compression for nothing.
int GzipFileBuffer::sync() { return ok_ && deflateInput(Z_NO_FLUSH) ? 0 : -1; }

bool GzipFileBuffer::close() {
  if (!file_) return ok_;
  if (ok_) deflateInput(Z_FINISH);
  deflateEnd(&zs_);
  if (std::fclose(file_) != 0) ok_ = false;
  file_ = nullptr;
  return ok_;
}

}  // namespace gapwatch::exporter
