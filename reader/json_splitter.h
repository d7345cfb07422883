// reader/json_splitter.h: walks a JSON text read from a ByteSource in blocks, and cuts it into
// whole values without parsing them.
//
// The Kineto trace reader needs the top-level keys of a trace and the elements of its one huge
// array, traceEvents, one by one, without ever holding the whole file: a simdjson document must be
// in memory whole, so the reader hands simdjson a batch of elements at a time. This splitter finds
// where a value ends by tracking only bracket depth, whether it is inside a string and whether the
// last byte was a backslash; strings are jumped over with memchr. It checks no more than that
// (simdjson checks the values it is given), but it bounds what it is given: a value deeper than
// `max_depth` or one kept value longer than `max_value_bytes` is refused, so no input makes it
// hold or scan without limit.
//
// Bytes stay in one buffer from the earliest one still needed (keepFrom()) to the last read;
// reading more moves those to the front. Views into the buffer are valid until the next call that
// may read (peek(), scanValue()).
#pragma once

#include "reader/byte_source.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace gapwatch {

class JsonSplitter {
 public:
  struct Limits {
    std::size_t block_bytes = std::size_t{4} << 20;      // read at a time
    std::size_t max_value_bytes = std::size_t{64} << 20;  // one kept value
    int max_depth = 64;
  };
  JsonSplitter(ByteSource& source, Limits limits);
  ~JsonSplitter();
  JsonSplitter(const JsonSplitter&) = delete;
  JsonSplitter& operator=(const JsonSplitter&) = delete;

  // Skips whitespace, then returns the next byte without taking it, or -1 at the end of the data
  // (or on the source's error: failure()).
  int peek();
  void take() { ++pos_; }
  // The absolute offset in the text of the next byte.
  uint64_t offset() const { return base_offset_ + pos_; }

  enum class Scan {
    kDone,       // the value is complete
    kCutShort,   // the data ended inside it (in_string() says whether inside a string)
    kTooDeep,    // nested deeper than max_depth
    kTooLong,    // a kept value over max_value_bytes
    kUnexpected  // it starts with a byte no value starts with (offset() is at it)
  };
  // Scans the value at the cursor (after whitespace) and takes it. With `keep`, its bytes stay
  // buffered from its first byte (until the next keepFrom()), and *text views them on kDone.
  Scan scanValue(bool keep, std::string_view* text = nullptr);
  bool endedInString() const { return in_string_; }

  // Bytes before offset `from` may be dropped on the next read. Scanning a value moves this to
  // the value's start when it is later (a kept value) or to the cursor (a skipped one).
  void keepFrom(uint64_t from);
  // A view of buffered bytes [from, to) (offsets); valid until the next read.
  std::string_view view(uint64_t from, uint64_t to) const;
  // Buffered bytes [from, to), writable (the caller may blank a value it will not use).
  std::span<char> bytes(uint64_t from, uint64_t to) {
    return std::span<char>(buffer_.get() + (from - base_offset_), static_cast<std::size_t>(to - from));
  }
  // Values [from, to) as a JSON array, in place, for simdjson without a copy: '[' over the byte
  // before `from` (which must still be kept: keepFrom(from - 1)), ']' over the byte at `to`.
  // At least simdjson's padding (64 bytes) of readable memory follows. unframe() puts the byte at
  // `to` back; it must be called before anything else is read.
  std::string_view frameArray(uint64_t from, uint64_t to);
  void unframe();
  // Bytes readable after the end of a frameArray() view.
  static constexpr std::size_t kPaddingAfterFrame = 64;

  // Why the data ended early: the source's error, or the splitter's own limit.
  const std::string& failure() const;
  // The most bytes buffered at once (to show memory does not follow the file).
  std::size_t maxBuffered() const { return capacity_; }

 private:
  bool readMore();  // false at the end of the data

  ByteSource& source_;
  Limits limits_;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_ = 0;
  std::size_t pos_ = 0, end_ = 0;
  uint64_t base_offset_ = 0;  // offset of buffer_[0]
  uint64_t keep_from_ = 0;
  bool eof_ = false;
  bool in_string_ = false;
  std::string error_;
  char* framed_at_ = nullptr;
  char framed_byte_ = 0;
};

}  // namespace gapwatch
