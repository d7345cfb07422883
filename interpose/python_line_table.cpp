// python_line_table.cpp: co_linetable decoding for 3.10 and 3.11+ (python_line_table.h).
#include "python_line_table.h"

#include <limits.h>

namespace gapwatch {

namespace {

// A corrupt table can carry millions of large deltas; the running line saturates here so that
// its sum stays defined, and anything past INT_MAX is reported as no line anyway.
constexpr int64_t kLineLimit = int64_t{1} << 40;

int64_t saturate(int64_t line) {
  return line > kLineLimit ? kLineLimit : line < -kLineLimit ? -kLineLimit : line;
}

int as_line(int64_t line) {
  return line < 0 || line > INT_MAX ? -1 : static_cast<int>(line);
}

// 3.10 (PEP 626): (address delta in bytes, unsigned; line delta, signed) byte pairs, from address
// 0 and co_firstlineno. A line delta of -128 means "no line" for its range and leaves the running
// line where it was. Deltas too big for one pair are spread over several, the extra ones covering
// no bytes: they move the line without being a range of their own.
int line_at_310(const uint8_t* table, size_t table_len, int firstlineno, int64_t offset) {
  int64_t line = firstlineno;
  int64_t end = 0;
  for (size_t i = 0; i + 1 < table_len; i += 2) {
    end += table[i];
    const int8_t line_delta = static_cast<int8_t>(table[i + 1]);
    const bool has_line = line_delta != -128;
    if (has_line) line += line_delta;
    // Every earlier range ended at or before offset, so the first range ending after it holds it;
    // an empty pair never does.
    if (offset < end) return has_line ? as_line(line) : -1;
  }
  return -1;
}

// The location table's variable-length integers: 6 bits a byte, least significant first, 0x40 set
// on every byte but the last. Stops at the table's end; bits past the 32nd are dropped (a real
// table never has them).
uint32_t read_varint(const uint8_t* table, size_t table_len, size_t* pos) {
  uint32_t value = 0;
  unsigned shift = 0;
  while (*pos < table_len) {
    const uint8_t byte = table[(*pos)++];
    if (shift < 32) value |= static_cast<uint32_t>(byte & 0x3f) << shift;
    shift += 6;
    if (!(byte & 0x40)) break;
  }
  return value;
}

int64_t read_signed_varint(const uint8_t* table, size_t table_len, size_t* pos) {
  const uint32_t value = read_varint(table, table_len, pos);
  return (value & 1) ? -static_cast<int64_t>(value >> 1) : static_cast<int64_t>(value >> 1);
}

enum LocationCode : unsigned {
  kOneLine0 = 10,   // 10, 11, 12: the line moves by 0, 1, 2; then two column bytes
  kNoColumns = 13,  // a signed varint line delta
  kLong = 14,       // a signed varint line delta, then end line, column, end column
  kNoLocation = 15,
};

// 3.11+ (Objects/locations.md): entries, each a first byte with bit 7 set (code in bits 3-6, the
// number of code units it covers minus one in bits 0-2) and the bytes of its form, none of which
// has bit 7 set. Only the line is wanted, so only the line delta is read; the next entry is the
// next byte with bit 7 set, as CPython finds it, so a form of unexpected length cannot shift the
// walk off the entries.
int line_at_311(const uint8_t* table, size_t table_len, int firstlineno, int64_t offset) {
  int64_t line = firstlineno;
  int64_t end = 0;
  size_t entry = 0;
  while (entry < table_len) {
    const uint8_t first = table[entry];
    const unsigned code = (first >> 3) & 0xf;
    end += ((first & 7) + 1) * 2;  // code units of 2 bytes
    size_t pos = entry + 1;
    if (code == kLong || code == kNoColumns) {
      line = saturate(line + read_signed_varint(table, table_len, &pos));
    } else if (code >= kOneLine0 && code < kNoColumns) {
      line += code - kOneLine0;
    }  // the short forms (0-9) keep the line; kNoLocation keeps it too, for the next entry
    if (offset < end) return code == kNoLocation ? -1 : as_line(line);
    do {
      ++entry;
    } while (entry < table_len && !(table[entry] & 0x80));
  }
  return -1;
}

}  // namespace

int python_line_at(int minor, const uint8_t* table, size_t table_len, int firstlineno, int byte_offset) {
  if (table == nullptr || byte_offset < 0) return -1;
  if (minor == 10) return line_at_310(table, table_len, firstlineno, byte_offset);
  if (minor > 10) return line_at_311(table, table_len, firstlineno, byte_offset);
  return -1;
}

}  // namespace gapwatch
