// reader/json_splitter.cpp: see json_splitter.h.
#include "reader/json_splitter.h"

#include "reader/json_text.h"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gapwatch {
namespace {


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
// The buffer starts this small (a small trace costs little) and reads are never shorter.
constexpr std::size_t kMinReadBytes = std::size_t{64} << 10;
// Past its capacity the buffer has room for frameArray()'s ']' and simdjson's padding.
constexpr std::size_t kSlackBytes = 1 + 64;
// The first buffer holds a whole parse batch (about 1 MiB) and its read: a small trace is read
// without the buffer growing (each growth copies what is kept into fresh, faulting pages).
constexpr std::size_t kFirstBufferBytes = std::size_t{2} << 20;

#if defined(__SSE2__)
// SSE2 is part of x86-64 itself, so this needs no run-time check. For 64 bytes, one bit per byte:
// which are a quote, a backslash, an opening or a closing bracket.
struct BlockMasks {
  uint64_t quote, backslash, open, close;
};

BlockMasks masksOf(const char* p) {
  BlockMasks m{0, 0, 0, 0};
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i brace_open = _mm_set1_epi8('{'), bracket_open = _mm_set1_epi8('[');
  const __m128i brace_close = _mm_set1_epi8('}'), bracket_close = _mm_set1_epi8(']');
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const auto bits = [&](__m128i x) { return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(x))) << (16 * i); };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote));
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
    m.open |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, brace_open), _mm_cmpeq_epi8(v, bracket_open)));
    m.close |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, brace_close), _mm_cmpeq_epi8(v, bracket_close)));
  }
  return m;
}

// Bit i set when an odd number of bits at or below i are set: with quote bits, the bytes from an
// opening quote up to (not including) its closing one.
uint64_t prefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}
#endif

}  // namespace

JsonSplitter::JsonSplitter(ByteSource& source, Limits limits) : source_(source), limits_(limits) {}

JsonSplitter::~JsonSplitter() = default;

const std::string& JsonSplitter::failure() const { return error_.empty() ? source_.failure() : error_; }

bool JsonSplitter::readMore() {
  if (eof_) return false;
  // A read goes into the free space at the end; only when that is short are the bytes nobody needs
  // any more dropped (one move per buffer's worth), and only then does the buffer grow (doubling,
  // so that sources returning a few bytes a read cost no copy per read).
  const std::size_t min_read = std::min<std::size_t>(limits_.block_bytes, kMinReadBytes);
  if (capacity_ - end_ < min_read) {
    const uint64_t keep = std::min<uint64_t>(std::max(keep_from_, base_offset_), offset());
    const std::size_t drop = static_cast<std::size_t>(keep - base_offset_);
    if (drop > 0) {
      std::memmove(buffer_.get(), buffer_.get() + drop, end_ - drop);
      end_ -= drop;
      pos_ -= drop;
      base_offset_ += drop;
    }
    // Grown also when what is kept fills a quarter of it, so that moves copy at most that much.
    if (capacity_ - end_ < min_read || end_ > capacity_ / 4) {
      const std::size_t capacity = std::max({capacity_ * 2, end_ + min_read, kFirstBufferBytes});
      std::unique_ptr<char[]> grown(new char[capacity + kSlackBytes]);
      if (end_ > 0) std::memcpy(grown.get(), buffer_.get(), end_);
      buffer_ = std::move(grown);
      capacity_ = capacity;
    }
  }
  const std::size_t room = std::min(capacity_ - end_, limits_.block_bytes);
  const std::size_t n = source_.read(std::span<uint8_t>(reinterpret_cast<uint8_t*>(buffer_.get() + end_), room));
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += n;
  return true;
}

int JsonSplitter::peek() {
  for (;;) {
    while (pos_ < end_ && isJsonSpace(buffer_[pos_])) ++pos_;
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
      while (p < end && !done) {
        const char* limit = end;
#if defined(__SSE2__)
        // 64 bytes at a time while there is no backslash in them (an escape is rare in a trace:
        // such a block takes the byte loop below): strings from the quotes' running parity, then
        // only the brackets outside strings are looked at, one by one. A string value at depth 0
        // (it ends at its closing quote) is left to the byte loop.
        if (!escaped && depth > 0 && end - p >= 64) {
          const BlockMasks m = masksOf(p);
          if (m.backslash == 0) {
            const uint64_t inside = prefixXor(m.quote) ^ (in_string_ ? ~uint64_t{0} : 0);
            uint64_t brackets = (m.open | m.close) & ~inside;
            while (brackets != 0) {
              const int bit = __builtin_ctzll(brackets);
              brackets &= brackets - 1;
              if ((m.open >> bit) & 1) {
                if (++depth > max_depth) {
                  pos_ = static_cast<std::size_t>(p - base) + static_cast<std::size_t>(bit);
                  return Scan::kTooDeep;
                }
              } else if (--depth == 0) {
                p += bit + 1;
                in_string_ = false;
                done = true;
                break;
              }
            }
            if (done) break;
            in_string_ = (inside >> 63) != 0;
            p += 64;
            continue;
          }
          limit = p + 64;
        }
#endif
        while (p < limit) {
          if (in_string_) {
            if (escaped) {
              escaped = false;
              ++p;
              continue;
            }
            p = findQuoteOrBackslash(p, limit);
            if (p == limit) break;
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

std::string_view JsonSplitter::frameArray(uint64_t from, uint64_t to) {
  char* const first = buffer_.get() + (from - base_offset_) - 1;
  char* const last = buffer_.get() + (to - base_offset_);
  framed_at_ = last;
  framed_byte_ = *last;  // within the slack when `to` is the end of what was read
  *first = '[';
  *last = ']';
  return std::string_view(first, static_cast<std::size_t>(last - first) + 1);
}

void JsonSplitter::unframe() {
  if (framed_at_ != nullptr) *framed_at_ = framed_byte_;
  framed_at_ = nullptr;
}

std::string_view JsonSplitter::view(uint64_t from, uint64_t to) const {
  return std::string_view(buffer_.get() + (from - base_offset_), static_cast<std::size_t>(to - from));
}

}  // namespace gapwatch
