// <gapwatch/utf8_text.h>: names and paths from outside (thread names, kernel names, NVTX ranges,
// file names) made valid UTF-8 wherever gapwatch writes text that a strict reader parses: the
// Chrome and Kineto exports' JSON, the HTML report, the Python API's str. None of those names need
// be UTF-8 (Linux takes any bytes but NUL and '/' in a path, any 15 in a thread name), and a
// strict JSON parser or Python's str refuses the whole document or table for one bad byte. The
// one rule: every byte that does not begin a valid sequence (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF) becomes U+FFFD, and the rest of the text is kept.
// nlohmann::json's dump with error_handler_t::replace (gapwatch/json_text.h, the JSON reports)
// keeps the same rule. Header-only, libc and the standard library: the injected library may use it.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace gapwatch {

// The length of the valid UTF-8 sequence that begins at text[i], or 0 when none does.
inline std::size_t utf8SequenceAt(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    const unsigned c = at(k);
    return i + k < text.size() && c >= lo && c <= hi;
  };
  const unsigned b = at(0);
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) return cont(1) ? 2 : 0;
  if (b == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if (b == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;  // not a surrogate
  if (b >= 0xe1 && b <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (b == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b >= 0xf1 && b <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;  // up to U+10FFFF
  return 0;
}

inline bool isValidUtf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8SequenceAt(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// The text with each byte that begins no valid sequence as U+FFFD.
inline std::string validUtf8(std::string_view text) {
  if (isValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8SequenceAt(text, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

// Appends `text` as a JSON string: in double quotes, with the quote, the backslash and every
// control character escaped, and each invalid byte as U+FFFD.
inline void appendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8SequenceAt(text, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out.append(text, i, n);
        }
    }
    i += n;
  }
  out.push_back('"');
}

}  // namespace gapwatch
