// reader/json_text.h: JSON's whitespace (RFC 8259: space, tab, line feed, carriage return), the
// one definition for the readers that look at raw JSON text themselves: the element splitter, the
// Kineto pre-filter and top-level walker, and the number and record-name parsers, which get raw
// tokens from simdjson that may carry it.
#pragma once

#include <string_view>

namespace gapwatch {

constexpr bool isJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The text without leading or trailing JSON whitespace.
constexpr std::string_view trimJsonSpace(std::string_view s) {
  while (!s.empty() && isJsonSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isJsonSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace gapwatch
