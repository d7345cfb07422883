// tools/text_format.cpp: see text_format.h.
#include "tools/text_format.h"

#include <gapwatch/utf8_text.h>

#include <algorithm>

#include <cstdio>

namespace gapwatch::cli {

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
    } else if (byte < 0x20 || byte == 0x7f || utf8SequenceAt(text, i) == 0) {
      // A control character, or a byte that begins no valid UTF-8 sequence (a name need not be
      // UTF-8): its value, so that what is printed is valid UTF-8 and still says which bytes.
      std::snprintf(escape, sizeof escape, "\\x%02x", byte);
      out += escape;
    } else if (const std::size_t n = utf8SequenceAt(text, i); n > 1) {
      out.append(text.substr(i, n));
      i += n - 1;
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

std::string nearestWord(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = word.size() <= 3 ? 1 : 2;
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    // Levenshtein distance, one row at a time.
    std::vector<std::size_t> row(candidate.size() + 1);
    for (std::size_t j = 0; j <= candidate.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= candidate.size(); ++j) {
        const std::size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (word[i - 1] == candidate[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    if (row[candidate.size()] < best_distance) best_distance = row[candidate.size()], best = candidate;
  }
  return best;
}

}  // namespace gapwatch::cli
