// reader/kineto_text.h: how the Kineto reader's parts name a place in a trace and quote its text
// in a refusal ("traceEvents[12].args.stream is not a number (\"0xq1\")"), and GW_TRY, which
// returns such a refusal up. For the reader's own files (kineto_event_fields.cpp,
// kineto_top_level.cpp, kineto_trace.cpp), not for its users.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gapwatch::kineto {

inline std::string errorText(simdjson::error_code e) { return simdjson::error_message(e); }

// "traceEvents[12].args.stream": error messages only, so built only for them.
inline std::string at(uint64_t index, std::string_view field = {}) {
  std::string s = "traceEvents[" + std::to_string(index) + "]";
  if (!field.empty()) s.append(".").append(field);
  return s;
}

inline std::string byteText(uint64_t offset) { return "byte " + std::to_string(offset); }

// Text from the trace as a message may quote it: at most `max` bytes, anything but printable
// ASCII as '?', so that a message stays one readable line whatever the bytes were.
inline std::string quoted(std::string_view text, std::size_t max = 32) {
  std::string out(text.substr(0, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  if (text.size() > max) out += "...";
  return out;
}

inline std::optional<std::string> malformed(simdjson::error_code e, const std::string& where) {
  return "malformed JSON in " + where + " (" + errorText(e) + ")";
}

}  // namespace gapwatch::kineto

// Returns the refusal an expression gives, if it gives one.
#define GW_TRY(expr)                                \
  do {                                              \
    if (auto gw_error_ = (expr)) return gw_error_;  \
  } while (false)
