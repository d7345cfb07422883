// tools/duration_text.cpp: see duration_text.h.
#include "tools/duration_text.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace gapwatch::cli {

std::optional<uint64_t> parseDuration(std::string_view text) {
  std::size_t digits = 0;
  bool dot = false;
  while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || (text[digits] == '.' && !dot))) {
    dot = dot || text[digits] == '.';
    ++digits;
  }
  const std::string number(text.substr(0, digits));
  if (number.empty() || number == ".") return std::nullopt;
  std::string_view unit = text.substr(digits);
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us" || unit == "\xc2\xb5s") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else return std::nullopt;
  const double ns = std::strtod(number.c_str(), nullptr) * scale;
  if (!std::isfinite(ns) || ns >= 9.0e18) return std::nullopt;
  return static_cast<uint64_t>(std::llround(ns));
}

}  // namespace gapwatch::cli
