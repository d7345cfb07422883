// reader/json_splitter.cpp: see json_splitter.h.
#include "reader/json_splitter.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace gapwatch {
namespace {

bool isSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// What a byte outside a string does to the scan: nothing, opens a string, opens or closes a level.
enum : uint8_t { kPlain = 0, kQuote = 1, kOpen = 2, kClose = 3 };
constexpr std::array<uint8_t, 256> kClass = [] {
  std::array<uint8_t, 256> t{};
  t['"'] = kQuote;
  t['{'] = kOpen;
  t['['] = kOpen;
  t['}'] = kClose;
  t[']'] = kClose;
  return t;
}();

// The bytes a number or literal (true, false, null) may hold.
bool isScalarByte(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' ||
         c == '.';
}

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;
// A mask with the high bit of each byte of `word` equal to `byte` set; exact for the lowest match,
// which is the only one used.
uint64_t bytesEqual(uint64_t word, uint8_t byte) {
  const uint64_t x = word ^ (kOnes * byte);
  return (x - kOnes) & ~x & kHighs;
}

// The first '"' or '\\' in [p, end), or end. Eight bytes at a time: kernel names run to hundreds.
const char* findQuoteOrBackslash(const char* p, const char* end) {
  while (end - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    const uint64_t hits = bytesEqual(word, '"') | bytesEqual(word, '\\');
    if (hits != 0) return p + (__builtin_ctzll(hits) >> 3);
    p += 8;
  }
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
}

constexpr std::size_t kMaxScalarBytes = 4096;

}  // namespace

JsonSplitter::JsonSplitter(ByteSource& source, Limits limits) : source_(source), limits_(limits) {}

JsonSplitter::~JsonSplitter() = default;

const std::string& JsonSplitter::failure() const { return error_.empty() ? source_.failure() : error_; }

bool JsonSplitter::readMore() {
  if (eof_) return false;
  // Drop what nobody needs any more, then make room for a block.
  const uint64_t keep = std::min<uint64_t>(std::max(keep_from_, base_offset_), offset());
  const std::size_t drop = static_cast<std::size_t>(keep - base_offset_);
  if (drop > 0) {
    std::memmove(buffer_.get(), buffer_.get() + drop, end_ - drop);
    end_ -= drop;
    pos_ -= drop;
    base_offset_ += drop;
  }
  if (capacity_ - end_ < limits_.block_bytes) {
    const std::size_t capacity = end_ + limits_.block_bytes;
    std::unique_ptr<char[]> grown(new char[capacity]);
    if (end_ > 0) std::memcpy(grown.get(), buffer_.get(), end_);
    buffer_ = std::move(grown);
    capacity_ = capacity;
  }
  const std::size_t n = source_.read(std::span<uint8_t>(reinterpret_cast<uint8_t*>(buffer_.get() + end_), limits_.block_bytes));
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += n;
  return true;
}

int JsonSplitter::peek() {
  for (;;) {
    while (pos_ < end_ && isSpace(static_cast<uint8_t>(buffer_[pos_]))) ++pos_;
    if (pos_ < end_) return static_cast<uint8_t>(buffer_[pos_]);
    // Whitespace after kept bytes is kept with them: bound it like a value.
    if (offset() - std::max(keep_from_, base_offset_) > limits_.max_value_bytes + limits_.block_bytes) {
      error_ = "more than " + std::to_string(limits_.max_value_bytes >> 20) + " MiB of whitespace at byte " +
               std::to_string(offset());
      eof_ = true;
      return -1;
    }
    if (!readMore()) return -1;
  }
}

JsonSplitter::Scan JsonSplitter::scanValue(bool keep, std::string_view* text) {
  in_string_ = false;
  const int first = peek();
  if (first < 0) return Scan::kCutShort;
  const uint64_t start = offset();
  // A kept value stays from its start, or from where the caller asked (keepFrom()) if earlier.
  if (!keep || keep_from_ > start) keep_from_ = start;
  int depth = 0;
  bool escaped = false;
  bool scalar = false;
  if (first == '{' || first == '[') {
    depth = 1;
    ++pos_;
  } else if (first == '"') {
    in_string_ = true;
    ++pos_;
  } else if (isScalarByte(static_cast<uint8_t>(first))) {
    scalar = true;
  } else {
    return Scan::kUnexpected;
  }
  const int max_depth = limits_.max_depth;
  for (;;) {
    bool done = false;
    const char* const base = buffer_.get();
    const char* p = base + pos_;
    const char* const end = base + end_;
    if (scalar) {
      while (p < end && isScalarByte(static_cast<uint8_t>(*p))) ++p;
      done = p < end;
    } else {
      while (p < end) {
        if (in_string_) {
          if (escaped) {
            escaped = false;
            ++p;
            continue;
          }
          p = findQuoteOrBackslash(p, end);
          if (p == end) break;
          if (*p++ == '\\') {
            escaped = true;
            continue;
          }
          in_string_ = false;
          if (depth == 0) {
            done = true;
            break;
          }
          continue;
        }
        const uint8_t cls = kClass[static_cast<uint8_t>(*p++)];
        if (cls == kPlain) continue;
        if (cls == kQuote) {
          in_string_ = true;
        } else if (cls == kOpen) {
          if (++depth > max_depth) {
            pos_ = static_cast<std::size_t>(p - base) - 1;
            return Scan::kTooDeep;
          }
        } else if (--depth == 0) {
          done = true;
          break;
        }
      }
    }
    pos_ = static_cast<std::size_t>(p - base);
    const uint64_t length = offset() - start;
    if (scalar ? length > kMaxScalarBytes : keep && length > limits_.max_value_bytes) return Scan::kTooLong;
    if (done) break;
    // Scalars are checked whole below, so their bytes stay even when not kept.
    if (!keep && !scalar) keep_from_ = offset();
    if (!readMore()) {
      if (!scalar || !failure().empty()) return Scan::kCutShort;
      break;  // a number can end the data
    }
  }
  if (text != nullptr) *text = view(start, offset());
  return Scan::kDone;
}

void JsonSplitter::keepFrom(uint64_t from) { keep_from_ = from; }

std::string_view JsonSplitter::view(uint64_t from, uint64_t to) const {
  return std::string_view(buffer_.get() + (from - base_offset_), static_cast<std::size_t>(to - from));
}

}  // namespace gapwatch
