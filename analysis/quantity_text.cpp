// analysis/quantity_text.cpp: see quantity_text.h.
#include "analysis/quantity_text.h"

#include <cmath>
#include <cstdio>

namespace gapwatch {
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
    std::snprintf(text, sizeof text, "%llu min %02llu s", static_cast<unsigned long long>(seconds / 60),
                  static_cast<unsigned long long>(seconds % 60));
  } else {
    std::snprintf(text, sizeof text, "%llu h %02llu min", static_cast<unsigned long long>(seconds / 3600),
                  static_cast<unsigned long long>(seconds % 3600 / 60));
  }
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

std::string formatWholePercent(double fraction) {
  if (fraction > 0 && fraction < 0.005) return "<1%";
  long percent = std::lround(fraction * 100.0);
  if (percent >= 100 && fraction < 1.0) percent = 99;
  return std::to_string(percent) + "%";
}

}  // namespace gapwatch
