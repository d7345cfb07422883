// tools/text_format.cpp: see text_format.h.
#include "tools/text_format.h"

#include <cmath>
#include <cstdio>

namespace gapwatch::cli {
namespace {

// `value` (in some unit) with three significant digits and the unit's name.
std::string threeDigits(double value, const char* unit) {
  char text[64];
  if (value < 9.995) {
    std::snprintf(text, sizeof text, "%.2f %s", value, unit);
  } else if (value < 99.95) {
    std::snprintf(text, sizeof text, "%.1f %s", value, unit);
  } else {
    std::snprintf(text, sizeof text, "%.0f %s", value, unit);
  }
  return text;
}

}  // namespace

std::string formatDuration(uint64_t ns) {
  constexpr uint64_t kUs = 1'000;
  constexpr uint64_t kMs = 1'000'000;
  constexpr uint64_t kS = 1'000'000'000;
  // Each unit's range ends where three digits would round up to 1000.
  if (ns < kUs) return std::to_string(ns) + " ns";
  if (ns < 999'500) return threeDigits(static_cast<double>(ns) / kUs, "us");
  if (ns < 999'500'000) return threeDigits(static_cast<double>(ns) / kMs, "ms");
  if (ns < 99'950'000'000) return threeDigits(static_cast<double>(ns) / kS, "s");
  const uint64_t seconds = (ns + kS / 2) / kS;
  char text[64];
  if (seconds < 3600) {
    std::snprintf(text, sizeof text, "%llu min %02llu s",
                  static_cast<unsigned long long>(seconds / 60),
                  static_cast<unsigned long long>(seconds % 60));
  } else {
    std::snprintf(text, sizeof text, "%llu h %02llu min",
                  static_cast<unsigned long long>(seconds / 3600),
                  static_cast<unsigned long long>(seconds % 3600 / 60));
  }
  return text;
}

std::string formatExactMicros(uint64_t ns) {
  char text[48];
  std::snprintf(text, sizeof text, "%llu.%03lluus", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return text;
}

std::string formatRelativeSeconds(uint64_t ns, uint64_t reference_ns) {
  const bool negative = ns < reference_ns;
  const uint64_t magnitude = negative ? reference_ns - ns : ns - reference_ns;
  char text[48];
  std::snprintf(text, sizeof text, "%c%llu.%09llu", negative ? '-' : '+',
                static_cast<unsigned long long>(magnitude / 1'000'000'000),
                static_cast<unsigned long long>(magnitude % 1'000'000'000));
  return text;
}

std::string formatCount(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string formatPercent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", fraction * 100.0);
  return text;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char escape[8];
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // C1 controls (U+0080..U+009F) are the UTF-8 sequences C2 80..C2 9F; some terminals obey them.
    const bool c1 = byte == 0xc2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9f;
    if (c1) {
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      out += escape;
      ++i;
    } else if (byte == '\\') {
      out += "\\\\";
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      std::snprintf(escape, sizeof escape, "\\x%02x", byte);
      out += escape;
    } else {
      out += static_cast<char>(byte);
    }
  }
  return out;
}

std::string quoteText(std::string_view text) {
  std::string out = "\"";
  for (char c : printable(text)) {
    if (c == '"') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace gapwatch::cli
