// reader/gzip_source.cpp: see gzip_source.h.
#include "reader/gzip_source.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace gapwatch {

namespace {
constexpr std::size_t kInputBlock = 1 << 18;
}

struct GzipByteSource::Zlib {
  z_stream z{};
  bool started = false;
};

GzipByteSource::GzipByteSource(ByteSource& compressed, std::span<const uint8_t> head)
    : compressed_(compressed), z_(std::make_unique<Zlib>()), head_(head.begin(), head.end()) {
  // 16 + MAX_WBITS: a gzip header and trailer, not raw deflate or zlib.
  if (inflateInit2(&z_->z, 16 + MAX_WBITS) != Z_OK) {
    failure_ = "gzip: cannot start zlib";
    done_ = true;
    return;
  }
  z_->started = true;
}

GzipByteSource::~GzipByteSource() {
  if (z_->started) inflateEnd(&z_->z);
}

bool GzipByteSource::refill() {
  if (!head_.empty()) {
    in_.swap(head_);
    head_.clear();
    head_.shrink_to_fit();
  } else {
    in_.resize(kInputBlock);
    const std::size_t n = compressed_.read(in_);
    in_.resize(n);
    if (n == 0) return false;
  }
  z_->z.next_in = in_.data();
  z_->z.avail_in = static_cast<uInt>(in_.size());
  return true;
}

std::size_t GzipByteSource::read(std::span<uint8_t> buffer) {
  if (done_ || buffer.empty()) return 0;
  z_stream& z = z_->z;
  z.next_out = buffer.data();
  z.avail_out = static_cast<uInt>(std::min<std::size_t>(buffer.size(), UINT32_MAX));
  while (z.avail_out > 0) {
    if (z.avail_in == 0 && !refill()) {
      if (!compressed_.failure().empty()) failure_ = compressed_.failure();
      else if (in_member_) failure_ = "gzip stream is cut short";
      done_ = true;
      break;
    }
    if (!in_member_) {
      // A member follows the last one (or this is the first).
      if (inflateReset(&z) != Z_OK) {
        failure_ = "gzip: cannot restart zlib";
        done_ = true;
        break;
      }
      in_member_ = true;
    }
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      in_member_ = false;
      continue;
    }
    if (rc == Z_OK || (rc == Z_BUF_ERROR && z.avail_in == 0)) continue;
    failure_ = std::string("gzip stream is corrupt (") + (z.msg != nullptr ? z.msg : "zlib error") + ")";
    done_ = true;
    break;
  }
  // After an error the bytes inflated so far still go out; the next read returns 0 and failure().
  return static_cast<std::size_t>(z.next_out - buffer.data());
}

}  // namespace gapwatch
