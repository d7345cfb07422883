// reader/kineto_numbers.cpp: see kineto_numbers.h.
#include "reader/kineto_numbers.h"

#include "reader/json_text.h"

namespace gapwatch {

std::string_view trimRight(std::string_view s) {
  while (!s.empty() && isJsonSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool microsToNs(std::string_view text, uint64_t& ns) {
  text = trimRight(text);
  std::size_t i = 0;
  uint64_t whole = 0;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (whole > (UINT64_MAX / 1000 - 9) / 10) return false;
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  uint64_t frac = 0;
  int frac_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (frac_digits < 3) {
        frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
        ++frac_digits;
      }
      ++i;
    }
  }
  if (i != text.size()) return false;
  while (frac_digits < 3) frac *= 10, ++frac_digits;
  ns = whole * 1000 + frac;
  return true;
}

bool parseInt(std::string_view text, int64_t& value) {
  text = trimRight(text);
  bool negative = false;
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') negative = true, ++i;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
  // INT64_MAX, or the magnitude of INT64_MIN.
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const auto digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (limit - digit) / 10) return false;
    v = v * 10 + digit;
    ++i;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] == '0') ++i;
  }
  if (i != text.size()) return false;
  value = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

bool parsePointer(std::string_view text, uint64_t& value) {
  if (text.size() < 3 || text.size() > 18 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return false;
  uint64_t v = 0;
  for (const char c : text.substr(2)) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return false;
    }
    v = v << 4 | digit;
  }
  value = v;
  return true;
}

}  // namespace gapwatch
